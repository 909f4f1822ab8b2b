"""Label sets."""

from __future__ import annotations

# SemEval-2024 Task 8 Subtask B: label ids 0..5 in this order.
SEMEVAL_LABELS: tuple[str, ...] = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")


def declared_labels(text: str | None) -> tuple[str, ...] | None:
    """Classes typed as a list ('HUM, LOC,NUM' → ('HUM', 'LOC', 'NUM')); None when none are given, so a dataset's
    classes are read from its splits."""
    if text is None or not text.strip():
        return None
    return tuple(name.strip() for name in text.split(",") if name.strip())
