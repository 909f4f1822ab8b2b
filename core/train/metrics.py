"""Classification metrics (scikit-learn underneath), as plain JSON-ready dicts."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import (
    accuracy_score, confusion_matrix, f1_score, matthews_corrcoef, precision_recall_fscore_support,
)


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, labels: tuple[str, ...]) -> dict:
    """Accuracy, macro-F1 and MCC, the full k×k confusion matrix over `classes` (in label-id order: JSON
    written with sorted keys reorders `per_class`), and per-class precision, recall and F1.

    Macro-F1 averages over the classes present in the truth or the predictions, so a class the data
    declares but never holds (bloomz in the M4 sample) does not count as a zero.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    ids = list(range(len(labels)))
    p, r, f, support = precision_recall_fscore_support(y_true, y_pred, labels=ids, zero_division=0)
    return {
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "macro_f1": float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
        "mcc": float(matthews_corrcoef(y_true, y_pred)),
        "confusion": confusion_matrix(y_true, y_pred, labels=ids).tolist(),
        "classes": list(labels),
        "per_class": {name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]),
                             "support": int(support[i])} for i, name in enumerate(labels)},
        "n": int(len(y_true)),
    }
