"""The one stratified sampler: a run's labeled rows, its validation rows and the map samples all draw rows per
class through `stratified_mask`, so one seed means one rule everywhere."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

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


Seed = int | tuple[int, ...]  # a tuple names a stream of its own: (seed, VALIDATION_STREAM)


def stratified_mask(labels: np.ndarray, seed: Seed, rows_of: Callable[[int], int] | Mapping[int, int]) -> np.ndarray:
    """Boolean mask drawing `rows_of(size)` rows from each class (of `size` rows), or `rows_of[class]` rows when
    it maps classes to counts; rows labeled below 0 (unlabeled) are never drawn. Reproducible by seed."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels[labels >= 0]):
        idx = np.flatnonzero(labels == c)
        wanted = rows_of.get(int(c), 0) if isinstance(rows_of, Mapping) else rows_of(len(idx))
        mask[rng.choice(idx, size=min(wanted, len(idx)), replace=False)] = True
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


VALIDATION_STREAM = 1  # validation rows are drawn from their own random stream, never the labeled rows' draw


@dataclass(frozen=True)
class Validation:
    """Which labeled texts a run validates on (checkpoint selection, early stopping, its curves). Every one of them
    is a label the run reads, so it counts toward the run's labels (Perez, Kiela & Cho 2021: selecting on a large
    labeled validation set overstates few-label results).

    Written as text in a config: `auto` (as many per class as the run labels: 5/class validates on 5 more per
    class, a fraction on the same count as its labeled rows), `N/class`, a share such as `0.1` (of the validation
    split, or of the train pool's rows left unlabeled), `split` (the whole validation split), `none` (no validation:
    the last checkpoint), and `carve:F` for runs made before this rule (a share F of train set aside for every
    seed, or the whole validation split when the data had one)."""

    rule: str  # auto | per_class | share | split | none | carve
    value: float | None = None

    RULES: ClassVar[tuple[str, ...]] = ("auto", "N/class", "a share such as 0.1", "split", "none")

    @classmethod
    def parse(cls, text: str) -> Validation:
        word = str(text).strip().lower()
        if word in ("auto", "split", "none"):
            return cls(word)
        try:
            if word.startswith("carve:"):
                return cls("carve", float(word.removeprefix("carve:")))
            if word.endswith("/class"):
                count = float(word.removesuffix("/class"))
                if count >= 1 and count.is_integer():
                    return cls("per_class", count)
            else:
                share_ = float(word.rstrip("%")) / (100 if word.endswith("%") else 1)
                if 0 < share_ <= 1:
                    return cls("share", share_)
        except ValueError:
            pass
        raise InputError(f"validation must be auto, N/class (a whole number of at least 1), a share in (0, 1], split "
                         f"or none; got {text!r}")

    def __str__(self) -> str:
        if self.rule == "per_class":
            return f"{self.value:.0f}/class"
        if self.rule in ("share", "carve"):
            return ("carve:" if self.rule == "carve" else "") + f"{self.value:g}"
        return self.rule

    def planned(self, labeled: int, classes: int, split: int | None, pool: int) -> int:
        """The validation rows a run will read, before it draws them: `labeled` texts labeled over `classes`,
        from a validation split of `split` rows (None: none, so from the `pool`'s rows)."""
        source = split if split is not None else pool - labeled
        wanted = {"auto": labeled, "per_class": (self.value or 0) * classes, "none": 0,
                  "share": round((self.value or 0) * source)}.get(self.rule, source)
        return int(min(wanted, source))

    def counts(self, source: np.ndarray, labeled: np.ndarray) -> Callable[[int], int] | dict[int, int] | None:
        """How many rows each class of `source` gives (labels of the validation source; `labeled`, the labels of
        the run's labeled rows): a count per class, or a rule on the class's size; None for every row."""
        if self.rule == "auto":
            return {int(c): int(n) for c, n in zip(*np.unique(labeled[labeled >= 0], return_counts=True))}
        if self.rule == "per_class":
            return lambda size: int(self.value)
        if self.rule == "share":
            return share(self.value)
        if self.rule == "none":
            return lambda size: 0
        return None


def labels_read(amount: Amount, rule: Validation, labeled: int | None = None, val_rows: int | None = None,
                reference: bool = False) -> str:
    """Every label a run reads, said beside its labeled amount: '5/class + 5/class validation = 50 labels', or
    before it runs (counts unknown) '5/class + 5/class validation'. `reference`: a method that reads its labeled
    rows alone."""
    n = "" if labeled is None or amount.per_class is not None else f" ({labeled:,})"
    chosen = f"{amount.label}{n}"
    total = None if labeled is None or val_rows is None else labeled + val_rows
    if rule.rule == "none":
        part = "no validation" + (" (a reference reads its labeled rows alone)" if reference else "")
        return f"{chosen}, {part}" + (f" = {labeled:,} labels" if labeled is not None else "")
    count = f" ({val_rows:,})" if val_rows is not None else ""
    if val_rows == 0 and labeled is not None:  # every train text labeled, no validation split: none left
        return f"{chosen} + no validation text left to draw = {labeled:,} labels"
    if rule.rule == "auto":
        short = amount.per_class is not None and None not in (val_rows, labeled) and val_rows < labeled
        part = f"{amount.label} validation" if amount.per_class is not None and not short else \
            f"{val_rows:,} validation" + (f" ({amount.label} where a class had that many left; some had fewer)"
                                          if short else "") \
            if val_rows is not None else "as many validation texts"
    elif rule.rule == "per_class":
        part = f"{rule.value:.0f}/class validation"
    elif rule.rule == "share":
        part = f"{rule.value:.0%} validation{count}"
    elif rule.rule == "split":
        part = f"the validation split{count}"
    else:
        part = f"{'' if val_rows is None else f'{val_rows:,} '}validation set aside by the earlier rule"
    return f"{chosen} + {part}" + (f" = {total:,} labels" if total is not None else "")


def draw_validation(rule: Validation, pool_labels: np.ndarray, labeled: np.ndarray, val_labels: np.ndarray | None,
                    seed: int) -> tuple[str, np.ndarray]:
    """A run's validation rows: from the dataset's validation split when it has one ('val', indices into it),
    else from the train pool's rows outside the labeled ones ('pool', indices into it); ('none', []) when the rule
    reads none. Drawn by the run's seed on a stream of their own, the same for every method."""
    if rule.rule == "none":
        return "none", np.zeros(0, dtype=np.int64)
    if val_labels is not None:
        counts = rule.counts(val_labels, pool_labels[labeled])
        if counts is None:
            return "val", np.arange(len(val_labels))
        return "val", np.flatnonzero(stratified_mask(val_labels, (seed, VALIDATION_STREAM), counts))
    if rule.rule == "split":
        raise InputError("validation 'split' needs a validation split (a --val file, a dev file in the folder, or a "
                         "split column); this dataset has none, so choose auto, N/class or a share")
    rest = pool_labels.copy()
    rest[labeled] = -1  # a labeled row is never also a validation row
    counts = rule.counts(rest, pool_labels[labeled])
    return "pool", np.flatnonzero(stratified_mask(rest, (seed, VALIDATION_STREAM), counts))


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
    return pd.concat(parts).reset_index(drop=True) if parts else frame.iloc[:0]
