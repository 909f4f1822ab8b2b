"""The one stratified sampler: the validation carve, the labeled subset of a run and the map samples
all draw rows per class through `stratified_mask`, so one seed means one rule everywhere."""

from __future__ import annotations

import numpy as np
import pandas as pd


def stratified_mask(labels: np.ndarray, seed: int, fraction: float | None = None, per_class: int | None = None,
                    at_least: int = 0) -> np.ndarray:
    """Boolean mask drawing `per_class` rows, or round(`fraction` × size) rows (and at least `at_least`),
    from each class; rows labeled below 0 (unlabeled) are never drawn. Reproducible by seed."""
    if (fraction is None) == (per_class is None):
        raise ValueError("give exactly one of fraction or per_class")
    if fraction is not None and not 0 <= fraction <= 1:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    if per_class is not None and per_class < 0:
        raise ValueError(f"per_class must be at least 0, got {per_class}")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels[labels >= 0]):
        idx = np.flatnonzero(labels == c)
        n = per_class if per_class is not None else max(at_least, int(round(fraction * len(idx))))
        mask[rng.choice(idx, size=min(n, len(idx)), replace=False)] = True
    return mask


def sample_labeled(labels: np.ndarray, fraction: float | None = None, per_class: int | None = None,
                   seed: int = 0) -> np.ndarray:
    """The labeled subset of a train pool: a fraction (0.01 is 1%) or a count per class, at least one row
    per present class. The rows outside the mask form the unlabeled set."""
    if fraction is not None and fraction == 0:
        raise ValueError("fraction must be in (0, 1], got 0")
    if per_class is not None and per_class < 1:
        raise ValueError(f"per_class must be at least 1, got {per_class}")
    return stratified_mask(labels, seed, fraction, per_class, at_least=1)


def split_off(frame: pd.DataFrame, fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stratified split of `fraction` of the rows out of `frame`, reproducible by seed."""
    take = stratified_mask(frame["label"].to_numpy(), seed, fraction)
    return frame[~take].reset_index(drop=True), frame[take].reset_index(drop=True)


def sample_per_group(frame: pd.DataFrame, group: str, strata: str, at_most: int, seed: int) -> pd.DataFrame:
    """At most about `at_most` rows of each `group` (a split), stratified by the `strata` column (a class)."""
    parts = []
    for _, rows in frame.groupby(group, sort=False):
        if len(rows) <= at_most:
            parts.append(rows)
            continue
        codes = pd.factorize(rows[strata])[0]
        parts.append(rows[stratified_mask(codes, seed, at_most / len(rows))])
    return pd.concat(parts).reset_index(drop=True)
