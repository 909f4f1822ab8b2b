"""What the labels given so far teach: a logistic regression on the standardized frozen features, refit at every
round in milliseconds, for the next text's guess and the accuracy the labels reach on a labeled test split."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

from core.label.strategies import MISSING, classifier, trainable


@dataclass(frozen=True)
class Scores:
    accuracy: float
    macro_f1: float
    n: int  # the test texts scored


def fit(x: np.ndarray, y: np.ndarray, classes: int):
    """The classifier of the labeled rows of `y` (`MISSING` elsewhere), or None before two classes have a label."""
    if not trainable(y):
        return None
    return classifier(classes, 0).fit(x, y)


def probabilities(model, x: np.ndarray, classes: int) -> np.ndarray:
    """Each text's probability per class (a class without a label yet at 0); uniform before there is a model."""
    if model is None:
        return np.full((len(x), classes), 1.0 / classes)
    return model.predict_proba(x)


def scores(model, x_test: np.ndarray, y_test: np.ndarray, classes: int) -> Scores | None:
    """Accuracy and macro-F1 (over the classes the test texts hold) on the labeled test texts; None without a
    model or a labeled test text."""
    known = y_test != MISSING
    if model is None or not known.any():
        return None
    predicted = probabilities(model, x_test[known], classes).argmax(1)
    truth = y_test[known]
    return Scores(float(accuracy_score(truth, predicted)),
                  float(f1_score(truth, predicted, labels=np.unique(truth), average="macro", zero_division=0)),
                  int(known.sum()))
