"""Loading whole datasets: the built-in corpus, a directory of split files (the official Subtask B files, or
train/dev/test files), or files with a column mapping. Nothing is set aside here: a dataset without a validation
split has none, and each run draws its validation texts by its own rule (`core.data.sampling.Validation`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import pandas as pd

from core.data.cleaning import CleaningConfig, clean_texts
from core.data.corpus import SYNTHETIC_NAME, CorpusConfig, generate
from core.data.labels import SEMEVAL_LABELS
from core.data.readers import load_file, normalize, require_classes
from core.data.schema import UNLABELED, DataError, DataSpec, Dataset
from core.paths import atomic_write_parquet, studio_home

VAL_NAMES = {"val", "valid", "validation", "dev"}
SPLIT_NAMES = {"train", "test"} | VAL_NAMES

SPLIT_STEMS = {"train": ("train",), "val": ("dev", "val", "valid", "validation"), "test": ("test",)}
SPLIT_SUFFIXES = (".jsonl", ".csv", ".parquet")


def official_files(directory: str | Path) -> dict[str, Path]:
    """The split files in a directory: the official Subtask B files (train, dev as validation, test and its gold
    labels), or else files named by their split (`train.jsonl`, `dev.csv` or `val.parquet`, `test.jsonl`)."""
    directory = Path(directory)
    found: dict[str, Path] = {}
    for split, stem in (("train", "subtaskB_train"), ("val", "subtaskB_dev"), ("test", "subtaskB_test")):
        path = directory / f"{stem}.jsonl"
        if path.exists():
            found[split] = path
    gold = sorted(p for p in directory.glob("subtaskB*gold*.jsonl"))
    if gold:
        found["gold"] = gold[0]
    if "train" not in found:
        found = {}
        for split, stems in SPLIT_STEMS.items():
            named = [directory / f"{stem}{suffix}" for stem in stems for suffix in SPLIT_SUFFIXES]
            if present := [p for p in named if p.is_file()]:
                found[split] = present[0]
    if "train" not in found:
        raise DataError(f"{directory}: no subtaskB_train.jsonl or train.jsonl (.csv, .parquet) here (found: "
                        f"{', '.join(sorted(p.name for p in directory.iterdir())) or 'nothing'})")
    return found


def _attach_gold(test: pd.DataFrame, gold_path: Path, labels: tuple[str, ...]) -> pd.DataFrame:
    gold, _ = load_file(gold_path, labels=labels)
    by_id = dict(zip(gold["id"], gold["label"]))
    out = test.copy()
    out["label"] = [by_id.get(i, lab) for i, lab in zip(out["id"], out["label"])]
    return out


def _split_column(frame: pd.DataFrame, name: str) -> dict[str, pd.DataFrame]:
    """A file with a split column is divided by it; unknown split names are an error."""
    if "split" not in frame.columns:
        return {"train": frame}
    bad = ~frame["split"].isin(SPLIT_NAMES)
    if bad.any():
        raise DataError(f"{name}: split value(s) {', '.join(sorted(set(frame.loc[bad, 'split'])))} not understood; "
                        "use train, val (or dev) and test")
    parts = {}
    for split, group in frame.groupby(frame["split"].map(lambda s: "val" if s in VAL_NAMES else s)):
        parts[split] = group.drop(columns="split").reset_index(drop=True)
    return parts


def load_dataset(spec: DataSpec) -> Dataset:
    """Load and validate every file of a spec. A dataset without a validation split keeps every train row in
    train: runs draw their validation texts themselves (`core.data.sampling.draw_validation`)."""
    if spec.builtin is not None:
        return builtin_dataset(spec.builtin)
    if spec.train is None:
        raise DataError("no training data: give a train file or directory")
    mapping, parts, name = spec.mapping, {}, Path(spec.train).name
    if Path(spec.train).is_dir():
        files = official_files(spec.train)
        parts["train"], labels = load_file(files["train"], mapping)
        if "val" in files:
            parts["val"], _ = load_file(files["val"], mapping, labels)
        if "test" in files:
            parts["test"], _ = load_file(files["test"], mapping, labels, require_labels=False)
            if "gold" in files:
                parts["test"] = _attach_gold(parts["test"], files["gold"], labels)
    else:
        frame, labels = load_file(spec.train, mapping)
        parts = _split_column(frame, name)
    for split, path in (("test", spec.test), ("val", spec.val)):
        if path is not None:
            parts[split], _ = load_file(path, mapping, labels, require_labels=(split == "val"))
    if "train" not in parts:
        raise DataError(f"{name}: no training rows")
    require_classes(parts["train"], labels, name)
    unlabeled = None
    if spec.unlabeled is not None:
        unlabeled, _ = load_file(spec.unlabeled, mapping, labels, require_labels=False)
        unlabeled = unlabeled.assign(label=UNLABELED)
    return Dataset(name=spec.short_name, labels=labels, train=parts["train"], val=parts.get("val"),
                   test=parts.get("test"), unlabeled=unlabeled, spec=spec)


def generated(config: CorpusConfig, on_progress: Callable[[int, int], None] | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The synthetic corpus, generated once per config and per version of the generator, then read from
    the studio home: every training run process loads its data, and generating 15,000 texts takes ~3 s."""
    source = Path(generate.__code__.co_filename).read_bytes()
    key = hashlib.sha1(json.dumps(asdict(config), sort_keys=True).encode() + source).hexdigest()[:16]
    path = studio_home() / "corpus" / f"{key}.parquet"
    if path.exists():
        both = pd.read_parquet(path)
        return tuple(both[both["_split"] == name].drop(columns="_split").reset_index(drop=True)  # type: ignore
                     for name in ("train", "test"))
    train, test = generate(config, on_progress)
    atomic_write_parquet(path, pd.concat([train.assign(_split="train"), test.assign(_split="test")],
                                         ignore_index=True))
    return train, test


def builtin_dataset(config: CorpusConfig = CorpusConfig(),
                    on_progress: Callable[[int, int], None] | None = None) -> Dataset:
    """The synthetic corpus as a Dataset: a train and a test split, no validation split."""
    train, test = generated(config, on_progress)
    frames = {}
    for split, raw in (("train", train), ("test", test)):
        frames[split], _ = normalize(raw.assign(_where=""), SYNTHETIC_NAME, labels=SEMEVAL_LABELS)
    return Dataset(name=SYNTHETIC_NAME, labels=SEMEVAL_LABELS, train=frames["train"], test=frames["test"],
                   synthetic=True, spec=DataSpec(builtin=config))


def with_cleaning(dataset: Dataset, cleaning: CleaningConfig) -> Dataset:
    """The same dataset with cleaned texts in every split; a new fingerprint follows."""
    if not cleaning.active:
        return dataset
    cleaned = {k: v.assign(text=clean_texts(v["text"].tolist(), cleaning)) for k, v in dataset.splits.items()}
    return replace(dataset, fingerprint="", **cleaned)


