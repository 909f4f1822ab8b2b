"""Tokens counted by characters, without a tokenizer: what an encoding pass's speed is measured in and a grid's
encoding is priced by (`core.runs.encoding_speed`). Loading SmolLM2's tokenizer first converts its GGUF file (some
25 s), too long for an estimate on a form."""

from __future__ import annotations

from collections.abc import Sequence

CHARS_PER_TOKEN = 4.0  # English through a BPE or WordPiece vocabulary: about four characters a token
SPECIAL_TOKENS = 2
SAMPLE = 2000  # texts a grid's tokens per text are counted on


def tokens(texts: Sequence[str], max_len: int) -> float:
    """The tokens these texts hold, each cut at `max_len`."""
    return float(sum(min(max_len, len(t) / CHARS_PER_TOKEN + SPECIAL_TOKENS) for t in texts))


def tokens_per_text(texts: Sequence[str], max_len: int) -> float:
    """The mean of `tokens` over up to `SAMPLE` of the texts, evenly spaced; `max_len` when there are none."""
    if not len(texts):
        return float(max_len)
    sample = list(texts[::max(1, len(texts) // SAMPLE)])
    return tokens(sample, max_len) / len(sample)
