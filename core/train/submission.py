"""Prediction files: the SemEval-2024 Task 8 submission format, and a table with probabilities.

The official Subtask B scorer reads JSON lines, keeps the `id` and `label` columns, matches them to the gold
file by `id` and scores the integer labels (0-5 in the Subtask B order). So for a model of Subtask B's classes a
`.jsonl` file holds exactly `{"id": ..., "label": <predicted id>}` per line. A model of other classes (L2R's
authors, say) has no such ids: its `.jsonl` names the class, `{"id": ..., "label": "gpt-4o"}`, so no reader has
to guess a mapping. A `.csv` holds `id, gold, predicted, p_<class>...`, where the gold column is never called
`label` (a submission built from it would score the gold labels).
"""

from __future__ import annotations

import json
import re
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


def is_subtask_b(names: tuple[str, ...]) -> bool:
    """Whether a model's classes are Subtask B's (some of them: the M4 sample has no bloomz)."""
    return set(names) <= set(SEMEVAL_LABELS)


def label_values(names: tuple[str, ...]) -> dict[str, int | str]:
    """Class name → what a `.jsonl` line says: its Subtask B id (0-5), as the scorer expects, for Subtask B's
    classes; else the class's own name (a number when the data named its classes by numbers)."""
    if is_subtask_b(names):
        return {name: SEMEVAL_LABELS.index(name) for name in names}
    return {name: int(name) if name.lstrip("-").isdigit() else name for name in names}


def jsonl_format(names: tuple[str, ...]) -> str:
    """What a `.jsonl` of this model's predictions holds, in words (the CLI's summary, the Classify page)."""
    if is_subtask_b(names):
        return ("SemEval submission: id, label "
                "(Subtask B ids: human 0, chatGPT 1, cohere 2, davinci 3, bloomz 4, dolly 5)")
    return ("id, label: the class names (" + ", ".join(names) + "), as these classes are not Subtask B's and have no "
            "official ids")


def submission_ids(frame: pd.DataFrame) -> list:
    """The ids as the file had them (numbers stay numbers, so they match the gold file's), or row numbers."""
    kind = frame.attrs.get("ids", "column")
    if kind == "row":
        return list(range(len(frame)))
    if kind == "int":
        return [int(i) for i in frame["id"]]
    return frame["id"].tolist()


def write_predictions(out: pd.DataFrame, frame: pd.DataFrame, path: Path, model_labels: tuple[str, ...]) -> None:
    """`out` (from `classify_frame`) as the format `path`'s suffix names, written atomically."""
    if check_format(path) == ".csv":
        atomic_write_text(path, out.to_csv(index=False))
        return
    atomic_write_text(path, submission_jsonl(out, frame, model_labels))


def submission_jsonl(out: pd.DataFrame, frame: pd.DataFrame, model_labels: tuple[str, ...]) -> str:
    """One `{"id", "label"}` object per line: what the official scorer reads (`label_values`)."""
    values = label_values(model_labels)
    return "".join(json.dumps({"id": i, "label": values[p]}) + "\n"
                   for i, p in zip(submission_ids(frame), out["predicted"]))


def download_stem(name: str) -> str:
    """A file's name as a download names its predictions after it ('three.csv' → 'three-csv'): letters, digits,
    dots, dashes and underscores, so two files' downloads from one run are told apart, 'three.csv' and 'three.jsonl'
    too (a re-walk found them one name)."""
    path = Path(name)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-.")[:60] or "file"
    kind = re.sub(r"[^A-Za-z0-9]+", "", path.suffix)[:10]
    return f"{stem}-{kind}" if kind else stem
