"""Training: one loop for every method behind `train(config, outputs, on_event, should_stop)`.

Reads top to bottom like nanoGPT's train.py: device and seed → data → labeled subset → model →
what an epoch iterates over → the loop (each step is the method's) → evaluation, early stopping and
checkpoints → the test set once, with the best checkpoint. Nothing here depends on which method runs.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Protocol

import numpy as np
import pandas as pd
import torch

from core.backbone import pick_device
from core.train.checkpoint import build_model
from core.train.config import TrainConfig
from core.train.inputs import Event, Representer, bucketed_batches, load_data, prepare
from core.train.methods import Method, method_for, validate
from core.train.metrics import classification_metrics
from core.train.model import StudioModel


class Diverged(RuntimeError):
    """Training went numerically wrong or collapsed onto one class; the message says which."""


class Cancelled(RuntimeError):
    """The run was asked to stop."""


class Outputs(Protocol):
    """Where a run's files go (a run folder owns their names)."""

    def save_checkpoint(self, model: StudioModel) -> None: ...

    def write_predictions(self, frame: pd.DataFrame) -> None: ...


# ---------------------------------------------------------------- evaluation

@torch.no_grad()
def predict_split(model: StudioModel, method: Method, rep: Representer, split: str, batch_size: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities over the k real classes and, for a method with one, the fake-class probability."""
    model.eval()
    n = len(rep.lengths(split))
    order = np.argsort(rep.lengths(split), kind="stable")
    probs = np.zeros((n, len(model.labels)), dtype=np.float32)
    fake = np.zeros(n, dtype=np.float32)
    for start in range(0, n, batch_size * 2):
        idx = order[start:start + batch_size * 2]
        real, fake_part = method.probabilities(model.head_logits(rep(split, idx)))
        probs[idx] = real.cpu().numpy()
        if fake_part is not None:
            fake[idx] = fake_part.cpu().numpy()
    model.train()
    return probs, fake


def prediction_frame(ids: list[str], y_true: np.ndarray, probs: np.ndarray, fake: np.ndarray,
                     labels: tuple[str, ...]) -> pd.DataFrame:
    """Per-text test predictions, for confusion matrices and paired tests between runs."""
    frame = pd.DataFrame({"id": ids, "label": y_true, "pred": probs.argmax(1), "fake_prob": fake})
    for i, name in enumerate(labels):
        frame[f"p_{name}"] = probs[:, i]
    return frame


# ---------------------------------------------------------------- the loop

def train(config: TrainConfig, outputs: Outputs, on_event: Event = lambda e: None,
          should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Train, keep the best validation checkpoint in `outputs`, write the test predictions there, and
    return the final test metrics with what the run used. Per-epoch figures go out as `epoch` events.

    Raises Diverged (NaN/inf loss, or collapse onto one class) and Cancelled; the caller records them.
    """
    method = method_for(validate(config))
    # -- device and seed
    device = pick_device(config.device)
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    random.seed(config.seed)
    rng = np.random.default_rng(config.seed)

    # -- data and model
    ds = load_data(config)
    model = build_model(config, ds.labels, device)
    data = prepare(config, ds, model, on_event)
    rep = Representer(model, data, config, device)
    y_val, y_test = ds.val["label"].to_numpy(), ds.test["label"].to_numpy()
    on_event({"type": "data", "labeled": int(len(data.labeled)), "unlabeled": int(len(data.unlabeled)),
              "val": int(len(y_val)), "test": int(len(y_test)), "fraction": data.fraction})

    # -- what one epoch iterates over, and the method's optimizer step
    rows = method.epoch_rows(data.labeled, data.unlabeled)
    pool_lengths = rep.lengths("pool")
    batch_size = method.batch_size(config)
    steps_per_epoch = math.ceil(len(rows) / batch_size)
    total_steps = steps_per_epoch * config.resolved_epochs
    step_once = method.start(model, config, data, total_steps)

    # -- loop
    best_f1, best_state, stale, collapsed, step, epochs_run = -1.0, None, 0, 0, 0, 0
    started = time.perf_counter()
    samples = 0
    model.train()
    for epoch in range(1, config.resolved_epochs + 1):
        sums: dict[str, float] = {}
        for batch in bucketed_batches(pool_lengths[rows], batch_size, rng):
            if should_stop():
                raise Cancelled("cancelled by request")
            idx = rows[batch]
            labels = torch.from_numpy(data.pool_labels[idx]).to(device)
            for name, value in step_once(rep("pool", idx), labels).items():
                if not math.isfinite(value):
                    raise Diverged(f"the {name} loss became {value} at epoch {epoch}, step {step + 1}")
                sums[name] = sums.get(name, 0.0) + value
            step += 1
            samples += len(idx)
            if step % 10 == 0 or step == total_steps:
                on_event({"type": "progress", "epoch": epoch, "step": step, "total_steps": total_steps,
                          "samples_per_s": samples / (time.perf_counter() - started)})

        # -- evaluate, keep the best checkpoint, stop early or on collapse
        epochs_run = epoch
        probs, _ = predict_split(model, method, rep, "val", batch_size)
        val = classification_metrics(y_val, probs.argmax(1), model.labels)
        predicted = np.asarray(val["confusion"]).sum(0)
        collapsed = collapsed + 1 if (predicted > 0).sum() == 1 else 0
        improved = val["macro_f1"] > best_f1
        if improved:
            best_f1, stale = val["macro_f1"], 0
            best_state = {k: v.detach().clone() for k, v in method.saved_state(model).items()}
            outputs.save_checkpoint(model)
        else:
            stale += 1
        on_event({"type": "epoch", "epoch": epoch, "step": step, "total_steps": total_steps,
                  "losses": {k: v / steps_per_epoch for k, v in sums.items()}, "val": val, "best": improved,
                  "samples_per_s": samples / (time.perf_counter() - started)})
        if collapsed >= config.collapse_evals:
            only = model.labels[int(predicted.argmax())]
            raise Diverged(f"collapsed: every validation prediction was '{only}' for {collapsed} evaluations in a row")
        if stale >= config.patience:
            on_event({"type": "status", "message": f"early stop: no better validation macro-F1 for {stale} epochs"})
            break

    # -- test once, with the best checkpoint
    model.load_state_dict(best_state, strict=False)
    probs, fake = predict_split(model, method, rep, "test", batch_size)
    has_labels = bool((y_test >= 0).all())
    test = classification_metrics(y_test, probs.argmax(1), model.labels) if has_labels else {}
    outputs.write_predictions(prediction_frame(ds.test["id"].tolist(), y_test, probs, fake, model.labels))
    elapsed = time.perf_counter() - started
    return {"best_val_macro_f1": best_f1, "test": test, "epochs_run": epochs_run, "steps": step,
            "seconds": elapsed, "samples_per_s": samples / elapsed if elapsed else 0.0,
            "labeled": int(len(data.labeled)), "unlabeled": int(len(data.unlabeled)), "fraction": data.fraction}
