"""Dataset schema, loaders, validation, splits and labeled-subset sampling.

Every loader funnels through `read_table` (bytes to a raw frame) and `normalize` (raw frame to the
schema), so a path, a directory of official files and a browser upload are checked the same way.
The schema: `id`, `text`, `label` (int id into `Dataset.labels`, -1 when the row has none), `source`.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from core.cleaning import CleaningConfig, clean_texts
from core.errors import InputError
from core.corpus import SYNTHETIC_NAME, CorpusConfig, generate
from core.labels import SEMEVAL_LABELS
from core.paths import atomic_write_bytes

MAX_FILE_BYTES = 512 * 1024 * 1024  # the official train file is about 150 MB; .streamlit/config.toml matches
FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
VAL_NAMES = {"val", "valid", "validation", "dev"}
SPLIT_NAMES = {"train", "test"} | VAL_NAMES
UNLABELED = -1


class DataError(InputError):
    """Bad input data; the message names the file and says what to fix."""


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns hold what; `None` means the file has no such column."""

    text: str = "text"
    label: str | None = "label"
    source: str | None = "source"
    split: str | None = "split"
    id: str | None = "id"


@dataclass(frozen=True)
class DataSpec:
    """Where a dataset comes from; enough to load it again in another process."""

    train: str | None = None  # a file, or a directory of official subtaskB_*.jsonl files
    test: str | None = None
    val: str | None = None
    unlabeled: str | None = None
    mapping: ColumnMapping = ColumnMapping()
    builtin: CorpusConfig | None = None  # set: the synthetic corpus instead of files


@dataclass
class Dataset:
    """Labeled splits plus the label names; `labels[i]` is the name of label id i."""

    name: str
    labels: tuple[str, ...]
    train: pd.DataFrame
    test: pd.DataFrame | None = None
    val: pd.DataFrame | None = None
    unlabeled: pd.DataFrame | None = None
    synthetic: bool = False
    spec: DataSpec = field(default_factory=DataSpec)
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = fingerprint(self.labels, self.train, self.test, self.val, self.unlabeled)

    @property
    def splits(self) -> dict[str, pd.DataFrame]:
        named = {"train": self.train, "val": self.val, "test": self.test, "unlabeled": self.unlabeled}
        return {k: v for k, v in named.items() if v is not None}

    @property
    def has_source(self) -> bool:
        return bool((self.train["source"] != "").any())

    def class_counts(self) -> pd.DataFrame:
        """Rows per class and split, with every declared class present (an absent class counts 0)."""
        out = pd.DataFrame(index=pd.Index(self.labels, name="class"))
        for split, frame in self.splits.items():
            counts = frame.loc[frame["label"] >= 0, "label"].value_counts()
            out[split] = [int(counts.get(i, 0)) for i in range(len(self.labels))]
        return out


def fingerprint(labels: tuple[str, ...], *frames: pd.DataFrame | None) -> str:
    """Content hash of the data, so caches key on what the data is, not where it came from."""
    h = hashlib.sha1("\x1f".join(labels).encode())
    for frame in frames:
        h.update(b"|")
        if frame is not None:
            h.update(pd.util.hash_pandas_object(frame[["text", "label"]], index=False).values.tobytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- reading bytes

def read_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    path = Path(path)
    if not path.exists():
        raise DataError(f"File not found: {path}")
    if path.is_dir():
        raise DataError(f"{path} is a directory; give a file, or a directory holding subtaskB_*.jsonl files")
    size = path.stat().st_size
    if size > max_bytes:
        raise DataError(f"{path.name} is {size / 2**20:.0f} MB, over the {max_bytes / 2**20:.0f} MB limit")
    return path.read_bytes()


def _format_of(name: str) -> str:
    fmt = FORMATS.get(Path(name).suffix.lower())
    if fmt is None:
        raise DataError(f"{name}: unknown file type; use .jsonl, .csv or .parquet")
    return fmt


def _decode(raw: bytes, name: str) -> str:
    if b"\x00" in raw[:8192]:
        raise DataError(f"{name} looks like a binary file (it holds NUL bytes), not UTF-8 text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise DataError(
            f"{name} is not UTF-8 text: byte 0x{raw[e.start]:02x} on line {line} cannot be decoded. "
            "Save the file as UTF-8."
        ) from None


def _read_jsonl(text: str, name: str) -> pd.DataFrame:
    rows, lines = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{name}: malformed JSON on line {lineno}: {e.msg} (column {e.colno})") from None
        if not isinstance(row, dict):
            raise DataError(f"{name}: line {lineno} is a JSON {type(row).__name__}, not an object")
        rows.append(row)
        lines.append(lineno)
    frame = pd.DataFrame(rows)
    frame["_where"] = [f"line {n}" for n in lines]
    return frame


def read_table(raw: bytes, name: str, max_bytes: int = MAX_FILE_BYTES) -> pd.DataFrame:
    """Parse JSONL, CSV or Parquet bytes into a raw frame with a `_where` column for error messages."""
    if len(raw) > max_bytes:
        raise DataError(f"{name} is {len(raw) / 2**20:.0f} MB, over the {max_bytes / 2**20:.0f} MB limit")
    fmt = _format_of(name)
    if not raw.strip():
        raise DataError(f"{name} is empty")
    if fmt == "parquet":
        try:
            frame = pd.read_parquet(io.BytesIO(raw))
        except Exception as e:  # pyarrow raises several types for a non-Parquet file
            raise DataError(f"{name} is not a readable Parquet file ({type(e).__name__})") from None
        frame["_where"] = [f"row {i + 1}" for i in range(len(frame))]
    elif fmt == "jsonl":
        frame = _read_jsonl(_decode(raw, name), name)
    else:
        try:
            frame = pd.read_csv(io.StringIO(_decode(raw, name)), dtype=str, keep_default_na=False)
        except pd.errors.ParserError as e:
            raise DataError(f"{name}: malformed CSV: {e}") from None
        frame["_where"] = [f"line {i + 2}" for i in range(len(frame))]
    if frame.empty or len(frame.columns) == 1:
        raise DataError(f"{name} has no data rows")
    return frame


# ---------------------------------------------------------------- labels and schema

def _label_key(value: object) -> str:
    """Labels compare as stripped strings; 3, 3.0 and "3" are one label."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def infer_labels(values: pd.Series, semeval: bool) -> tuple[str, ...]:
    """The label set of a training file: Subtask B's when the file is in its form, else sorted values."""
    keys = {_label_key(v) for v in values}
    if semeval or {k.lower() for k in keys} <= {n.lower() for n in SEMEVAL_LABELS}:
        return SEMEVAL_LABELS  # normalize() reports values outside it, with their line
    if all(k.lstrip("-").isdigit() for k in keys):
        return tuple(str(k) for k in sorted(int(k) for k in keys))
    return tuple(sorted(keys))


def _label_ids(values: pd.Series, labels: tuple[str, ...], numeric_ids: bool) -> dict[str, int]:
    """Map each distinct raw value to an id; names match case-insensitively, ids only when allowed."""
    by_name = {n.lower(): i for i, n in enumerate(labels)}
    out: dict[str, int] = {}
    for key in {_label_key(v) for v in values}:
        if key.lower() in by_name:
            out[key] = by_name[key.lower()]
        elif numeric_ids and key.isdigit() and int(key) < len(labels):
            out[key] = int(key)
    return out


def normalize(raw: pd.DataFrame, name: str, mapping: ColumnMapping = ColumnMapping(),
              labels: tuple[str, ...] | None = None, require_labels: bool = True) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Check a raw frame and bring it to the schema; `labels` fixes the label set (else inferred)."""
    cols = [c for c in raw.columns if c != "_where"]
    if mapping.text not in raw.columns:
        raise DataError(f"{name}: no text column '{mapping.text}'; the columns are {', '.join(map(str, cols))}")
    # Subtask B rows name the generator in `model`; it stands in for a missing label.
    semeval = "model" in raw.columns and mapping.text == "text"
    label_col = mapping.label if mapping.label in raw.columns else ("model" if semeval else None)
    if label_col is None and require_labels:
        raise DataError(
            f"{name}: no label column '{mapping.label}'; the columns are {', '.join(map(str, cols))}"
        )

    text = raw[mapping.text]
    bad = text.isna() | ~text.map(lambda t: isinstance(t, str)) | (text.astype(str).str.strip() == "")
    if bad.any():
        first = raw.loc[bad, "_where"].iloc[0]
        raise DataError(f"{name}: {int(bad.sum())} row(s) have an empty or missing text (the first on {first})")

    frame = pd.DataFrame({"text": text.astype(str).values})
    frame["id"] = raw[mapping.id].astype(str).values if mapping.id in raw.columns else [
        f"{Path(name).stem}-{i}" for i in range(len(raw))]
    frame["source"] = raw[mapping.source].fillna("").astype(str).values if mapping.source in raw.columns else ""
    if mapping.split and mapping.split in raw.columns:
        frame["split"] = raw[mapping.split].astype(str).str.strip().str.lower().values

    if label_col is None:
        frame["label"] = UNLABELED
        return frame[_columns(frame)], labels or ()

    values = raw[label_col]
    missing = values.isna() | (values.astype(str).str.strip() == "")
    if missing.any():
        if require_labels:
            first = raw.loc[missing, "_where"].iloc[0]
            raise DataError(f"{name}: {int(missing.sum())} row(s) have no label (the first on {first})")
    labels = labels or infer_labels(values[~missing], semeval)
    numeric_ids = labels == SEMEVAL_LABELS
    ids = _label_ids(values[~missing], labels, numeric_ids)
    keys = values.map(_label_key)
    unknown = ~missing & ~keys.isin(ids.keys())
    if unknown.any():
        first = raw.loc[unknown, "_where"].iloc[0]
        shown = ", ".join(sorted(set(keys[unknown]))[:5])
        raise DataError(f"{name}: unknown label(s) {shown} (the first on {first}); "
                        f"known labels are {', '.join(labels)}" + (" or their ids 0-5" if numeric_ids else ""))
    frame["label"] = np.where(missing, UNLABELED, keys.map(ids).fillna(UNLABELED)).astype(int)
    return frame[_columns(frame)], labels


def _columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in ("id", "text", "label", "source", "split") if c in frame.columns]


def require_classes(frame: pd.DataFrame, labels: tuple[str, ...], name: str) -> None:
    present = sorted(set(frame.loc[frame["label"] >= 0, "label"]))
    if len(present) < 2:
        only = labels[present[0]] if present else "none"
        raise DataError(f"{name}: only one class ({only}) has rows; a classifier needs at least two")


# ---------------------------------------------------------------- loading datasets

def load_frame(raw: bytes, name: str, mapping: ColumnMapping = ColumnMapping(),
               labels: tuple[str, ...] | None = None, require_labels: bool = True
               ) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Bytes (from a path or an upload) to a schema frame and its label set."""
    return normalize(read_table(raw, name), name, mapping, labels, require_labels)


def load_file(path: str | Path, mapping: ColumnMapping = ColumnMapping(), labels: tuple[str, ...] | None = None,
              require_labels: bool = True) -> tuple[pd.DataFrame, tuple[str, ...]]:
    return load_frame(read_bytes(path), Path(path).name, mapping, labels, require_labels)


def official_files(directory: str | Path) -> dict[str, Path]:
    """The official Subtask B files in a directory: train, dev as validation, test (with its gold labels)."""
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
        raise DataError(f"{directory}: no subtaskB_train.jsonl here (found: "
                        f"{', '.join(p.name for p in directory.iterdir()) or 'nothing'})")
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


def split_off(frame: pd.DataFrame, fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stratified split of `fraction` of the rows out of `frame`, reproducible by seed."""
    rng = np.random.default_rng(seed)
    take = np.zeros(len(frame), dtype=bool)
    for _, idx in frame.groupby("label").indices.items():
        n = int(round(len(idx) * fraction))
        take[rng.choice(idx, size=n, replace=False)] = True
    return frame[~take].reset_index(drop=True), frame[take].reset_index(drop=True)


def sample_labeled(labels: np.ndarray, fraction: float | None = None, per_class: int | None = None,
                   seed: int = 0) -> np.ndarray:
    """Boolean mask of the labeled subset: stratified by class, at least one row per present class.

    Give a fraction of the train pool (0.01 is 1%) or a count per class. The rows outside the mask
    form the unlabeled set.
    """
    if (fraction is None) == (per_class is None):
        raise ValueError("give exactly one of fraction or per_class")
    if fraction is not None and not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if per_class is not None and per_class < 1:
        raise ValueError(f"per_class must be at least 1, got {per_class}")
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels[labels >= 0]):
        idx = np.flatnonzero(labels == c)
        n = per_class if per_class is not None else max(1, int(round(fraction * len(idx))))
        mask[rng.choice(idx, size=min(n, len(idx)), replace=False)] = True
    return mask


def load_dataset(spec: DataSpec, val_fraction: float = 0.1, seed: int = 0) -> Dataset:
    """Load and validate every file of a spec; validation is carved from train when none is given."""
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
    if "val" not in parts:
        parts["train"], parts["val"] = split_off(parts["train"], val_fraction, seed)
    unlabeled = None
    if spec.unlabeled is not None:
        unlabeled, _ = load_file(spec.unlabeled, mapping, labels, require_labels=False)
        unlabeled = unlabeled.assign(label=UNLABELED)
    return Dataset(name=name, labels=labels, train=parts["train"], val=parts["val"], test=parts.get("test"),
                   unlabeled=unlabeled, spec=spec)


def builtin_dataset(config: CorpusConfig = CorpusConfig(), val_fraction: float = 0.1) -> Dataset:
    """The synthetic corpus as a Dataset; validation is carved from its train split."""
    train, test = generate(config)
    frames = {}
    for split, raw in (("train", train), ("test", test)):
        frames[split], _ = normalize(raw.assign(_where=""), SYNTHETIC_NAME, labels=SEMEVAL_LABELS)
    train_frame, val_frame = split_off(frames["train"], val_fraction, config.seed)
    return Dataset(name=SYNTHETIC_NAME, labels=SEMEVAL_LABELS, train=train_frame, val=val_frame,
                   test=frames["test"], synthetic=True, spec=DataSpec(builtin=config))


def with_cleaning(dataset: Dataset, cleaning: CleaningConfig) -> Dataset:
    """The same dataset with cleaned texts in every split; a new fingerprint follows."""
    if not cleaning.active:
        return dataset
    cleaned = {k: v.assign(text=clean_texts(v["text"].tolist(), cleaning)) for k, v in dataset.splits.items()}
    return replace(dataset, fingerprint="", **cleaned)


def store_upload(raw: bytes, name: str, folder: Path, max_bytes: int = MAX_FILE_BYTES) -> Path:
    """Keep an uploaded file under the studio home so background runs can read it again.

    The stored name is content-addressed (no user text becomes a path) and keeps only the extension.
    The bytes are checked first, so a bad upload never lands on disk.
    """
    read_table(raw, name, max_bytes)
    path = folder / f"{hashlib.sha1(raw).hexdigest()[:16]}{Path(name).suffix.lower()}"
    if not path.exists():
        atomic_write_bytes(path, raw)
    return path
