"""Label sets and the one colour per class that every chart uses."""

from __future__ import annotations

# SemEval-2024 Task 8 Subtask B: label ids 0..5 in this order.
SEMEVAL_LABELS: tuple[str, ...] = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")

# Tableau 10, fixed per class position so a class keeps its colour on every page.
_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
            "#9c755f", "#bab0ac")


def class_colors(labels: tuple[str, ...]) -> dict[str, str]:
    """Stable colour for each class name, by its position in the label set."""
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(labels)}
