"""Training: `TrainConfig`, the methods (one module each, one table), the checkpoint store and loader,
the frozen-feature cache, the run driver, metrics and prediction. Reads `core.data` and the backbone;
knows nothing of runs, registries or processes."""

from core.train.checkpoint import load_predictor
from core.train.config import TrainConfig
from core.train.inputs import bucketed_batches, load_data, pad_batch, split_pool
from core.train.loop import Outputs, train
from core.train.methods import (METHODS, Cancelled, Diverged, Method, Predictor, StepMethod, method_for, run_label,
                                validate)
from core.train.model import StudioModel
from core.train.optim import adamw
from core.train.explain import Attribution, explain, unsure
from core.train.predict import Prediction, classify, classify_frame
from core.train.store import CheckpointError, has_checkpoint
from core.train.sweep import DEFAULT_FRACTIONS, DEFAULT_METHODS, DEFAULT_SEEDS, grid, grid_key, parse_numbers

__all__ = [
    "load_predictor", "TrainConfig", "bucketed_batches", "load_data", "pad_batch", "split_pool", "Outputs", "train",
    "METHODS", "Cancelled", "Diverged", "Method", "Predictor", "StepMethod", "method_for", "run_label", "validate",
    "StudioModel", "adamw", "Prediction", "classify", "classify_frame", "Attribution", "explain", "unsure", "CheckpointError", "has_checkpoint", "grid", "grid_key", "parse_numbers",
    "DEFAULT_FRACTIONS", "DEFAULT_METHODS", "DEFAULT_SEEDS",
]
