"""Label sets: Subtask B's, a list typed by the user, and the one a file's label values make (how they compare
and map to ids)."""

from __future__ import annotations

import re

import pandas as pd

# SemEval-2024 Task 8 Subtask B: label ids 0..5 in this order.
SEMEVAL_LABELS: tuple[str, ...] = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")


def declared_labels(text: str | None) -> tuple[str, ...] | None:
    """Classes typed as a list ('HUM, LOC,NUM' → ('HUM', 'LOC', 'NUM')); None when none are given, so a dataset's
    classes are read from its splits."""
    if text is None or not text.strip():
        return None
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _label_key(value: object) -> str:
    """Labels compare as stripped strings; 3, 3.0 and "3" are one label."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*")  # how an integer is written once: not 01, -0, ², --3 or +3


def infer_labels(values: pd.Series, semeval: bool) -> tuple[str, ...]:
    """The label set of a training file: Subtask B's when the file is in its form, else the values sorted as
    integers when every one is an integer written canonically, else as strings: '01' and '1', '-0' and '0', or 'A'
    and 'a' are labels apart, and '²' or '--3' no integer (one had ended in a traceback)."""
    keys = {_label_key(v) for v in values}
    if semeval or {k.lower() for k in keys} <= {n.lower() for n in SEMEVAL_LABELS}:
        return SEMEVAL_LABELS  # normalize() reports values outside it, with their line
    if all(CANONICAL_INT.fullmatch(k) for k in keys):
        return tuple(str(k) for k in sorted(int(k) for k in keys))
    return tuple(sorted(keys))


def _label_ids(values: pd.Series, labels: tuple[str, ...], numeric_ids: bool) -> dict[str, int]:
    """Map each distinct raw value to an id: a label as it is written; for Subtask B's labels (`numeric_ids`) also
    its name in any case and its id."""
    exact = {n: i for i, n in enumerate(labels)}
    by_name = {n.lower(): i for i, n in enumerate(labels)} if numeric_ids else {}
    out: dict[str, int] = {}
    for key in {_label_key(v) for v in values}:
        if key in exact:
            out[key] = exact[key]
        elif key.lower() in by_name:
            out[key] = by_name[key.lower()]
        elif numeric_ids and CANONICAL_INT.fullmatch(key) and 0 <= int(key) < len(labels):
            out[key] = int(key)
    return out


def no_label(values: pd.Series) -> pd.Series:
    """Which rows hold no label: none at all, or only blanks."""
    return values.isna() | (values.astype(str).str.strip() == "")
