"""A run's stored test metrics read with numpy alone (`core runs` imports no scikit-learn): macro-F1 from a
confusion matrix, dense or as its nonzero cells (older rows are rescored with it once: `registry_store.rescored`),
and the per-class tables kept apart from the row every list reads."""

from __future__ import annotations

import numpy as np

TABLES = ("classes", "confusion", "confusion_cells", "per_class")  # a split's per-class tables (`split_tables`)
# Past this many classes a confusion matrix is kept as its nonzero cells: 5,000 classes' dense matrix had written a
# result.json of 263 MB (and the matrix drawn is unreadable long before)
DENSE_UP_TO = 64


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


def sparse_macro_f1(cells: list[list[int]], classes: int) -> float:
    """`macro_f1` from a confusion matrix's nonzero cells (true, predicted, count), with no k×k matrix made."""
    support, predicted, hits = np.zeros(classes), np.zeros(classes), np.zeros(classes)
    for t, q, n in cells:
        support[t] += n
        predicted[q] += n
        if t == q:
            hits[t] += n
    held = support > 0
    if not held.any():
        return 0.0
    f1 = np.divide(2 * hits, support + predicted, out=np.zeros_like(hits), where=support + predicted > 0)
    return float(f1[held].mean())


def dense_confusion(test: dict) -> list[list[int]]:
    """A split's confusion matrix as rows, from its dense form or its nonzero cells (`DENSE_UP_TO`)."""
    if test.get("confusion"):
        return test["confusion"]
    k = len(test.get("classes", []))
    matrix = np.zeros((k, k), dtype=int)
    for t, q, n in test.get("confusion_cells", []):
        matrix[t, q] += n
    return matrix.tolist()


def split_tables(metrics: dict | None) -> tuple[dict | None, dict | None]:
    """A run's metrics without its test split's per-class tables, and those tables: every list of runs reads the
    one, and a page asks for the other when it draws them (`Registry.tables`)."""
    test = (metrics or {}).get("test")
    if not isinstance(test, dict) or not any(k in test for k in TABLES):
        return metrics, None
    return ({**metrics, "test": {k: v for k, v in test.items() if k not in TABLES}},
            {k: test[k] for k in TABLES if k in test})
