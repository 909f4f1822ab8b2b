"""Max length `auto`: the smallest of 128, 256 and 512 tokens (within the backbone's positions) that cuts at
most a quarter of the training texts. 94% of real M4 texts are longer than 128 tokens, so a fixed 128 read
most texts by their first paragraph; the data, not a constant, decides."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from transformers import AutoConfig

from core.backbone import Backbone
from core.backbone.encode import load_tokenizer, sampled_token_lengths
from core.backbone.families import FAMILIES
from core.data import Dataset

STEPS = (128, 256, 512)
MAX_TRUNCATED = 0.25  # at most this share of training texts cut


@dataclass(frozen=True)
class MaxLength:
    tokens: int
    truncated: float  # share of the (sampled) training texts longer than `tokens`
    why: str


def train_lengths(ds: Dataset, backbone: Backbone) -> np.ndarray:
    return sampled_token_lengths(ds.train["text"], load_tokenizer(backbone))


def position_limit(backbone: Backbone) -> int:
    """The most tokens the backbone reads: its position table (RoBERTa's keeps two for padding), at most 512."""
    config = AutoConfig.from_pretrained(str(backbone.folder), local_files_only=True)
    positions = getattr(config, "max_position_embeddings", 512) or 512
    offset = FAMILIES[config.model_type].position_offset if config.model_type in FAMILIES else 0
    return min(512, positions - offset, load_tokenizer(backbone).model_max_length)


def truncated_share(lengths: np.ndarray, tokens: int) -> float:
    return float(np.mean(lengths > tokens)) if len(lengths) else 0.0


def measured_on(sampled: int, total: int) -> str:
    """Which texts a share was measured on: all of them, or a sample (which is why another page's count of
    all the texts can differ by a point)."""
    return f"of the {total:,} training texts" if sampled >= total else f"of {sampled:,} sampled training texts"


def choose(lengths: np.ndarray, limit: int, total: int | None = None) -> MaxLength:
    """The smallest step within `limit` that leaves at most `MAX_TRUNCATED` of `lengths` cut, else the limit;
    `total` is how many training texts `lengths` were sampled from."""
    of = measured_on(len(lengths), total or len(lengths))
    for tokens in [s for s in STEPS if s < limit] + [limit]:
        share = truncated_share(lengths, tokens)
        if share <= MAX_TRUNCATED:
            return MaxLength(tokens, share, f"auto: {tokens} tokens, the smallest of {', '.join(map(str, STEPS))} "
                                            f"that cuts at most {MAX_TRUNCATED:.0%} of the training texts "
                                            f"({share:.1%} {of} cut)")
    share = truncated_share(lengths, limit)
    return MaxLength(limit, share, f"auto: {limit} tokens, the backbone's limit; {share:.1%} {of} are still cut")


def auto_max_len(ds: Dataset, backbone: Backbone) -> MaxLength:
    return choose(train_lengths(ds, backbone), position_limit(backbone), len(ds.train))


def max_length_for(ds: Dataset, backbone: Backbone, tokens: int | None) -> MaxLength:
    """What `auto` (None) resolves to, or what a chosen max length cuts, said the same way. `auto` follows the data
    for every backbone: SmolLM2's had been a fixed 128, measured on L2R's paragraphs, which cut 96% of the M4
    sample's texts, where 512 scored +0.108 over it at 20 labels a class (bench/studies/smollm2_length.py)."""
    if tokens is None:
        return auto_max_len(ds, backbone)
    lengths = train_lengths(ds, backbone)
    share, of = truncated_share(lengths, tokens), measured_on(len(lengths), len(ds.train))
    return MaxLength(tokens, share, f"{tokens} tokens, as chosen ({share:.1%} {of} cut)")
