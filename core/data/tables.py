"""Parsing a file's bytes (JSONL, CSV or Parquet) into a raw frame, with memory bounded by the longest text.

The bytes are parsed where they lie, a line or a record at a time, and every text longer than `MAX_TEXT_CHARS`
is cut as its row is read: a 200 MB text among 10 short rows had been decoded, split and parsed as whole copies,
then tokenized untruncated, and `core explore` was killed at 19.6 GB. A raw frame carries `_where` (the line or row
each row came from, for messages) and, when a text was cut, `_cut` (the columns cut in that row).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Iterator

import pandas as pd

from core.data.schema import MAX_TEXT_CHARS, DataError

# The official train file is about 150 MB. Streamlit's uploaders state a limit from half the next unit up in
# that unit (512 MB read "1GB"), so the limit is 500 MB: .streamlit/config.toml and the uploaders match it.
MAX_FILE_BYTES = 500 * 2**20
# Rows a table may hold: the official Subtask B train file holds 71k, Subtask A's about 120k and all of M4 about
# 150k; 2 M tiny JSONL rows (50 MB) took 29 s and 1.2 GB to read before rows were counted first.
MAX_ROWS = 1_000_000
MAX_TABLE_BYTES = 2 * 2**30  # a Parquet table's data once decompressed: four times the largest file taken
# Columns a table may have: the studio reads five at most (text, label, id, source, split). A CSV of 200,000 columns
# and 6 rows took 47 s and 1.57 GB to read, and one of 1,000,000 died of a MemoryError
MAX_COLUMNS = 1_000
FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
INTERNAL = ("_where", "_cut")  # the columns a reader adds; never the file's own
BOM = b"\xef\xbb\xbf"
NONBLANK = re.compile(rb"[^ \t\n\r\f\v]")  # a line holding more than ASCII whitespace


def _format_of(name: str) -> str:
    fmt = FORMATS.get(Path(name).suffix.lower())
    if fmt is None:
        raise DataError(f"{name}: unknown file type; use .jsonl, .csv or .parquet")
    return fmt


def _not_text(raw: bytes, start: int, line: int, name: str) -> DataError:
    return DataError(f"{name} is not UTF-8 text: byte 0x{raw[start]:02x} on line {line} cannot be decoded. "
                     "Save the file as UTF-8.")


def _check_binary(raw: bytes, name: str) -> None:
    """No NUL byte anywhere (one after the first 8 KB had been read into a text); found without copying the file."""
    if (at := raw.find(b"\x00")) >= 0:
        line = raw.count(b"\n", 0, at) + 1
        raise DataError(f"{name} looks like a binary file (it holds a NUL byte, on line {line}), not UTF-8 text")


def _first_undecodable(raw: bytes, name: str) -> DataError:
    """The message for a file that is not UTF-8, naming its first bad byte's line: the rare path, so it may decode
    the whole file to find it."""
    try:
        raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return _not_text(raw, e.start, raw[: e.start].count(b"\n") + 1, name)
    return DataError(f"{name} is not UTF-8 text")


def too_many_rows(name: str, rows: int | None = None) -> DataError:
    """The message for a table past `MAX_ROWS` (`rows` where they were counted without being read)."""
    held = f"{rows:,} rows" if rows else f"more than {MAX_ROWS:,} rows"
    return DataError(f"{name} holds {held}, over the {MAX_ROWS:,}-row limit; split it, or keep the rows a study "
                     "reads")


def _cut(value, column: str, cut: list[str]):
    """`value`, a string cut to `MAX_TEXT_CHARS` (naming its column in `cut`)."""
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        cut.append(column)
        return value[:MAX_TEXT_CHARS]
    return value


def _lines(raw: bytes) -> Iterator[tuple[int, int, int]]:
    """(line number, start, end) of each line of the bytes, its `\n` and a trailing `\r` left out. JSON Lines ends a
    record at `\n` alone, so a text holding U+0085, U+2028 or a form feed stays one record, and a line number in a
    message is the file's own. Offsets, not slices: a line is never copied out of the file's bytes."""
    start, lineno = (len(BOM) if raw.startswith(BOM) else 0), 0
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        lineno += 1
        yield lineno, start, end - 1 if end > start and raw[end - 1] == ord("\r") else end
        start = end + 1


def _read_jsonl(raw: bytes, name: str) -> pd.DataFrame:
    """JSON Lines, decoded and parsed a line at a time from the file's bytes, so a 200 MB text is held as its bytes,
    its decoded line and its parsed value, then cut. Rows are counted before any is parsed (`MAX_ROWS`), and values
    go straight into columns: a frame built from a list of row dicts took 1.2 GB for 2 M tiny rows."""
    if (rows := sum(1 for _, start, end in _lines(raw) if NONBLANK.search(raw, start, end))) > MAX_ROWS:
        raise too_many_rows(name, rows)
    columns: dict[str, list] = {}
    where: list[str] = []
    cuts: dict[int, tuple[str, ...]] = {}
    view = memoryview(raw)
    for lineno, start, end in _lines(raw):
        try:
            text = str(view[start:end], "utf-8")
        except UnicodeDecodeError as e:
            raise _not_text(raw, start + e.start, lineno, name) from None
        if not text or text.isspace():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{name}: malformed JSON on line {lineno}: {e.msg} (column {e.colno})") from None
        except RecursionError:
            raise DataError(f"{name}: line {lineno} nests its JSON too deeply to read") from None
        del text  # the parsed value alone stays alive while it is cut
        if not isinstance(row, dict):
            raise DataError(f"{name}: line {lineno} is a JSON {type(row).__name__}, not an object")
        too_many_columns(name, len(row))
        at, cut = len(where), []
        for key, value in row.items():
            column = columns.setdefault(str(key), [])
            column.extend([None] * (at - len(column)))  # a key the earlier rows lacked
            column.append(_cut(value, str(key), cut))
        del row
        too_many_columns(name, len(columns))  # keys that differ from row to row
        if cut:
            cuts[at] = tuple(cut)
        where.append(f"line {lineno}")
    for column in columns.values():
        column.extend([None] * (len(where) - len(column)))
    frame = pd.DataFrame(columns)
    frame["_where"] = where
    return _mark_cut(frame, cuts)


def _read_csv(raw: bytes, name: str) -> pd.DataFrame:
    """CSV by the standard library's reader, streamed from the bytes (decoded as it goes), which keeps quoted line
    breaks inside their field and ends records at `\n`, `\r\n` or `\r` only: each row's `_where` is the line it
    starts on in the file, which a quoted multi-line text would have thrown off had rows been counted as lines."""
    csv.field_size_limit(max(csv.field_size_limit(), MAX_FILE_BYTES))  # one text may be long; the file is capped
    reader = csv.reader(io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8-sig", newline=""))
    header, rows, lines, start, cuts = None, [], [], 1, {}
    try:
        for record in reader:
            if record:  # a blank line is no row
                if header is None:
                    header = _header(record, name)
                elif len(record) > len(header):
                    raise DataError(f"{name}: malformed CSV: line {start} has {len(record)} fields, the header "
                                    f"{len(header)}")
                elif len(rows) == MAX_ROWS:
                    raise too_many_rows(name)
                else:
                    cut: list[str] = []
                    rows.append([_cut(v, c, cut) for v, c in zip(record, header)] + [""] * (len(header) - len(record)))
                    if cut:
                        cuts[len(rows) - 1] = tuple(cut)
                    lines.append(start)
            start = reader.line_num + 1
    except csv.Error as e:
        raise DataError(f"{name}: malformed CSV near line {reader.line_num}: {e}") from None
    except UnicodeDecodeError:
        raise _first_undecodable(raw, name) from None
    if header is None:
        raise DataError(f"{name} has no data rows")
    frame = pd.DataFrame(rows, columns=header, dtype=str)
    frame["_where"] = [f"line {n}" for n in lines]
    return _mark_cut(frame, cuts)


def amount(size: int) -> str:
    """Bytes in words: '3.8 GB', '20 MB'."""
    return f"{size / 2**30:.1f} GB" if size >= 2**30 else f"{size / 2**20:.0f} MB"


def _read_parquet(raw: bytes, name: str) -> pd.DataFrame:
    """A Parquet file, bounded before it is decompressed: its footer's row count and uncompressed size are read
    first (a 657 KB file can hold 3.8 GB of text), and the batches read after are counted too, since a footer is
    the writer's word."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(io.BytesIO(raw))
        meta = file.metadata
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a file that is not Parquet
        raise DataError(f"{name} is not a readable Parquet file ({type(e).__name__})") from None
    if meta.num_rows > MAX_ROWS:
        raise too_many_rows(name, meta.num_rows)
    too_many_columns(name, meta.num_columns)
    if size > MAX_TABLE_BYTES:
        raise DataError(f"{name} holds {meta.num_rows:,} rows that decompress to {amount(size)}, over the "
                        f"{amount(MAX_TABLE_BYTES)} limit on a table's data")
    batches, read = [], 0
    try:
        for batch in file.iter_batches(batch_size=4096):
            read += batch.nbytes
            if read > MAX_TABLE_BYTES:
                raise DataError(f"{name} decompresses to more than the {amount(MAX_TABLE_BYTES)} limit on a "
                                f"table's data (its footer said {amount(size)})")
            batches.append(batch)
        frame = pa.Table.from_batches(batches, schema=file.schema_arrow).to_pandas()
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001
        raise DataError(f"{name} is not a readable Parquet file ({type(e).__name__})") from None
    cuts: dict[int, list[str]] = {}
    for column in frame.columns:
        if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column].dtype):
            long = [i for i, v in enumerate(frame[column]) if isinstance(v, str) and len(v) > MAX_TEXT_CHARS]
            if long:
                values = frame[column].astype(object).to_numpy(copy=True)
                for i in long:
                    values[i] = values[i][:MAX_TEXT_CHARS]
                    cuts.setdefault(i, []).append(str(column))
                frame[column] = values
    frame["_where"] = [f"row {i + 1}" for i in range(len(frame))]
    return _mark_cut(frame, {i: tuple(c) for i, c in cuts.items()})


def _mark_cut(frame: pd.DataFrame, cuts: dict[int, tuple[str, ...]]) -> pd.DataFrame:
    """`_cut` on a frame some of whose texts were cut: the columns cut in each row (empty in the rest)."""
    if cuts:
        frame["_cut"] = [cuts.get(i, ()) for i in range(len(frame))]
    return frame


def _header(names: list[str], name: str) -> list[str]:
    """A CSV's header, refused past `MAX_COLUMNS` or where it names a column twice: a column is read by its name,
    and `text,label,label` had been read silently, the second label set aside."""
    too_many_columns(name, len(names))
    seen: dict[str, int] = {}
    for i, column in enumerate(names, 1):
        if column in seen:
            raise DataError(f"{name}: the header names {column[:40]!r} twice (columns {seen[column]} and {i}); a "
                            "column is read by its name, so each needs one of its own: rename or remove one")
        seen[column] = i
    return names


def too_many_columns(name: str, columns: int) -> None:
    if columns > MAX_COLUMNS:
        raise DataError(f"{name} has {columns:,} columns, over the {MAX_COLUMNS:,} a table may have: the studio reads "
                        "its text and label columns (and id, source and split where there are); keep those")


def read_table(raw: bytes, name: str, max_bytes: int = MAX_FILE_BYTES) -> pd.DataFrame:
    """Parse JSONL, CSV or Parquet bytes into a raw frame with a `_where` column for error messages."""
    if len(raw) > max_bytes:
        raise DataError(f"{name} is {len(raw) / 2**20:.0f} MB, over the {max_bytes / 2**20:.0f} MB limit")
    fmt = _format_of(name)
    if not raw or raw.isspace():  # `raw.strip()` had copied the whole file
        raise DataError(f"{name} is empty")
    if fmt == "parquet":
        frame = _read_parquet(raw, name)
    else:
        _check_binary(raw, name)
        frame = _read_jsonl(raw, name) if fmt == "jsonl" else _read_csv(raw, name)
    if frame.empty or not any(c not in INTERNAL for c in frame.columns):
        raise DataError(f"{name} has no data rows")
    return frame
