"""Classification metrics (scikit-learn underneath), as plain JSON-ready dicts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import (
    accuracy_score, confusion_matrix, matthews_corrcoef, precision_recall_fscore_support,
)


def macro_f1(confusion) -> float:
    """Macro-F1 over the classes the scored texts hold (the confusion matrix's rows with texts): one list per test
    set, the same for every run on it. scikit-learn's default had averaged over the classes in the truth or the
    predictions, so on TREC fine (42 classes in test) the denominator moved with what a run happened to predict,
    and a class the data declares but never holds (bloomz in the M4 sample) counts as no zero either way."""
    c = np.asarray(confusion, dtype=float)
    support, predicted, hits = c.sum(axis=1), c.sum(axis=0), np.diag(c)
    held = support > 0
    if not held.any():
        return 0.0
    f1 = np.divide(2 * hits, support + predicted, out=np.zeros_like(hits), where=support + predicted > 0)
    return float(f1[held].mean())


def upgraded(metrics: dict | None) -> dict | None:
    """A run's stored metrics as this studio scores them: a test macro-F1 written before it was fixed to the test
    set's classes is recomputed from the run's confusion matrix (migration; nothing else read changes)."""
    test = (metrics or {}).get("test")
    if isinstance(test, dict) and isinstance(test.get("confusion"), list) and test["confusion"]:
        return {**metrics, "test": {**test, "macro_f1": macro_f1(test["confusion"])}}
    return metrics


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, labels: tuple[str, ...]) -> dict:
    """Accuracy, macro-F1 (over the classes `y_true` holds: `macro_f1`) and MCC, the full k×k confusion matrix
    over `labels` (in label-id order: JSON written with sorted keys reorders `per_class`), and per-class precision,
    recall and F1."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    ids = list(range(len(labels)))
    p, r, f, support = precision_recall_fscore_support(y_true, y_pred, labels=ids, zero_division=0)
    confusion = confusion_matrix(y_true, y_pred, labels=ids)
    return {
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "macro_f1": macro_f1(confusion),
        "macro_f1_classes": int((confusion.sum(axis=1) > 0).sum()),
        "mcc": float(matthews_corrcoef(y_true, y_pred)),
        "confusion": confusion.tolist(),
        "classes": list(labels),
        "per_class": {name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]),
                             "support": int(support[i])} for i, name in enumerate(labels)},
        "n": int(len(y_true)),
    }


@dataclass(frozen=True)
class Calibration:
    """How far a model's top probability can be trusted on scored texts: the expected calibration error and the
    mean confidence beside the accuracy it stood for."""

    ece: float
    confidence: float
    accuracy: float
    n: int

    def sentence(self) -> str:
        """In words, for the Classify page."""
        return (f"on its {self.n:,} test texts its top probability averaged {self.confidence:.0%}, and it was right "
                f"{self.accuracy:.0%} of the time: expected calibration error {self.ece:.3f}")

    @property
    def overconfident(self) -> bool:
        """Its probabilities claim far more than it delivers (a gap over 0.15): to read as a ranking, not chances."""
        return self.ece > 0.15 and self.confidence > self.accuracy


def calibration(predictions: pd.DataFrame, bins: int = 10) -> Calibration | None:
    """Expected calibration error (Guo et al., 2017) of a run's test predictions: over equal-width bins of the top
    probability, the gap between mean confidence and accuracy, weighted by the bin's share of texts. None when no
    test text has a label."""
    scored = predictions[predictions["label"] >= 0]
    if scored.empty:
        return None
    confidence = scored[[c for c in scored.columns if c.startswith("p_")]].to_numpy().max(axis=1)
    correct = (scored["pred"] == scored["label"]).to_numpy().astype(float)
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    ece = sum(abs(confidence[which == b].mean() - correct[which == b].mean()) * (which == b).mean()
              for b in range(bins) if (which == b).any())
    return Calibration(float(ece), float(confidence.mean()), float(correct.mean()), len(scored))
