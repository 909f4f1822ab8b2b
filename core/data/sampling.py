"""The one stratified sampler: the validation carve, the labeled subset of a run and the map samples
all draw rows per class through `stratified_mask`, so one seed means one rule everywhere."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.errors import InputError


@dataclass(frozen=True)
class Amount:
    """A labeled amount: a share of the train pool (0.01 is 1%) or a count of texts per class, exactly one.
    The one place that rule lives: configs, the sampler, sweeps, the CLI and the Train page build their
    amounts through it."""

    fraction: float | None = None
    per_class: int | None = None

    def __post_init__(self) -> None:
        if (self.fraction is None) == (self.per_class is None):
            raise InputError("give exactly one of fraction or per_class")
        if self.fraction is not None and not 0 < self.fraction <= 1:
            raise InputError(f"fraction must be in (0, 1] (0.01 is 1%), got {self.fraction}")
        if self.per_class is not None:
            if not (self.per_class >= 1 and float(self.per_class).is_integer()):
                raise InputError(f"labeled texts per class (per_class) must be a whole number of at least 1, got "
                                 f"{self.per_class:g}")
            object.__setattr__(self, "per_class", int(self.per_class))  # 5.0 typed or parsed is 5

    @classmethod
    def chosen(cls, fraction: float | None, per_class: int | None) -> Amount:
        """A count per class when one is given, else the fraction (whose flag and widget have a default)."""
        return cls(per_class=per_class) if per_class is not None else cls(fraction=fraction)

    @property
    def label(self) -> str:
        """As the user chose it: '5/class', or a share such as '1%'."""
        return f"{self.per_class}/class" if self.per_class is not None else f"{self.fraction * 100:.4g}%"

    def fields(self) -> dict:
        """As a config's two fields."""
        return {"fraction": self.fraction, "per_class": self.per_class}

    def short_classes(self, sizes: Mapping[str, int]) -> dict[str, int]:
        """The classes (name: train-pool size) holding fewer texts than the count per class asks for: each is
        labeled whole, and leaves GAN-BERT no unlabeled text of its own. An absent class asks for nothing."""
        if self.per_class is None:
            return {}
        return {name: n for name, n in sizes.items() if 0 < n < self.per_class}

    def rows_of(self, size: int) -> int:
        """Rows drawn from a class of `size`: the count (as many as there are), or the share, at least one."""
        if self.per_class is not None:
            return min(self.per_class, size)
        return max(1, int(round(self.fraction * size)))


def stratified_mask(labels: np.ndarray, seed: int, rows_of: Callable[[int], int]) -> np.ndarray:
    """Boolean mask drawing `rows_of(size)` rows from each class (of `size` rows); rows labeled below 0
    (unlabeled) are never drawn. Reproducible by seed."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels[labels >= 0]):
        idx = np.flatnonzero(labels == c)
        mask[rng.choice(idx, size=min(rows_of(len(idx)), len(idx)), replace=False)] = True
    return mask


def share(fraction: float) -> Callable[[int], int]:
    """round(`fraction` × size) rows of a class: the validation carve and the maps' samples."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"a share must be in [0, 1], got {fraction}")
    return lambda size: int(round(fraction * size))


def sample_labeled(labels: np.ndarray, amount: Amount, seed: int = 0) -> np.ndarray:
    """The labeled subset of a train pool: at least one row per present class. The rows outside the mask
    form the unlabeled set."""
    return stratified_mask(labels, seed, amount.rows_of)


def split_off(frame: pd.DataFrame, fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stratified split of `fraction` of the rows out of `frame`, reproducible by seed."""
    take = stratified_mask(frame["label"].to_numpy(), seed, share(fraction))
    return frame[~take].reset_index(drop=True), frame[take].reset_index(drop=True)


def sample_per_group(frame: pd.DataFrame, group: str, strata: str, at_most: int, seed: int) -> pd.DataFrame:
    """At most about `at_most` rows of each `group` (a split), stratified by the `strata` column (a class)."""
    parts = []
    for _, rows in frame.groupby(group, sort=False):
        if len(rows) <= at_most:
            parts.append(rows)
            continue
        codes = pd.factorize(rows[strata])[0]
        parts.append(rows[stratified_mask(codes, seed, share(at_most / len(rows)))])
    return pd.concat(parts).reset_index(drop=True)
