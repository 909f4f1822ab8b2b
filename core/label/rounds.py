"""One round of labeling, as the page and the CLI show it: the labels so far (replayed from the session's log),
the classifier they make, the next text the strategy picks with that classifier's guess, and the accuracy the
labels reach on the corpus's labeled test split."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.data import Dataset
from core.label.model import Scores, fit, probabilities, scores
from core.label.strategies import MISSING, Space, pick


@dataclass(frozen=True)
class Round:
    labels: dict[str, str]  # text id -> class, in the order given
    per_class: dict[str, int]
    next: int | None  # the pool row to label next; None when every text has a label
    guess: np.ndarray | None  # the classifier's probability per class for it (None before two classes have a label)
    scores: Scores | None


class Labeling:
    """A corpus to label with its features: rows of `ds.train` are the pool, `ds.test` (where labeled) the texts the
    labels are scored on. The corpus's own train labels are never read here."""

    def __init__(self, ds: Dataset, pool_features: np.ndarray, test_features: np.ndarray):
        self.ds, self.classes = ds, ds.labels
        self.ids = ds.train["id"].astype(str).tolist()
        self.row = {text_id: i for i, text_id in enumerate(self.ids)}
        self.id_set = set(self.row)  # read at every round, and by every undo
        self.space = Space.of(pool_features)
        if ds.test is not None and len(test_features):
            self.test_x, self.test_y = self.space.scaled(test_features), ds.test["label"].to_numpy()
        else:
            self.test_x, self.test_y = np.zeros((0, self.space.x.shape[1]), np.float32), np.zeros(0, int)

    def targets(self, labels: dict[str, str]) -> np.ndarray:
        y = np.full(len(self.ids), MISSING)
        index = {name: i for i, name in enumerate(self.classes)}
        for text_id, name in labels.items():
            y[self.row[text_id]] = index[name]
        return y

    def round(self, labels: dict[str, str], strategy: str, seed: int) -> Round:
        y = self.targets(labels)
        model = fit(self.space.x, y, len(self.classes))
        chosen = pick(strategy, self.space, y, len(self.classes), seed, model=model)
        following = int(chosen[0]) if len(chosen) else None
        guess = None if model is None or following is None else \
            probabilities(model, self.space.x[[following]], len(self.classes))[0]
        per_class = {name: 0 for name in self.classes}
        for name in labels.values():
            per_class[name] += 1
        return Round(labels, per_class, following, guess, scores(model, self.test_x, self.test_y, len(self.classes)))
