"""What a user should see right after loading data, before training on it: a few rows, the label mapping,
each split's class counts, and warnings about what would quietly spoil a run (an empty split, no
validation rows, a class missing from train, most texts cut by the max length)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.backbone.encode import sampled_token_lengths
from core.data import Dataset



LONG_SHARE = 0.5  # above it, a warning says how many train texts a max length would cut; below, a note


@dataclass(frozen=True)
class LoadCheck:
    preview: pd.DataFrame  # the first train rows: text (shortened), label, source
    labels: pd.DataFrame  # label id → name, as the studio maps them
    counts: pd.DataFrame  # texts per class (rows, in class order) and split (train, val, test)
    truncated: float  # share of (sampled) train texts longer than the max length
    warnings: list[str]
    max_len: int = 128

    validation_note: str = ""
    unlabeled_note: str = ""

    @property
    def length_note(self) -> str | None:
        """The truncated share in a line, when no warning says it already."""
        if self.truncated > LONG_SHARE:
            return None
        return f"{self.truncated:.1%} of train texts are longer than {self.max_len} tokens"


def check_loaded(ds: Dataset, tokenizer, max_len: int = 128, rows: int = 5, seed: int = 0) -> LoadCheck:
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
    lengths = sampled_token_lengths(ds.train["text"], tokenizer, seed)
    truncated = float(np.mean(lengths > max_len)) if len(lengths) else 0.0
    if truncated > LONG_SHARE:
        warnings.append(f"{truncated:.1%} of train texts are longer than {max_len} tokens: a max length of "
                        f"{max_len} would cut them; the Train page's max length `auto` takes the smallest of 128, 256 "
                        "and 512 that cuts at most a quarter")
    return LoadCheck(preview.reset_index(drop=True),
                     pd.DataFrame({"id": range(len(ds.labels)), "label": list(ds.labels)}), counts, truncated,
                     warnings, max_len, ds.validation_note(), ds.unlabeled_note())

