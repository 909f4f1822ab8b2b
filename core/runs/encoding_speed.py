"""How fast this machine encodes, kept per encoder: a frozen grid's estimate reads the speed measured here for
its backbone, feature set, precision, device and engine, in tokens per second, and prices the texts it will encode
by the tokens they hold at its max length.

One figure for every pass, scaled by the max length, had been overwritten by each: after a TREC grid (questions
fill a fifth of 64 tokens) an L2R estimate was 2.7x too fast, and a SmolLM2 features + LR run estimated at 5 min
took 17. Tokens are counted by characters (`core.backbone.token_count`), on the texts a pass encoded and on those
a grid will: the same count on both sides, so a tokenizer's own ratio cancels out of the speed it is measured at.
"""

from __future__ import annotations

import json
import statistics

from core.backbone import pass_work
from core.backbone.poolings import reads_probabilities
from core.calibration import measured
from core.runs.registry import Registry
from core.train import TrainConfig

SPEEDS = "encode_tokens_per_s"  # registry setting: {encoder key: tokens/s of its latest pass of 100 texts or more}
LEGACY_SPEED = "encode_texts_per_s"  # earlier studios' one figure: MiniLM's texts/s at 128 tokens
MIN_TEXTS = 100  # a pass of fewer says more of its start than of its speed
# tokens/s of MiniLM's frozen pass before this machine has measured any (`core/calibration.json`)
FALLBACK = {"fp32": measured("frozen_encoding_fp32") * 128, "bf16": measured("frozen_encoding_bf16") * 128}


def encoder_key(config: TrainConfig) -> str:
    """What decides a pass's speed: the backbone, what it reads, its precision, device and engine."""
    return "|".join(str(v) for v in (config.backbone, config.resolved_pooling, config.precision,
                                      config.device, config.encoder_engine))


def encoding_cost(config: TrainConfig) -> float:
    """A pass's work against MiniLM's hidden states, for an encoder this machine has not measured yet (`work`)."""
    return work(config.backbone, config.resolved_pooling)


def work(backbone: str | None, pooling: str) -> float:
    """`pass_work` (SmolLM2's layer 20 is 7.5x MiniLM); token probabilities add the LM head and a softmax over the
    vocabulary, 1.3x a whole pass of SmolLM2 (its head's product adds 27% to its layers' FLOPs; bench/speed/encode.py
    --backbone smollm2-135m measured 1.27x and 1.28x at 128 and 256 tokens, AMD EPYC with AVX512-BF16, 2026-12-06):
    both feature sets 14.6x."""
    return pass_work(backbone, pooling) * (1.3 if reads_probabilities(pooling) else 1.0)


def measured(registry: Registry) -> dict[str, float]:
    """The speeds kept here, by encoder key; a damaged setting counts as none."""
    try:
        speeds = json.loads(registry.setting(SPEEDS) or "{}")
    except json.JSONDecodeError:
        return {}
    return {k: float(v) for k, v in speeds.items() if isinstance(v, (int, float)) and v > 0} \
        if isinstance(speeds, dict) else {}


def remember_encoding(registry: Registry, texts: int, tokens: float, seconds: float, config: TrainConfig) -> None:
    """Keep a pass's tokens/s (`tokens`: its texts' `token_count.tokens`) for its encoder, from a pass of
    `MIN_TEXTS` texts or more."""
    if texts >= MIN_TEXTS and seconds > 0 and tokens > 0:
        speed = round(tokens / seconds, 2)
        registry.set_setting(SPEEDS, json.dumps(measured(registry) | {encoder_key(config): speed}, sort_keys=True))


def tokens_per_second(registry: Registry, config: TrainConfig) -> float:
    """This encoder's speed as measured here; else another encoder's measured here, scaled by their work
    (`encoding_cost`), the same precision first; else earlier studios' MiniLM figure, or a laptop's."""
    speeds = measured(registry)
    if (own := speeds.get(encoder_key(config))) is not None:
        return own
    same, other = [], []
    for key, speed in speeds.items():
        backbone, pooling, precision, device = (key.split("|") + [""] * 5)[:4]
        if device != config.device:
            continue
        (same if precision == config.precision else other).append(speed * work(backbone, pooling))
    if same or other:  # as MiniLM's speed
        return statistics.median(same or other) / encoding_cost(config)
    legacy = registry.setting(LEGACY_SPEED)
    try:
        base = float(legacy) * 128 if legacy else FALLBACK["bf16" if config.precision == "bf16" else "fp32"]
    except ValueError:
        base = FALLBACK["fp32"]
    return base / encoding_cost(config)
