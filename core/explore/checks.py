"""What a user should see right after loading data, before training on it: a few rows, the label mapping,
each split's class counts, and warnings about what would quietly spoil a run (an empty split, no
validation rows, a class missing from train). What the max length cuts is said by `core.train.maxlen`, the one
figure the Train page also shows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.data import Dataset


@dataclass(frozen=True)
class LoadCheck:
    preview: pd.DataFrame  # the first train rows: text (shortened), label, source
    labels: pd.DataFrame  # label id → name, as the studio maps them
    counts: pd.DataFrame  # texts per class (rows, in class order) and split (train, val, test)
    warnings: list[str]
    validation_note: str = ""
    unlabeled_note: str = ""


def check_loaded(ds: Dataset, rows: int = 5) -> LoadCheck:
    """The check of a loaded dataset; its unlabeled set is counted, never previewed or classed."""
    names = np.array([*ds.labels, "(none)"], dtype=object)
    preview = ds.train.head(rows).assign(label=lambda f: names[f["label"].to_numpy()],
                                         text=lambda f: f["text"].str.slice(0, 160))[["text", "label", "source"]]
    counts = ds.class_counts()
    warnings = []
    for split, label in (("train", "train"), ("val", "validation"), ("test", "test")):
        frame = ds.splits.get(split)
        if split == "val" and frame is None:
            continue  # not a fault: each run draws its validation texts from train (`validation_note`)
        if frame is None or frame.empty:
            warnings.append(f"0 {label} rows" + {
                "val": ": the validation file is empty; runs will draw their validation texts from train instead",
                "test": ": runs need a test split to be scored; add a test file",
                "train": ""}[split])
    warnings += [note for note in (ds.absent_note(), ds.cut_note()) if note]
    return LoadCheck(preview.reset_index(drop=True),
                     pd.DataFrame({"id": range(len(ds.labels)), "label": list(ds.labels)}), counts, warnings,
                     ds.validation_note(), ds.unlabeled_note())

