"""What a studio run becomes in a tracking store, free of any tracking library: its params (the resolved config,
flattened), its tags (the run's id, its dataset's identity, every label it read, its device), its metrics (the
test scores and each class's F1) and its curves (each evaluation's losses and validation scores, by step)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict
from pathlib import Path

from core.backbone import backbone_label
from core.data import DataSpec
from core.runs.known_files import digest
from core.runs.registry import Registry
from core.runs.run import Run
from core.train import method_for
from core.train.config import flat_settings

PARAM_CHARS = 6000  # MLflow keeps a param's value up to 6,000 characters
TAG_PREFIX = "studio."
RUN_ID_TAG = f"{TAG_PREFIX}run_id"  # finds a run exported before, so a second export updates it
SCORES = ("accuracy", "macro_f1", "mcc")
# what a run read and took: one number each, kept as params (as metrics MLflow drew each as a chart of one bar,
# among the curves)
COUNTS = ("labeled", "unlabeled", "val_rows", "test_rows", "labels_read", "steps", "seconds", "encode_seconds")


def params(run: Run) -> dict[str, str]:
    """The resolved config flattened ('data.train', 'lr', …), what the studio names the run and its backbone by
    (the config's `backbone` names MiniLM "minilm-l6"), and, once it has ended, what it read and took
    (`COUNTS`, as `result.*`); `None` as 'None', a long value cut to MLflow's limit."""
    method = method_for(run.config)
    flat = {"method_name": method.short(run.config), "amount": run.config.amount, **flat_settings(run.config)}
    if method.encoder != "none":  # by name alone: a backbone no longer where the run found it is named too
        flat["backbone_name"] = backbone_label(run.config.backbone)
    result = run.metrics or {}
    flat |= {f"result.{k}": result[k] for k in COUNTS if isinstance(result.get(k), (int, float))}
    return {key: str(value)[:PARAM_CHARS] for key, value in flat.items()}


def tags(run: Run, registry: Registry) -> dict[str, str]:
    """The run's identity in the studio, its dataset's, the labels it read (validation included), its device."""
    return {RUN_ID_TAG: run.id, f"{TAG_PREFIX}name": run.name, f"{TAG_PREFIX}status": run.status,
            f"{TAG_PREFIX}dataset": run.config.data.short_name,
            f"{TAG_PREFIX}dataset_id": dataset_identity(run.config.data, registry),
            f"{TAG_PREFIX}labels_read": str(run.labels_read), f"{TAG_PREFIX}labels": run.labels_text,
            f"{TAG_PREFIX}device": run.device or "", f"{TAG_PREFIX}tags": ", ".join(run.config.tags),
            "mlflow.runName": run.name}


def dataset_identity(spec: DataSpec, registry: Registry) -> str:
    """A hash of the dataset's files' digests as the registry keeps them (`known_files.digest`: a file is read
    again only once it has changed), or of the built-in corpus' settings; a file no longer there counts by its
    path alone."""
    identity = hashlib.sha256()
    if spec.builtin is not None:
        identity.update(json.dumps(asdict(spec.builtin), sort_keys=True, default=str).encode())
    for role, where in sorted(spec.paths.items()):
        identity.update(f"{role}:{where}\n".encode())
        path = Path(where)
        for file in sorted(path.iterdir()) if path.is_dir() else [path]:
            identity.update((digest(registry, str(file)) or "").encode())
    return identity.hexdigest()[:16]


def metric_key(name: str) -> str:
    """A class name as an MLflow metric key allows it (letters, digits and _-. /: others become _)."""
    return re.sub(r"[^\w\-. /]", "_", name)


def metrics(run: Run, tables: dict) -> dict[str, float]:
    """The test scores, and from its per-class `tables` (`Registry.tables`) the F1 of each class the test texts hold
    (one they lack has no F1 to speak of, and is out of macro-F1 too)."""
    test = (run.metrics or {}).get("test") or {}
    found = {f"test_{k}": float(test[k]) for k in SCORES if test.get(k) is not None}
    found |= {f"test_f1.{metric_key(name)}": float(s["f1"]) for name, s in (tables.get("per_class") or {}).items()
              if s.get("support", 1) > 0}
    return found


def curves(evaluations: list[dict]) -> list[tuple[int, dict[str, float]]]:
    """Each evaluation's numbers (losses, D and G for GAN-BERT, validation scores) at its step; an evaluation
    recorded without a step (before step budgets) at its index."""
    points = []
    for e in evaluations:
        step = e.get("step") if e.get("step") is not None else e.get("evaluation", 0)
        values = {k: float(v) for k, v in e.items() if k not in ("step", "evaluation", "best")
                  and isinstance(v, (int, float)) and not isinstance(v, bool)}
        points.append((int(step), values))
    return points
