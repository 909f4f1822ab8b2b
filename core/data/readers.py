"""Reading data: bytes (a path or a browser upload) to a checked frame in the schema.

Every loader funnels through `read_table` (bytes to a raw frame) and `normalize` (raw frame to the
schema), so a path, a directory of official files and an upload are checked the same way.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd

from core.data.labels import SEMEVAL_LABELS, _label_ids, _label_key, infer_labels, no_label
from core.data.schema import MAX_TEXT_CHARS, UNLABELED, ColumnMapping, DataError
from core.data.tables import INTERNAL, MAX_FILE_BYTES, read_table
from core.paths import atomic_write_bytes

ROW_ID = "_id"  # a row's id by its place in its file, given before a file is cut by its split column


# ---------------------------------------------------------------- reading bytes

def read_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, never more than `max_bytes`. A device, FIFO or socket (a `zero.csv` linking to
    /dev/zero) is refused before it is read: `st_size` is 0 there, and a FIFO would block a reader for ever. The
    file is opened without blocking and checked on the open descriptor, so it cannot be swapped in between, and
    read to the limit plus one byte, so a file that grows (or a /proc file, whose size reads 0) cannot pass it."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"File not found: {path}")
    if path.is_dir():
        raise DataError(f"{path} is a directory; give a file, or a directory holding subtaskB_*.jsonl files")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise DataError(f"{path.name} cannot be read: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise DataError(f"{path.name} is {kind}, not a regular file; give a data file")
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise DataError(f"{path.name} is {size / 2**20:.0f} MB, over the {max_bytes / 2**20:.0f} MB limit")
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise DataError(f"{path.name} holds more than the {max_bytes / 2**20:.0f} MB limit")
    return raw


# ---------------------------------------------------------------- labels and schema

def is_semeval(raw: pd.DataFrame, mapping: ColumnMapping) -> bool:
    """A Subtask B file: its rows name the generator in `model`."""
    return "model" in raw.columns and mapping.text == "text"


def label_column(raw: pd.DataFrame, mapping: ColumnMapping) -> str | None:
    """The column a frame's labels are read from: the mapped one, else a Subtask B file's `model` (the generator's
    name stands in for a missing label), else none."""
    return mapping.label if mapping.label in raw.columns else ("model" if is_semeval(raw, mapping) else None)


def label_values(raw: pd.DataFrame, mapping: ColumnMapping) -> pd.Series:
    """A raw frame's label values, rows without one left out: what the label set of a dataset is read from."""
    column = label_column(raw, mapping)
    if column is None:
        return pd.Series([], dtype=object)
    return raw[column][~no_label(raw[column])]


COLUMN_NAME = re.compile(r"^[\w .()/-]{1,64}$")  # what a table's header names look like


def columns_named(cols: list) -> str:
    """The columns a message names: a table's header, and no other content of the file. A file that is no table
    (a symlink to /etc/shadow read as CSV) has its first line as a one-column header, which an error had echoed."""
    if not cols or not all(COLUMN_NAME.match(str(c)) for c in cols):
        return "the file reads as no table with named columns (is it CSV, JSONL or Parquet with a header?)"
    return (f"the columns are {', '.join(map(str, cols[:50]))}"
            + (f" and {len(cols) - 50} more" if len(cols) > 50 else ""))


def check_unique_ids(ids: pd.Series, where: pd.Series, name: str, column: str) -> None:
    """Each row's id its own: predictions, submissions and McNemar's pairs go by id, and 8,000 test rows sharing one
    had McNemar take 20 s and 7.5 GB to say "different texts"."""
    values = ids.to_numpy()
    shared = ids.duplicated(keep=False).to_numpy()
    if not shared.any():
        return
    first = values[shared][0]
    lines = where.to_numpy()[shared & (values == first)][:2].tolist()
    raise DataError(f"{name}: {int(shared.sum())} rows share their id with another row (id {str(first)[:40]!r} on "
                    f"{lines[0]} and {lines[1]}); predictions and paired tests go by id, so each row needs one of its "
                    f"own: fix the ids, or remove the '{column}' column to have the rows numbered")


def number_text(value):
    """A number in a text column as text, as a CSV reads it (a column of ints and floats holds 12345 as 12345.0:
    a whole number is written whole); anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or value != value:
        return value
    return str(int(value)) if float(value).is_integer() else str(value)


def id_strings(column: pd.Series, numbered) -> list[str]:
    """A file's ids as text: whole numbers as integers (a JSONL column of ints with a null in it reads as floats,
    "3.0"), and a row without one (missing, null or empty) numbered by its place, as in a file without ids."""
    values = column.to_numpy(dtype=object)
    out = []
    for value, number in zip(values, numbered):
        if value is None or (isinstance(value, float) and value != value) or not str(value).strip():
            out.append(str(number))
        elif isinstance(value, float) and value.is_integer():
            out.append(str(int(value)))
        else:
            out.append(str(value))
    return out


INVISIBLE = {"Zs", "Zl", "Zp", "Cc", "Cf"}  # spaces, separators, controls and format characters (U+200B, U+FEFF)
# letters and symbols that draw nothing: the Hangul fillers and the braille blank (a text of U+3164 alone had been
# accepted as one)
BLANK_CHARACTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def blank(text: str) -> bool:
    """Whether a text holds nothing to read: only whitespace or invisible characters (a text of zero-width spaces
    had been accepted as one)."""
    return not text.strip() or all(c in BLANK_CHARACTERS or unicodedata.category(c) in INVISIBLE for c in text)


def normalize(raw: pd.DataFrame, name: str, mapping: ColumnMapping = ColumnMapping(),
              labels: tuple[str, ...] | None = None, require_labels: bool = True, read_labels: bool = True
              ) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Check a raw frame and bring it to the schema; `labels` fixes the label set (else inferred). `read_labels`
    off: every row is unlabeled whatever its label column holds (an unlabeled set: the authors' `UNK:UNK`)."""
    # a Parquet file's categorical columns as plain values: fillna and `~` on a Categorical fail
    raw = raw.apply(lambda c: c.astype(object) if isinstance(c.dtype, pd.CategoricalDtype) else c)
    cols = [c for c in raw.columns if c not in INTERNAL]
    if mapping.text not in raw.columns:
        raise DataError(f"{name}: no text column '{mapping.text}'; {columns_named(cols)}. "
                        "Name the right one with --text-col (CLI) or 'Text column' (on the page)")
    semeval = is_semeval(raw, mapping)
    label_col = label_column(raw, mapping) if read_labels else None
    if label_col is None and require_labels and read_labels:
        raise DataError(
            f"{name}: no label column '{mapping.label}'; {columns_named(cols)}. "
            "Name the right one with --label-col (CLI) or 'Label column' (on the page)")

    text = raw[mapping.text].astype(object)  # a categorical column compares and maps like plain strings
    # a number is text as it is written (a CSV reads it so); a list or an object is not, and says so
    text = text.map(number_text)
    structured = text.map(lambda t: not isinstance(t, str) and t is not None and not (isinstance(t, float) and t != t))
    if structured.any():
        first = raw.loc[structured, "_where"].iloc[0]
        value = text[structured].iloc[0]
        kind = "list" if isinstance(value, (list, tuple, np.ndarray)) else "struct" if isinstance(value, dict) else \
            type(value).__name__
        raise DataError(f"{name}: {int(structured.sum())} row(s) hold a {kind} where their text should be (the first "
                        f"on {first}); the '{mapping.text}' column must hold strings")
    bad = text.isna() | ~text.map(lambda t: isinstance(t, str) and not blank(t))
    if bad.any():
        first = raw.loc[bad, "_where"].iloc[0]
        raise DataError(f"{name}: {int(bad.sum())} row(s) have an empty or missing text (the first on {first}); a text "
                        "of invisible characters alone (zero-width spaces, Hangul fillers, the braille blank) is empty "
                        "too")

    frame = pd.DataFrame({"text": text.astype(str).values})
    numbered = raw[ROW_ID].values if ROW_ID in raw.columns else [f"{Path(name).stem}-{i}" for i in range(len(raw))]
    frame["id"] = id_strings(raw[mapping.id], numbered) if mapping.id in raw.columns else numbered
    check_unique_ids(frame["id"], raw["_where"] if "_where" in raw.columns else
                     pd.Series([f"row {i + 1}" for i in range(len(raw))]), name, mapping.id)
    # how the file named its rows, for files written back to it (a submission's ids must match the gold file's)
    frame.attrs["ids"] = ("row" if mapping.id not in raw.columns else
                          "int" if pd.api.types.is_integer_dtype(raw[mapping.id]) else "column")
    frame["source"] = raw[mapping.source].fillna("").astype(str).values if mapping.source in raw.columns else ""
    # texts the reader cut to their first MAX_TEXT_CHARS characters, said by the dataset's `cut_note`
    frame.attrs["cut"] = int(raw["_cut"].map(lambda c: mapping.text in c).sum()) if "_cut" in raw.columns else 0
    if mapping.split and mapping.split in raw.columns:
        frame["split"] = raw[mapping.split].astype(str).str.strip().str.lower().values

    if label_col is None:
        frame["label"] = UNLABELED
        return _schema(frame), labels or ()

    values = raw[label_col].astype(object)
    if "_cut" in raw.columns and (long := raw["_cut"].map(lambda c: label_col in c)).any():
        raise DataError(f"{name}: a label on {raw.loc[long, '_where'].iloc[0]} is over {MAX_TEXT_CHARS:,} characters; "
                        "texts are cut to that length, a label is never cut, as two labels alike up to there would "
                        "merge into one class")
    missing = no_label(values)
    if missing.any() and require_labels:
        first = raw.loc[missing, "_where"].iloc[0]
        raise DataError(f"{name}: {int(missing.sum())} row(s) have no label (the first on {first}); if they are "
                        "unlabeled texts, say so: --unlabeled-rows (CLI) or 'Rows without a label are unlabeled' "
                        "(on the page)")
    labels = labels or infer_labels(values[~missing], semeval)
    numeric_ids = labels == SEMEVAL_LABELS
    ids = _label_ids(values[~missing], labels, numeric_ids)
    keys = values.map(_label_key)
    unknown = ~missing & ~keys.isin(ids.keys())
    if unknown.any():
        first = raw.loc[unknown, "_where"].iloc[0]
        counts = keys[unknown].value_counts()
        shown = ", ".join(f"'{k}' ({n} row{'s' if n > 1 else ''})" for k, n in sorted(counts.items()))
        raise DataError(f"{name}: {len(counts)} unknown label(s) in {int(unknown.sum())} row(s): {shown} (the first "
                        f"on {first}); the classes are {', '.join(repr(k) for k in labels)}"
                        + (" or their ids 0-5" if numeric_ids else ""))
    frame["label"] = np.where(missing, UNLABELED, keys.map(ids).fillna(UNLABELED)).astype(int)
    return _schema(frame), labels


def _schema(frame: pd.DataFrame) -> pd.DataFrame:
    """The schema's columns in order, keeping the frame's notes (`attrs`)."""
    out = frame[[c for c in ("id", "text", "label", "source", "split") if c in frame.columns]].copy()
    out.attrs = dict(frame.attrs)
    return out


def require_classes(frame: pd.DataFrame, labels: tuple[str, ...], name: str) -> None:
    present = sorted(set(frame.loc[frame["label"] >= 0, "label"]))
    if len(present) < 2:
        only = labels[present[0]] if present else "none"
        raise DataError(f"{name}: only one class ({only}) has rows; a classifier needs at least two")


def columns_of(raw: bytes, name: str) -> list[str]:
    """A file's own columns, so a column mapping can be offered from them."""
    return [str(c) for c in read_table(raw, name).columns if c not in INTERNAL]


def load_frame(raw: bytes, name: str, mapping: ColumnMapping = ColumnMapping(),
               labels: tuple[str, ...] | None = None, require_labels: bool = True
               ) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Bytes (from a path or an upload) to a schema frame and its label set."""
    return normalize(read_table(raw, name), name, mapping, labels, require_labels)


def load_file(path: str | Path, mapping: ColumnMapping = ColumnMapping(), labels: tuple[str, ...] | None = None,
              require_labels: bool = True) -> tuple[pd.DataFrame, tuple[str, ...]]:
    return load_frame(read_bytes(path), Path(path).name, mapping, labels, require_labels)


def read_file(path: str | Path) -> pd.DataFrame:
    """A file's raw frame (`read_table`), before its labels are known: a dataset's label set is read from every
    split's raw frame first."""
    return read_table(read_bytes(path), Path(path).name)


def store_upload(raw: bytes, name: str, folder: Path, max_bytes: int = MAX_FILE_BYTES) -> Path:
    """Keep an uploaded file under the studio home so background runs can read it again.

    Stored as `<content hash>/<the user's file name>`: the folder is content-addressed, and the name, cut to
    safe characters, is the user's own, so the dataset and every message about it carry the name the user
    knows. The bytes are checked first, so a bad upload never lands on disk.
    """
    read_table(raw, name, max_bytes)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name).strip("._")[:100] or "upload"
    stem, suffix = Path(safe).stem or "upload", Path(name).suffix.lower()
    path = folder / hashlib.sha1(raw).hexdigest()[:16] / f"{stem}{suffix}"
    if not path.exists():
        atomic_write_bytes(path, raw)
    return path
