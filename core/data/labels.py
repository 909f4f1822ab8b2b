"""Label sets."""

from __future__ import annotations

# SemEval-2024 Task 8 Subtask B: label ids 0..5 in this order.
SEMEVAL_LABELS: tuple[str, ...] = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")
