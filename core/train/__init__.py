"""Training: `TrainConfig`, the methods (a spec without torch and a training module each, one table), the
checkpoint store and loader, the frozen-feature cache, the run driver, metrics and prediction. Reads
`core.data` and the backbone; knows nothing of runs, registries or processes."""

from core.lazy import exports

# name -> the module that defines it: imported on first use, so that `import core.train.config` (the CLI's
# parser) does not pay for torch and transformers
_EXPORTS = {
    "load_predictor": "core.train.checkpoint",
    "TrainConfig": "core.train.config",
    "bucketed_batches": "core.train.inputs",
    "load_data": "core.train.inputs",
    "pad_batch": "core.train.inputs",
    "split_pool": "core.train.inputs",
    "Outputs": "core.train.loop",
    "train": "core.train.loop",
    "METHODS": "core.train.methods",
    "Cancelled": "core.train.methods",
    "Diverged": "core.train.methods",
    "Method": "core.train.methods",
    "Predictor": "core.train.methods",
    "method_for": "core.train.methods",
    "run_label": "core.train.methods",
    "resolve": "core.train.resolution",
    "is_resolved": "core.train.resolution",
    "idle_options": "core.train.methods",
    "option_sections": "core.train.methods",
    "options": "core.train.config",
    "StudioModel": "core.train.model",
    "adamw": "core.train.optim",
    "Attribution": "core.train.attribution",
    "explain": "core.train.attribution",
    "unsure": "core.train.attribution",
    "near_chance": "core.train.attribution",
    "calibration": "core.train.metrics",
    "Prediction": "core.train.predict",
    "classify": "core.train.predict",
    "classify_frame": "core.train.predict",
    "unlearned_note": "core.train.predict",
    "readable": "core.train.predict",
    "FAKE_MEANING": "core.train.predict",
    "fake_class_note": "core.train.predict",
    "readable_frame": "core.train.predict",
    "submission_jsonl": "core.train.submission",
    "is_subtask_b": "core.train.submission",
    "jsonl_format": "core.train.submission",
    "download_stem": "core.train.submission",
    "CheckpointError": "core.train.checkpoint",
    "has_checkpoint": "core.train.checkpoint",
    "DEFAULT_FRACTIONS": "core.train.catalog",
    "DEFAULT_METHODS": "core.train.catalog",
    "DEFAULT_SEEDS": "core.train.catalog",
    "Sweep": "core.train.sweep",
    "amounts": "core.train.sweep",
    "capped_note": "core.train.sweep",
    "grid_labels": "core.train.sweep",
    "starved_note": "core.train.sweep",
    "unlabeled_read": "core.train.sweep",
    "parse_numbers": "core.train.sweep",
}


__getattr__ = exports("core.train", _EXPORTS)

__all__ = list(_EXPORTS)
