"""Classification metrics (scikit-learn underneath), as plain JSON-ready dicts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    matthews_corrcoef,
    precision_recall_fscore_support,
)

from core.train.macro import DENSE_UP_TO, sparse_macro_f1


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, labels: tuple[str, ...]) -> dict:
    """Accuracy, macro-F1 (over the classes `y_true` holds: `macro_f1`) and MCC, the k×k confusion matrix over
    `labels` (in label-id order: JSON written with sorted keys reorders `per_class`; past `DENSE_UP_TO` classes its
    nonzero cells alone, `confusion_cells`), and per-class precision, recall and F1."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    ids = list(range(len(labels)))
    p, r, f, support = precision_recall_fscore_support(y_true, y_pred, labels=ids, zero_division=0)
    pairs, counts = np.unique(np.stack([y_true, y_pred]), axis=1, return_counts=True) if len(y_true) else \
        (np.zeros((2, 0), int), np.zeros(0, int))
    cells = [[int(t), int(q), int(n)] for (t, q), n in zip(pairs.T, counts)]
    table = {"confusion": confusion_matrix(y_true, y_pred, labels=ids).tolist()} if len(labels) <= DENSE_UP_TO \
        else {"confusion_cells": cells}
    return {
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "macro_f1": sparse_macro_f1(cells, len(labels)),
        "macro_f1_classes": int(len(set(y_true.tolist()))),
        "mcc": float(matthews_corrcoef(y_true, y_pred)),
        **table,
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
