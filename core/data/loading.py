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
from core.data.labels import SEMEVAL_LABELS, infer_labels
from core.data.readers import ROW_ID, is_semeval, label_values, normalize, read_file, require_classes
from core.data.schema import UNLABELED, ColumnMapping, DataError, Dataset, DataSpec
from core.paths import cache_parquet

VAL_NAMES = {"val", "valid", "validation", "dev"}
SPLIT_NAMES = {"train", "test", "unlabeled"} | VAL_NAMES

SPLIT_STEMS = {"train": ("train",), "val": ("dev", "val", "valid", "validation"), "test": ("test",),
               "unlabeled": ("unlabeled",)}
SPLIT_SUFFIXES = (".jsonl", ".csv", ".parquet")


def official_files(directory: str | Path) -> dict[str, Path]:
    """The split files in a directory: the official Subtask B files (train, dev as validation, test and its gold
    labels), or else files named by their split (`train.jsonl`, `dev.csv` or `val.parquet`, `test.jsonl`,
    `unlabeled.jsonl`: texts without labels, as the GAN-BERT authors ship theirs)."""
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


def _attach_gold(test: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    by_id = dict(zip(gold["id"], gold["label"]))
    out = test.copy()
    out["label"] = [by_id.get(i, lab) for i, lab in zip(out["id"], out["label"])]
    return out


def _split_column(raw: pd.DataFrame, mapping: ColumnMapping, name: str) -> dict[str, pd.DataFrame]:
    """A raw file with a split column is cut by it (train, val or dev, test, unlabeled), each row keeping the id its
    place in the whole file gives it; unknown split names are an error."""
    if not mapping.split or mapping.split not in raw.columns:
        return {"train": raw}
    split = raw[mapping.split].astype(str).str.strip().str.lower()
    bad = ~split.isin(SPLIT_NAMES)
    if bad.any():
        raise DataError(f"{name}: split value(s) {', '.join(sorted(set(split[bad])))} not understood; "
                        "use train, val (or dev), test and unlabeled")
    if mapping.id not in raw.columns:
        raw = raw.assign(**{ROW_ID: [f"{Path(name).stem}-{i}" for i in range(len(raw))]})
    parts = {}
    for part, group in raw.groupby(split.map(lambda s: "val" if s in VAL_NAMES else s)):
        parts[str(part)] = group.drop(columns=mapping.split).reset_index(drop=True)
    return parts


def _raw_splits(spec: DataSpec) -> dict[str, tuple[pd.DataFrame, str]]:
    """Every split's raw frame and the name its messages give it: a directory's split files (and an official
    test's gold labels), or a train file (cut by its split column), then the files the spec names itself."""
    mapping, train = spec.mapping, Path(spec.train)
    if train.is_dir():
        raws = {role: (read_file(path), path.name) for role, path in official_files(train).items()}
    else:
        raws = {role: (frame, train.name) for role, frame in _split_column(read_file(train), mapping,
                                                                          train.name).items()}
    for role in ("test", "val", "unlabeled"):
        if (path := getattr(spec, role)) is not None:
            raws[role] = (read_file(path), Path(path).name)
    if "train" not in raws:
        raise DataError(f"{train.name}: no training rows")
    return raws


def label_set(spec: DataSpec, raws: dict[str, tuple[pd.DataFrame, str]]) -> tuple[str, ...]:
    """The dataset's classes: as declared, else every class the labeled splits name (train, validation, test and
    gold labels; an unlabeled set's labels are never read). A test class no train row shows is kept, so its texts
    are scored as errors, as the GAN-BERT authors count TREC's fine classes; Subtask B's files keep its six."""
    if spec.labels is not None:
        if len(set(spec.labels)) != len(spec.labels) or not all(str(n).strip() for n in spec.labels):
            raise DataError(f"declared classes must be distinct and not empty; got {', '.join(spec.labels)}")
        return tuple(spec.labels)
    values = pd.concat([label_values(frame, spec.mapping) for role, (frame, _) in raws.items() if role != "unlabeled"],
                       ignore_index=True)
    return infer_labels(values, is_semeval(raws["train"][0], spec.mapping))


def load_dataset(spec: DataSpec, home: Path) -> Dataset:
    """Load and validate every file of a spec (the built-in corpus: generated once, kept under the studio `home`). A
    dataset without a validation split keeps every train row in train: runs draw their validation texts themselves
    (`core.data.sampling.draw_validation`). Train rows without a label are an error, unless the spec reads them as
    unlabeled texts (`unlabeled_rows`)."""
    if spec.builtin is not None:
        return builtin_dataset(spec.builtin, home)
    if spec.train is None:
        raise DataError("no training data: give a train file or directory")
    raws = _raw_splits(spec)
    labels = label_set(spec, raws)
    need = {"train": not spec.unlabeled_rows, "val": True, "test": False, "gold": True}
    parts = {role: normalize(frame, name, spec.mapping, labels, require_labels=need.get(role, False),
                             read_labels=role != "unlabeled")[0] for role, (frame, name) in raws.items()}
    if "gold" in parts:
        parts["test"] = _attach_gold(parts["test"], parts.pop("gold"))
    train, unlabeled = parts["train"], parts.get("unlabeled")
    if spec.unlabeled_rows:  # train rows without a label join the unlabeled set
        rows = train["label"] == UNLABELED
        unlabeled = pd.concat([f for f in (unlabeled, train[rows]) if f is not None], ignore_index=True)
        train = train[~rows].reset_index(drop=True)
    name = Path(spec.train).name
    if train.empty:
        raise DataError(f"{name}: no labeled training rows")
    require_classes(train, labels, name)
    val, shared = apart_from_test(parts.get("val"), parts.get("test"))
    return Dataset(name=spec.short_name, labels=labels, train=train, val=val, test=parts.get("test"),
                   unlabeled=None if unlabeled is None or unlabeled.empty else unlabeled.assign(label=UNLABELED),
                   spec=spec, cut=sum(part.attrs.get("cut", 0) for part in parts.values()), val_in_test=shared)


def load_texts(spec: DataSpec, home: Path) -> Dataset:
    """A corpus to label (`core.label`): as `load_dataset`, but its train rows need no label (a corpus may have no
    label column at all) and its classes are the declared ones, else those its splits' labels name. A test split's
    labels are required, as they are what the labels given are scored on."""
    if spec.builtin is not None:
        return builtin_dataset(spec.builtin, home)
    if spec.train is None:
        raise DataError("no texts to label: give a file or directory")
    raws = _raw_splits(spec)
    if spec.labels is None and not any(len(label_values(frame, spec.mapping))
                                       for role, (frame, _) in raws.items() if role != "unlabeled"):
        raise DataError(f"{Path(spec.train).name}: no label names the classes; declare them (--labels 'human, "
                        "chatGPT', or 'Classes' on the page)")
    labels = label_set(spec, raws)
    parts = {role: normalize(frame, name, spec.mapping, labels, require_labels=role == "gold",
                             read_labels=role != "unlabeled")[0] for role, (frame, name) in raws.items()}
    if "gold" in parts:
        parts["test"] = _attach_gold(parts["test"], parts.pop("gold"))
    train = pd.concat([f for f in (parts["train"], parts.get("unlabeled")) if f is not None], ignore_index=True)
    test = parts.get("test")
    return Dataset(name=spec.short_name, labels=labels, train=train,
                   test=None if test is None or test.empty else test, spec=spec,
                   cut=sum(part.attrs.get("cut", 0) for part in parts.values()))


def apart_from_test(val: pd.DataFrame | None, test: pd.DataFrame | None) -> tuple[pd.DataFrame | None, int]:
    """The validation split without the texts the test split holds, and how many those were: a folder's dev file
    loaded as its test file too had runs choose their checkpoints on the test texts, unsaid. None where none is
    left, so runs draw their validation from the train pool."""
    if val is None or test is None:
        return val, 0
    inside = val["text"].isin(set(test["text"])).to_numpy()
    if not inside.any():
        return val, 0
    kept = val[~inside].reset_index(drop=True)
    return (kept if len(kept) else None), int(inside.sum())


def generated(config: CorpusConfig, home: Path, on_progress: Callable[[int, int], None] | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The synthetic corpus, generated once per config and per version of the generator, then read from
    the studio home: every training run process loads its data, and generating 15,000 texts takes ~3 s."""
    source = Path(generate.__code__.co_filename).read_bytes()
    key = hashlib.sha1(json.dumps(asdict(config), sort_keys=True).encode() + source).hexdigest()[:16]
    path = home / "corpus" / f"{key}.parquet"
    if path.exists():
        both = pd.read_parquet(path)
        return tuple(both[both["_split"] == name].drop(columns="_split").reset_index(drop=True)  # type: ignore
                     for name in ("train", "test"))
    train, test = generate(config, on_progress)
    cache_parquet(path, pd.concat([train.assign(_split="train"), test.assign(_split="test")], ignore_index=True))
    return train, test


def builtin_dataset(config: CorpusConfig, home: Path, on_progress: Callable[[int, int], None] | None = None
                    ) -> Dataset:
    """The synthetic corpus as a Dataset: a train and a test split, no validation split."""
    train, test = generated(config, home, on_progress)
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


