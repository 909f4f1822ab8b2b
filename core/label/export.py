"""The labels as a labeled dataset the Data and Train pages and the CLI read like any other: `train.jsonl` (the
texts labeled, with their class by name), `unlabeled.jsonl` (the rest of the corpus, GAN-BERT's unlabeled texts)
and, where the corpus has one, `test.jsonl` (its labeled texts), written whole and renamed into place. The spec
names the session's classes, so a class without a label yet is still one of the dataset's."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from core.data import Dataset, DataSpec
from core.errors import InputError
from core.paths import atomic_write_bytes
from core.train.submission import download_stem

MIN_CLASSES = 2


def jsonl(frame: pd.DataFrame) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in frame.to_dict("records")).encode()


def labeled_frame(ds: Dataset, labels: dict[str, str]) -> pd.DataFrame:
    """The labeled texts, in the order given, as `id`, `text`, `label` (the class's name) and `source`."""
    rows = ds.train.set_index(ds.train["id"].astype(str))
    picked = rows.loc[list(labels)]
    return pd.DataFrame({"id": list(labels), "text": picked["text"].tolist(), "label": list(labels.values()),
                         "source": picked["source"].tolist()})


def export_folder(home_folder: Path, ds: Dataset) -> Path:
    """Where a session's labels are written: a folder named for the corpus, which names the dataset it loads as."""
    return home_folder / f"labels-{download_stem(ds.name)}"


def export(ds: Dataset, labels: dict[str, str], classes: tuple[str, ...], folder: Path) -> DataSpec:
    """Write the labels' dataset into `folder` and return its spec."""
    if len(set(labels.values())) < MIN_CLASSES:
        raise InputError(f"{len(labels)} label(s) of {len(set(labels.values()))} class(es): a classifier needs labeled "
                         f"texts of at least {MIN_CLASSES} classes")
    labeled = labeled_frame(ds, labels)
    rest = ds.train[~ds.train["id"].astype(str).isin(labels)]
    files = {"train.jsonl": labeled, "unlabeled.jsonl": pd.DataFrame({"id": rest["id"].astype(str),
                                                                        "text": rest["text"]})}
    if ds.test is not None:
        known = ds.test["label"] >= 0
        test = ds.test[known]
        files["test.jsonl"] = pd.DataFrame({"id": test["id"].astype(str), "text": test["text"],
                                            "label": [ds.labels[i] for i in test["label"]]})
    for name, frame in files.items():
        atomic_write_bytes(folder / name, jsonl(frame))
    return DataSpec(train=str(folder / "train.jsonl"), unlabeled=str(folder / "unlabeled.jsonl"),
                    test=str(folder / "test.jsonl") if "test.jsonl" in files else None, labels=classes)
