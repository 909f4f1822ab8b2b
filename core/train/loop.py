"""A training run, for every method: `train(config, outputs, on_event, should_stop)`.

Reads top to bottom: device and seed → data → the labeled rows (the same for every method with the
same seed) → the method fits, writing its checkpoint → the test metrics, over the dataset's classes →
the per-text predictions. How a method fits is the method's business (`core.train.methods`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
import torch

from core.backbone import prepare_backbone
from core.backbone.device import pick_device
from core.train.config import TrainConfig
from core.train.inputs import Event, load_data, split_pool
from core.train.methods import Cancelled, Job, method_for
from core.train.metrics import classification_metrics
from core.train.resolution import is_resolved


class Outputs(Protocol):
    """Where a run's files go (a run folder owns their names)."""

    @property
    def checkpoint(self) -> Path: ...

    def write_predictions(self, frame: pd.DataFrame) -> None: ...


def prediction_frame(ids: list[str], y_true: np.ndarray, predicted: np.ndarray, probs: np.ndarray,
                     fake: np.ndarray | None, labels: tuple[str, ...]) -> pd.DataFrame:
    """Per-text test predictions (label ids of the dataset), for confusion matrices and paired tests."""
    columns = {"id": ids, "label": y_true, "pred": predicted,
               "fake_prob": np.zeros(len(ids), np.float32) if fake is None else fake}
    # built at once: a column at a time warned 5,000 times over 5,000 classes
    return pd.DataFrame(columns | {f"p_{name}": probs[:, i] for i, name in enumerate(labels)})


class EncodingClock:
    """Passes events on and times the encoding pass (frozen features, or a top-K run's states below its boundary),
    which happens once per text, so that estimates count it apart from the run's own time."""

    def __init__(self, on_event: Event):
        self.forward, self.seconds, self.since = on_event, 0.0, None

    def on_event(self, event: dict) -> None:
        if event["type"] in ("features", "states"):
            if event["done"] == 0:
                self.since = time.perf_counter()
            elif event["done"] == event["total"] and self.since is not None:
                self.seconds += time.perf_counter() - self.since
                self.since = None
        self.forward(event)


def train(config: TrainConfig, outputs: Outputs, home: Path, on_event: Event = lambda e: None,
          should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Fit the config's method, keep its checkpoint in `outputs`, write the test predictions there, and
    return the test metrics with what the run used. Evaluations go out as `evaluation` events. The studio `home`
    holds what runs share: a packaged backbone's converted folder, the feature and state stores.

    Raises Diverged (NaN/inf loss, or collapse onto one class) and Cancelled; the caller records them.
    """
    if not is_resolved(config):
        raise ValueError("train() takes the config as resolved at launch (core.train.resolution): resolve it once, "
                         "store it, and train what was stored")
    method = method_for(config)
    started, cpu_started = time.perf_counter(), time.process_time()
    encoding = EncodingClock(on_event)
    on_event = encoding.on_event
    engines: list[str] = []  # the engine that encoded frozen features (torch when an export fell back)

    def note(event: dict) -> None:
        if event["type"] == "engine":
            engines.append(event["engine"])
        else:
            encoding.on_event(event)
        if event["type"] in ("features", "states") and should_stop():  # a pass over texts stops between batches
            raise Cancelled("cancelled by request")
    on_event = note
    # -- the backbone's files (a packaged one converted on its first run), device and seed
    if method.encoder != "none":
        prepare_backbone(config.backbone, config.revision, home=home, on_stage=lambda done, total, what: on_event(
            {"type": "status", "message": f"preparing {config.backbone}: {what} ({done + 1} of {total})"}))
    device = pick_device(config.device)
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    random.seed(config.seed)

    # -- data and the labeled rows
    ds = load_data(config, home)
    data = split_pool(config, ds).used_by(method.uses_unlabeled)
    y_test = ds.test["label"].to_numpy()
    rows = {"labeled": int(len(data.labeled)), "unlabeled": int(len(data.unlabeled)), "val_rows": int(len(data.val)),
            "test_rows": int(len(y_test))}
    on_event({"type": "data", **rows, "fraction": data.fraction, "val_source": data.val_source})
    if starved := method.starved(config, len(data.unlabeled), len(data.labeled)):
        on_event({"type": "status", "message": f"warning: {starved}"})
    if data.left_out:
        on_event({"type": "status", "message": f"left out of the model: {', '.join(data.left_out)} (no labeled "
                                               "rows); it will never predict them"})

    # -- the method fits and writes its checkpoint
    fitted = method.fit(Job(config, data, outputs.checkpoint, device, home, on_event, should_stop))

    # -- test metrics over the dataset's classes, and the per-text predictions
    predicted = data.classes[fitted.test_probs.argmax(1)]
    test = classification_metrics(y_test, predicted, ds.labels) if bool((y_test >= 0).all()) else {}
    outputs.write_predictions(prediction_frame(ds.test["id"].tolist(), y_test, predicted, fitted.test_probs,
                                               fitted.test_fake, data.labels))
    return {**fitted.record, "test": test, **rows, "fraction": data.fraction, "labels_read": data.labels_read,
            "validation": config.validation, "val_source": data.val_source,
            "classes_left_out": data.left_out, "seconds": time.perf_counter() - started,
            "encode_seconds": encoding.seconds, "engine": engines[-1] if engines else None,
            "cpu_seconds": time.process_time() - cpu_started, "threads": torch.get_num_threads()}
