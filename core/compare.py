"""Comparing runs: tidy tables of final and per-epoch metrics, seed aggregates, and McNemar's test."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binomtest, chi2

from core.runs import Registry, Run
from core.training import PREDICTIONS

METRICS = ("accuracy", "macro_f1", "mcc")


def method_name(run: Run) -> str:
    """The line a run belongs to in comparisons: method, GAN-BERT generator, frozen or not."""
    c = run.config
    name = {"noise": "GAN-BERT G1 (noise)", "bow": "GAN-BERT G2 (bag of words)"}[c.generator] \
        if c.method == "ganbert" else {"finetune": "BERT fine-tuning", "adapter": "BERT + adapters"}[c.method]
    return name + (" [frozen]" if c.frozen else "")


def runs_frame(runs: list[Run]) -> pd.DataFrame:
    """One row per run with its settings and final test metrics, for tables, filters and charts."""
    rows = []
    for r in runs:
        c = r.config
        test = (r.metrics or {}).get("test", {})
        rows.append({
            "run_id": r.id, "status": r.status, "method": method_name(r), "generator": c.generator if c.method == "ganbert" else "",
            # the requested fraction groups runs; per-class runs fall back to the share they labeled
            "fraction": c.fraction if c.fraction is not None else (r.metrics or {}).get("fraction"),
            "per_class": c.per_class, "seed": c.seed,
            "epochs": c.epochs, "dataset": "built-in (synthetic)" if c.data.builtin else (c.data.train or ""),
            "backbone": c.backbone or "MiniLM (bundled)", "frozen": c.frozen, "tags": ", ".join(c.tags),
            "progress": r.progress, "epoch": r.epoch, "message": r.message or "",
            **{m: test.get(m) for m in METRICS},
            "created": pd.to_datetime(r.created, unit="s"),
        })
    columns = ["run_id", "status", "method", "generator", "fraction", "per_class", "seed", "epochs", "dataset",
               "backbone", "frozen", "tags", "progress", "epoch", "message", *METRICS, "created"]
    return pd.DataFrame(rows, columns=columns)


FILTERS = ("dataset", "method", "generator", "fraction", "backbone", "status", "tags", "seed")


def filter_runs(frame: pd.DataFrame, chosen: dict[str, list]) -> pd.DataFrame:
    """Rows matching every non-empty choice (a column's chosen values are alternatives)."""
    for column, values in chosen.items():
        if values:
            frame = frame[frame[column].isin(values)]
    return frame


def aggregate(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds of each metric, per method and labeled fraction."""
    done = frame[frame["status"] == "done"].dropna(subset=["accuracy"])
    if done.empty:
        return pd.DataFrame(columns=["method", "fraction", "runs", *[f"{m}_{s}" for m in METRICS for s in ("mean", "std")]])
    grouped = done.groupby(["method", "fraction"])
    out = grouped[list(METRICS)].agg(["mean", "std"])
    out.columns = [f"{m}_{s}" for m, s in out.columns]
    out = out.fillna({c: 0.0 for c in out.columns if c.endswith("_std")})
    out.insert(0, "runs", grouped.size())
    return out.reset_index()


def epochs_frame(registry: Registry, runs: list[Run]) -> pd.DataFrame:
    """Per-epoch losses and validation metrics of several runs, long form (run, epoch, metric, value)."""
    rows = []
    for r in runs:
        for e in registry.epochs(r.id):
            for key, value in e.items():
                if key not in ("epoch", "best") and isinstance(value, (int, float)):
                    rows.append({"run_id": r.id, "run": f"{method_name(r)} @ {r.config.fraction} s{r.config.seed}",
                                 "epoch": e["epoch"], "metric": key, "value": float(value)})
    return pd.DataFrame(rows, columns=["run_id", "run", "epoch", "metric", "value"])


def confusion_frame(run: Run, normalize: bool = False) -> pd.DataFrame:
    """The test confusion matrix as (true, predicted, value); rows sum to 1 when normalized."""
    test = (run.metrics or {}).get("test", {})
    matrix = np.asarray(test.get("confusion", []), dtype=float)
    names = list(test.get("per_class", {}))  # in label-id order, as the matrix
    if normalize and matrix.size:
        matrix = matrix / matrix.sum(1, keepdims=True).clip(min=1)
    return pd.DataFrame([{"true": names[i], "predicted": names[j], "value": matrix[i, j]}
                         for i in range(len(names)) for j in range(len(names))])


def per_class_f1(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for r in runs:
        for name, scores in (r.metrics or {}).get("test", {}).get("per_class", {}).items():
            if scores["support"] > 0:
                rows.append({"run": f"{method_name(r)} @ {r.config.fraction} s{r.config.seed}", "class": name,
                             "f1": scores["f1"]})
    return pd.DataFrame(rows, columns=["run", "class", "f1"])


@dataclass(frozen=True)
class McNemar:
    only_a: int  # texts run A got right and run B wrong
    only_b: int
    both: int
    neither: int
    p_value: float
    exact: bool

    def verdict(self, a: str, b: str, alpha: float = 0.05) -> str:
        if self.only_a + self.only_b == 0:
            return f"{a} and {b} are right and wrong on exactly the same texts: no difference to test."
        better, worse = (a, b) if self.only_a > self.only_b else (b, a)
        if self.p_value < alpha:
            return (f"{better} is significantly more accurate than {worse} on this test set "
                    f"(p = {self.p_value:.3g} < {alpha}).")
        return (f"No significant difference between {a} and {b} (p = {self.p_value:.3g} ≥ {alpha}): "
                f"they disagree on {self.only_a + self.only_b} texts, too few or too evenly split to tell.")


def mcnemar(correct_a: np.ndarray, correct_b: np.ndarray) -> McNemar:
    """McNemar's paired test on per-text correctness: exact binomial below 25 discordant pairs,
    else the chi-squared statistic with continuity correction."""
    a, b = np.asarray(correct_a, bool), np.asarray(correct_b, bool)
    if a.shape != b.shape:
        raise ValueError("McNemar needs both runs' predictions on the same test texts")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    n = only_a + only_b
    if n == 0:
        p, exact = 1.0, True
    elif n < 25:
        p, exact = float(binomtest(only_a, n, 0.5).pvalue), True
    else:
        p, exact = float(chi2.sf((abs(only_a - only_b) - 1) ** 2 / n, df=1)), False
    return McNemar(only_a, only_b, int((a & b).sum()), int((~a & ~b).sum()), p, exact)


def paired_test(registry: Registry, run_a: str, run_b: str) -> McNemar:
    """McNemar between two finished runs, matched on test text ids."""
    pa = pd.read_parquet(registry.run_dir(run_a) / PREDICTIONS)
    pb = pd.read_parquet(registry.run_dir(run_b) / PREDICTIONS)
    merged = pa.merge(pb, on="id", suffixes=("_a", "_b"))
    if len(merged) != len(pa) or len(merged) != len(pb) or (merged["label_a"] != merged["label_b"]).any():
        raise ValueError("the two runs were tested on different texts; McNemar needs the same test set")
    return mcnemar(merged["pred_a"] == merged["label_a"], merged["pred_b"] == merged["label_b"])


def monitor_frame(runs: list[Run], now: float) -> pd.DataFrame:
    """The Train page's live table: status, progress, epoch, time left and the latest message."""
    rows = []
    for r in runs:
        left = None
        if r.status == "running" and r.started and r.progress > 0.01:
            elapsed = now - r.started
            left = elapsed * (1 - r.progress) / r.progress
        test = (r.metrics or {}).get("test", {})
        rows.append({"run_id": r.id, "status": r.status, "run": r.label, "progress": r.progress,
                     "epoch": f"{r.epoch}/{r.config.epochs}", "time left": _duration(left),
                     "test macro-F1": test.get("macro_f1"), "where": r.device if r.backend == "ray" and r.device
                     else r.backend, "latest": r.message or ""})
    return pd.DataFrame(rows, columns=["run_id", "status", "run", "progress", "epoch", "time left",
                                       "test macro-F1", "where", "latest"])


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"
