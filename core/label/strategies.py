"""Which texts to label next: the query strategies, on scikit-activeml (chosen over small-text by measurement:
docs/labeling.md), scoring texts on frozen features with a logistic regression refit on the labels so far.

A pick depends only on the strategy, the seed, the features and the labels given so far (its random stream is
seeded by the seed and the number of labels), so a reload, a second tab and a simulation pick the same texts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from skactiveml.classifier import SklearnClassifier
from skactiveml.pool import RandomSampling, TypiClust, UncertaintySampling
from sklearn.cluster import MiniBatchKMeans
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

from core.errors import InputError
from core.train.methods.base import Method

MISSING = -1  # an unlabeled text in a label vector (scikit-activeml's `missing_label`)
C = Method.default_c  # the logistic regression's C: the studio's features + LR reference's
# TypiClust's neighbours for a text's typicality (Hacohen, Dekel & Weinshall 2022, "Active learning on a budget", §4)
TYPICALITY_NEIGHBOURS = 20
# the hybrid reads typicality until this many labels a class on average, then breaks ties: the low-budget regime of
# Hacohen et al. 2022 ends near where a classifier first sees every class a few times
HYBRID_START_PER_CLASS = 5
CLUSTER_DIMENSIONS = 64
# TypiClust's clusters grow with the labels (one more than there are labels): full k-means at 500 clusters took
# over a second a round on the L2R pool, mini-batch k-means a third of it (bench/speed/label_round.py)
CLUSTERING = MiniBatchKMeans


@dataclass(frozen=True)
class Strategy:
    name: str
    title: str
    about: str
    needs_labels: bool = False  # the reference that knows every text's class: simulations only, never a page


@dataclass(frozen=True)
class Space:
    """A pool's features, standardized by the whole pool's statistics (no label is read, as the frozen heads scale
    theirs), and the same texts in `CLUSTER_DIMENSIONS` principal components, where TypiClust clusters: k-means
    over MiniLM's 4,608 dimensions took 4.7 s a round at 100 labels, over these 0.19 s (bench/speed/label_round.py)."""

    x: np.ndarray
    reduced: np.ndarray
    mean: np.ndarray | None = None
    std: np.ndarray | None = None

    @classmethod
    def of(cls, features: np.ndarray) -> Space:
        raw = np.asarray(features, dtype=np.float32)
        mean, std = raw.mean(0), raw.std(0)
        std = np.where(std > 0, std, 1.0).astype(np.float32)
        x = (raw - mean) / std
        dims = min(CLUSTER_DIMENSIONS, *x.shape)
        reduced = PCA(dims, random_state=0).fit_transform(x) if dims < x.shape[1] else x
        return cls(x, np.ascontiguousarray(reduced, dtype=np.float32), mean, std)

    def scaled(self, features: np.ndarray) -> np.ndarray:
        """Other texts' features (a test split's) scaled as the pool's are."""
        return (np.asarray(features, dtype=np.float32) - self.mean) / self.std


def uncertain(method: str) -> Callable:
    def query(space: Space, y: np.ndarray, classes: int, rng: np.random.RandomState, batch: int,
              model: SklearnClassifier | None = None) -> np.ndarray:
        if not trainable(y):  # a random start
            return unstratified(space, y, classes, rng, batch)
        fitted = model is not None  # the round's classifier, fitted on these labels already: not fitted twice
        return UncertaintySampling(method=method, missing_label=MISSING, random_state=rng).query(
            space.x, y, model if fitted else classifier(classes, rng), fit_clf=not fitted, batch_size=batch)
    return query


def typical(space: Space, y: np.ndarray, classes: int, rng: np.random.RandomState, batch: int,
            model: SklearnClassifier | None = None) -> np.ndarray:
    neighbours = min(TYPICALITY_NEIGHBOURS, len(y) - 1)
    return TypiClust(missing_label=MISSING, random_state=rng, k=neighbours, cluster_algo=CLUSTERING).query(
        space.reduced, y, batch_size=batch)


def hybrid(space: Space, y: np.ndarray, classes: int, rng: np.random.RandomState, batch: int,
           model: SklearnClassifier | None = None) -> np.ndarray:
    if (y != MISSING).sum() < HYBRID_START_PER_CLASS * classes:
        return typical(space, y, classes, rng, batch)
    return uncertain("margin_sampling")(space, y, classes, rng, batch, model)


def unstratified(space: Space, y: np.ndarray, classes: int, rng: np.random.RandomState, batch: int,
                 model: SklearnClassifier | None = None) -> np.ndarray:
    return RandomSampling(missing_label=MISSING, random_state=rng).query(space.x, y, batch_size=batch)


STRATEGIES = {s.name: s for s in (
    Strategy("random", "Random (unstratified)",
             "any unlabeled text, drawn at random: what a user without labels can do"),
    Strategy("entropy", "Uncertainty (entropy)", "the text whose predicted classes are most evenly spread; "
             "random until two classes have a label"),
    Strategy("margin", "Uncertainty (breaking ties)", "the text whose two likeliest classes are closest "
             "(Luo et al. 2005's breaking ties); random until two classes have a label"),
    Strategy("typiclust", "Diversity (TypiClust)", "the most typical text of the largest cluster no label covers yet "
             "(Hacohen et al. 2022): representative texts for a cold start"),
    Strategy("hybrid", "TypiClust, then breaking ties", f"TypiClust until {HYBRID_START_PER_CLASS} labels a class "
             "on average, then breaking ties: typical texts while the model knows little, uncertain ones after"),
    Strategy("stratified", "Stratified random (reference)", "the same count of texts from every class, drawn "
             "knowing their classes: today's draw, which no user without labels can make", needs_labels=True),
)}
QUERIES = {"random": unstratified, "entropy": uncertain("entropy"), "margin": uncertain("margin_sampling"),
           "typiclust": typical, "hybrid": hybrid}


def trainable(y: np.ndarray) -> bool:
    """Whether the labels make a classifier: not before two classes have a label."""
    return len(np.unique(y[y != MISSING])) >= 2


def classifier(classes: int, rng: np.random.RandomState | int | None = None) -> SklearnClassifier:
    """A logistic regression over every class, fitted on the labeled rows alone."""
    return SklearnClassifier(LogisticRegression(C=C, max_iter=1000), classes=np.arange(classes),
                             missing_label=MISSING, random_state=rng)


def strategy(name: str) -> Strategy:
    if name not in STRATEGIES:
        raise InputError(f"unknown strategy '{name}'; the strategies are {', '.join(STRATEGIES)}")
    return STRATEGIES[name]


def pick(name: str, space: Space, y: np.ndarray, classes: int, seed: int, batch: int = 1,
         model: SklearnClassifier | None = None) -> np.ndarray:
    """The indices (into the pool) of the next `batch` texts to label; `y` holds each text's class id, `MISSING`
    where unlabeled. `model`: the classifier already fitted on these labels (`core.label.model.fit`), if any."""
    if strategy(name).needs_labels:
        raise InputError(f"'{name}' knows every text's class: it is a reference for simulations, not a strategy to "
                         "label with")
    unlabeled = int((y == MISSING).sum())
    if unlabeled == 0:
        return np.zeros(0, dtype=int)
    rng = np.random.RandomState([seed, int((y != MISSING).sum())])
    return np.asarray(QUERIES[name](space, y, classes, rng, min(batch, unlabeled), model), dtype=int)

