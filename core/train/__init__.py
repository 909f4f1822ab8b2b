"""Training: `TrainConfig`, the methods (one module each, one table), the model and its checkpoint, the
frozen-feature cache, the loop, metrics and prediction. Reads `core.data` and the backbone; knows
nothing of runs, registries or processes."""

from core.train.checkpoint import CheckpointError, build_model, has_checkpoint, load_model, save_model
from core.train.config import TrainConfig
from core.train.inputs import bucketed_batches, load_data, pad_batch
from core.train.loop import Cancelled, Diverged, Outputs, train
from core.train.methods import METHODS, Method, adamw, method_for, run_label, validate
from core.train.model import StudioModel
from core.train.predict import Prediction, classify
from core.train.sweep import DEFAULT_FRACTIONS, DEFAULT_METHODS, DEFAULT_SEEDS, grid, parse_numbers

__all__ = [
    "CheckpointError", "build_model", "has_checkpoint", "load_model", "save_model", "TrainConfig",
    "bucketed_batches", "load_data", "pad_batch", "Cancelled", "Diverged", "Outputs", "train", "METHODS", "Method",
    "adamw", "method_for", "run_label", "validate", "StudioModel", "Prediction", "classify", "grid", "parse_numbers",
    "DEFAULT_FRACTIONS", "DEFAULT_METHODS", "DEFAULT_SEEDS",
]
