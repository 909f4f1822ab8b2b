"""Comparing runs: tidy tables of final and per-epoch metrics, seed aggregates, and the Train page's
live table."""

from __future__ import annotations

import json

import pandas as pd

from core.backbone import backbone_label
from core.compare.names import dataset_names, distinct_names, distinguishing
from core.compare.seeds import group_key
from core.runs import Registry, Run
from core.runs.estimate import History, roughly, times_left
from core.runs.lifecycle import ACTIVE, Status
from core.train import method_for
from core.train.macro import DENSE_UP_TO, dense_confusion
from core.train.methods import backbone_tag
from core.train.methods.specs import not_learned

METRICS = ("accuracy", "macro_f1", "mcc")


def method_name(run: Run) -> str:
    """The line a run belongs to in comparisons: the method's own name for its config."""
    return method_for(run.config).display(run.config)


def runs_frame(runs: list[Run]) -> pd.DataFrame:
    """One row per run with its settings and final test metrics, for tables, filters and charts; `differs in`
    names the settings that tell a run apart from others of its name (`distinguishing`)."""
    rows, differs = [], distinguishing(runs)
    datasets = dataset_names([r.config.data for r in runs])
    for r in runs:
        c, result = r.config, r.metrics or {}
        test = result.get("test", {})
        rows.append({
            "run_id": r.id, "status": r.status, "method": method_name(r), "differs in": differs[r.id],
            "generator": c.params.generator if "generator" in method_for(c).variants else "",
            "amount": c.amount, "labels read": r.labels_read, "labeled": result.get("labeled"),
            "unlabeled": result.get("unlabeled"), "val_rows": result.get("val_rows"), "validation": c.validation,
            "test_rows": result.get("test_rows"), "fraction": c.fraction,
            "per_class": c.per_class, "seed": c.seed, "steps": result.get("steps"),
            "selection": result.get("selection", "best"), "dataset": datasets[c.data],
            "data_path": "" if c.data.builtin else c.data.train or "",
            "backbone": backbone_label(c.backbone), "backbone_tag": backbone_tag(c), "frozen": c.frozen,
            "tags": ", ".join(c.tags),
            "progress": r.progress, "message": r.message or "", "seconds": result.get("seconds"),
            "reference": method_for(c).reference, "settings": group_key(c),
            **{m: test.get(m) for m in METRICS},
            "created": pd.to_datetime(r.created, unit="s"),
        })
    columns = ["run_id", "status", "method", "differs in", "generator", "amount", "labels read", "labeled", "unlabeled",
               "val_rows", "validation", "test_rows",
               "fraction", "per_class", "seed", "steps", "selection", "dataset", "data_path", "backbone",
               "backbone_tag", "frozen", "tags",
               "progress", "message", "seconds", "reference", "settings", *METRICS, "created"]
    return pd.DataFrame(rows, columns=columns)


FILTERS = ("dataset", "method", "generator", "amount", "backbone", "status", "tags", "seed")


def filter_runs(frame: pd.DataFrame, chosen: dict[str, list]) -> pd.DataFrame:
    """Rows matching every non-empty choice (a column's chosen values are alternatives)."""
    for column, values in chosen.items():
        if values:
            frame = frame[frame[column].isin(values)]
    return frame


def evaluations_frame(registry: Registry, runs: list[Run], names: dict[str, str] | None = None) -> pd.DataFrame:
    """Losses and validation metrics at each evaluation of several runs, long form (run, step, metric,
    value); runs from before step budgets evaluated once an epoch, and their x is the epoch. Runs are
    named by `names` (default: names that tell these runs apart)."""
    names = names or distinct_names(runs)
    rows = []
    for r in runs:
        for e in registry.evaluations(r.id):
            x = e["step"] if e["step"] is not None else e["evaluation"]
            for key, value in e.items():
                if key not in ("evaluation", "step", "best") and isinstance(value, (int, float)):
                    rows.append({"run_id": r.id, "run": names[r.id], "step": x, "metric": key, "value": float(value)})
    return pd.DataFrame(rows, columns=["run_id", "run", "step", "metric", "value"])


def run_notes(run: Run, registry: Registry) -> list[str]:
    """What a run's card says beside its curves: its budget, the checkpoint it kept and why, the classes
    it could not learn, and a warning when the model never beat chance on validation or GAN-BERT's
    discriminator calls real texts fake."""
    result, notes = run.metrics or {}, []
    if result.get("labeled") is not None:
        source = f", validation from {result['val_source']}" if result.get("val_source", "none") != "none" else ""
        notes.append(f"Labels read: {run.labels_text}{source}.")
    if result.get("budget"):
        notes.append(f"Budget: {result['budget']}; took {result.get('steps')} steps.")
    if result.get("selection_reason"):
        notes.append(f"Selection: {result['selection_reason']}.")
    if result.get("classes_left_out"):
        notes.append(f"Left out: {', '.join(result['classes_left_out'])} had no labeled rows, so this model "
                     "never predicts them.")
    if result.get("unlabeled") is not None and (starved := method_for(run.config).starved(
            run.config, result["unlabeled"], result.get("labeled") or 0)):
        notes.append(f"warning: {starved}.")
    if result.get("learned") is False:  # absent in runs recorded before it was kept: no claim either way
        notes.append(f"warning: {not_learned(result.get('steps'))}.")
    fake = [e["val_fake_prob"] for e in registry.evaluations(run.id) if e.get("val_fake_prob") is not None]
    if fake and fake[-1] > 0.5:
        notes.append(f"warning: the discriminator calls real validation texts fake (mean fake probability "
                     f"{fake[-1]:.2f} > 0.5 at the last evaluation); its class probabilities are unreliable.")
    return notes


def run_details(run: Run) -> dict:
    """Everything about one run on one card: its whole config, how it ended, when and for how long, where,
    its budget and checkpoint selection, and its test metrics."""
    result = run.metrics or {}
    test = result.get("test", {})
    return {"run": run.name, "status": run.status, "message": run.message,
            "duration": None if not (run.started and run.ended) else _duration(run.ended - run.started),
            "device": run.device, "backend": run.backend,
            "budget": result.get("budget"), "steps": result.get("steps"), "selection": result.get("selection"),
            "selection_reason": result.get("selection_reason"), "labels read": run.labels_text,
            "rows": {k: result.get(k) for k in ("labeled", "unlabeled", "val_rows", "test_rows")},
            "test": {k: test.get(k) for k in ("accuracy", "macro_f1", "mcc")},
            "config": json.loads(run.config.to_json())}


def confusion_frame(tables: dict, normalize: bool = False) -> pd.DataFrame | None:
    """A run's test confusion matrix (from its per-class `tables`, `Registry.tables`) as (true, predicted, value);
    rows sum to 1 when normalized. None past `DENSE_UP_TO` classes: 5,000 of them had made 25 M cells to draw."""
    from core.plotting import confusion_cells  # altair with it: the GPU check's machine has none, and reads runs

    classes = tables.get("classes", list(tables.get("per_class", {})))  # older runs: per_class, in label-id order
    if len(classes) > DENSE_UP_TO:
        return None
    return confusion_cells({"confusion": dense_confusion({**tables, "classes": classes}), "classes": classes},
                           normalize)


def per_class_f1(runs: list[Run], tables: dict[str, dict], names: dict[str, str] | None = None) -> pd.DataFrame:
    """Each run's F1 on each class its test texts hold, from its per-class `tables` (by run id)."""
    names = names or distinct_names(runs)
    rows = []
    for r in runs:
        for name, scores in tables.get(r.id, {}).get("per_class", {}).items():
            if scores["support"] > 0:
                rows.append({"run": names[r.id], "class": name,
                             "f1": scores["f1"]})
    return pd.DataFrame(rows, columns=["run", "class", "f1"])


MONITOR_ORDER = {Status.RUNNING: 0, Status.STARTING: 1, Status.QUEUED: 2}  # in the order they run; then the ended
# runs, newest first


def monitor_frame(runs: list[Run], now: float, slots: int) -> pd.DataFrame:
    """The Train page's live table, what is running first: status, the current phase and its progress,
    time left (from this machine's history and its `slots` runs at once, `core.runs.estimate`), its test
    macro-F1, the run's name with what tells it apart from others of that name (in the name: a column of its own
    sat a scroll away at 1,400 px, and runs at LR C 1 and 10 read alike), the latest message and evaluations."""
    history, names = History(runs), distinct_names(runs)
    left = times_left(runs, history, now, slots)
    ordered = sorted(runs, key=lambda r: (MONITOR_ORDER.get(r.status, 3),
                                          r.created if r.status in MONITOR_ORDER else -r.created))
    rows = []
    for r in ordered:
        test = (r.metrics or {}).get("test", {})
        phase = (r.phase or "preparing") if r.status == Status.RUNNING else ""
        if r.cancel_requested and r.status in ACTIVE:  # asked to stop: its process ends at its next check
            phase = "stopping"
        rows.append({"status": r.status, "phase": phase, "progress": round(100 * r.progress),
                     "time left": _duration(left[r.id]), "seed": r.config.seed, "run": names[r.id],
                     "test macro-F1": test.get("macro_f1"), "latest": r.message or "", "evaluations": r.evaluations,
                     "where": r.device if r.backend == "ray" and r.device else r.backend, "run_id": r.id})
    # the score beside the progress, where the table opens: a long run name would push it out of sight; the seed
    # before the name, which a walk found cut before its end, where the seed is, at 1,400 px
    return pd.DataFrame(rows, columns=["status", "phase", "progress", "time left", "test macro-F1", "seed", "run",
                                       "latest", "evaluations", "where", "run_id"])


def queue_words(runs: list[Run], now: float, slots: int) -> str | None:
    """When the runs still queued or going will all have ended, for the monitor to say under its table (a grid had
    no total once launched); None when none is going. Runs whose time is not known yet are counted as such."""
    going = [r for r in runs if r.status in ACTIVE]
    if not going:
        return None
    left = times_left(runs, History(runs), now, slots)
    known = [left[r.id] for r in going if left[r.id] is not None]
    unknown = len(going) - len(known)
    if not known:
        return f"{len(going)} run(s) to go; their time is not known yet."
    words = f"{len(going)} run(s) to go: the last ends in {roughly(max(known))}"
    return words + (f", or later: {unknown} of them have no estimate yet." if unknown else ".")


def follow_rows(before: list[str], rows: list[int], after: list[str]) -> list[int]:
    """Where the runs selected at `rows` of a table listing `before` sit in a table listing `after`: a table
    selection is by position, and rows come and go (a run deleted, a filter changed) between reruns."""
    chosen = {before[i] for i in rows if 0 <= i < len(before)}
    return [i for i, run_id in enumerate(after) if run_id in chosen]


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"
