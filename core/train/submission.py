"""Prediction files: the SemEval-2024 Task 8 submission format, and a table with probabilities.

The official Subtask B scorer reads JSON lines, keeps the `id` and `label` columns, matches them to the gold
file by `id` and scores the integer labels (0-5 in the Subtask B order). So a `.jsonl` file holds exactly
`{"id": ..., "label": <predicted id>}` per line; a `.csv` holds `id, gold, predicted, p_<class>...`, where the
gold column is never called `label` (a submission built from it would score the gold labels).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from core.data import SEMEVAL_LABELS
from core.errors import InputError
from core.paths import atomic_write_text

FORMATS = (".jsonl", ".csv")


def check_format(path: Path) -> str:
    """The file's format from its suffix; anything else is refused before any prediction is made."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"cannot write predictions as {suffix or 'a file without a suffix'} ({path.name}); "
                         "give a .jsonl file (the SemEval submission format) or a .csv file")
    return suffix


def label_ids(names: tuple[str, ...], file_labels: tuple[str, ...]) -> dict[str, int]:
    """Class name → the integer the scorer expects: its Subtask B id, else its place in the file's labels."""
    order = SEMEVAL_LABELS if set(names) <= set(SEMEVAL_LABELS) else file_labels
    missing = [n for n in names if n not in order]
    if missing:
        raise InputError(f"the model's classes {', '.join(missing)} have no id in this file's labels "
                         f"({', '.join(file_labels) or 'none'}); write a .csv instead")
    return {name: order.index(name) for name in names}


def submission_ids(frame: pd.DataFrame) -> list:
    """The ids as the file had them (numbers stay numbers, so they match the gold file's), or row numbers."""
    kind = frame.attrs.get("ids", "column")
    if kind == "row":
        return list(range(len(frame)))
    if kind == "int":
        return [int(i) for i in frame["id"]]
    return frame["id"].tolist()


def write_predictions(out: pd.DataFrame, frame: pd.DataFrame, path: Path, model_labels: tuple[str, ...],
                      file_labels: tuple[str, ...]) -> None:
    """`out` (from `classify_frame`) as the format `path`'s suffix names, written atomically."""
    if check_format(path) == ".csv":
        atomic_write_text(path, out.to_csv(index=False))
        return
    atomic_write_text(path, submission_jsonl(out, frame, model_labels, file_labels))


def submission_jsonl(out: pd.DataFrame, frame: pd.DataFrame, model_labels: tuple[str, ...],
                     file_labels: tuple[str, ...]) -> str:
    """One `{"id", "label"}` object per line: what the official scorer reads."""
    ids = label_ids(model_labels, file_labels)
    return "".join(json.dumps({"id": i, "label": ids[p]}) + "\n"
                   for i, p in zip(submission_ids(frame), out["predicted"]))
