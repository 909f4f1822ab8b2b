"""UMAP layouts of a few thousand texts in seconds on a laptop CPU, with their epochs reported as they run.

The map used to be fitted on train and then had every text placed on it. On l2r (6,001 train and 1,867 test
texts, a 50-d SVD of TF-IDF, 2 busy cores) that took 31 s to fit and 3 s to place, or 55 s and 121 s the first
time after an install, while numba compiled pynndescent's index and its search. Here scikit-learn finds the exact
neighbours (0.3 s, no numba) and one `fit_transform` of 200 epochs lays out the texts the map shows in about 5 s.
The map is as faithful as before, or more: trustworthiness went from 0.940 to 0.941 and the share of each text's
10 nearest neighbours that stay its neighbours on the map from 0.20 to 0.26. On the built-in corpus, the share of
map neighbours of the same class went from 0.32 to 0.34.
"""

from __future__ import annotations

import io
import re
import sys
import warnings
from collections.abc import Callable

import numpy as np

VERSION = 2  # part of the map's cache key: exact neighbours, fitted on the texts shown, EPOCHS epochs
EPOCHS = 200  # UMAP's own default above 10,000 points; its 500 below that took twice as long for a like map
NEIGHBOURS = 15  # UMAP's default


class _EpochReport(io.TextIOBase):
    """A file for UMAP's tqdm bar of epochs, its only report of progress: each write is read back as
    (done, total)."""

    def __init__(self, on_progress: Callable[[int, int], None]) -> None:
        self.on_progress = on_progress

    def write(self, text: str) -> int:
        if match := re.search(r"(\d+)/(\d+)", text):
            self.on_progress(int(match[1]), int(match[2]))
        return len(text)


def umap_xy(vectors: np.ndarray, seed: int = 0, on_stage: Callable[[str], None] = lambda stage: None,
            on_progress: Callable[[int, int], None] = lambda done, total: None) -> np.ndarray:
    """2-D UMAP coordinates of `vectors` (a few thousand rows of a dense reduction), fitted on them all.

    `on_stage` hears each step as it starts; `on_progress` hears the epochs, the long step, as (done, total).
    """
    if "umap" not in sys.modules:
        on_stage("loading UMAP (3 s; 15-20 s the first time after an install, while numba compiles it)")
    import umap  # imported here: only this view needs it
    from sklearn.neighbors import NearestNeighbors

    k = min(NEIGHBOURS, len(vectors) - 1)
    on_stage(f"finding the {k} nearest neighbours of each of {len(vectors):,} texts")
    dists, indices = NearestNeighbors(n_neighbors=k).fit(vectors).kneighbors(vectors)  # each text first, itself
    on_stage(f"laying out {len(vectors):,} texts in 2-D")
    # miniters=1: tqdm's monitor thread redraws only bars that skip updates, and a write from that thread would
    # reach the page from outside its script
    bar = {"disable": False, "file": _EpochReport(on_progress), "bar_format": "{n}/{total}", "mininterval": 0.25,
           "miniters": 1}
    reducer = umap.UMAP(n_neighbors=k, n_components=2, n_epochs=EPOCHS, random_state=seed, n_jobs=1,
                        precomputed_knn=(indices, dists, None), tqdm_kwds=bar)
    with warnings.catch_warnings():  # no search index, so no `transform`: nothing is placed on the map later
        warnings.filterwarnings("ignore", message="precomputed_knn")
        return reducer.fit_transform(vectors)


def warm() -> None:
    """Import UMAP and lay out 300 random points as a map does, so numba has compiled what `umap_xy` runs before a
    user asks for a map: on 2 cores the import takes 3 s (20 s the first time after an install) and the first
    layout 9-14 s of compilation."""
    umap_xy(np.random.default_rng(0).normal(size=(300, 50)).astype(np.float32))
