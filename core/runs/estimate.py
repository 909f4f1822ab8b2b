"""Time estimates for a grid of runs, from throughput measured on this machine.

Finished runs record samples/s; an estimate uses the median of comparable runs (same method, frozen
or not, max length) and falls back to each method's figures measured with MiniLM on a 2-core laptop CPU.
"""

from __future__ import annotations

import statistics

from core.runs.registry import Registry
from core.train import TrainConfig, method_for

FALLBACK_ENCODE = 80.0  # texts/s, the frozen-feature pass (length-bucketed batches; bench/frozen_grid.py)


def roughly(seconds: float) -> str:
    """An estimate in words: 'under a minute', 'about 7 min', 'about 2 h 05 min'."""
    if seconds < 60:
        return "under a minute"
    minutes = round(seconds / 60)
    return f"about {minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"about {minutes} min"


def measured_speed(registry: Registry, config: TrainConfig) -> float | None:
    speeds = [r.samples_per_s for r in registry.list(statuses=("done",))
              if r.samples_per_s and r.config.method == config.method and r.config.frozen == config.frozen
              and r.config.max_len == config.max_len]
    return statistics.median(speeds) if speeds else None


def labeled_count(config: TrainConfig, pool: int, classes: int) -> int:
    """The texts a config will label, before the run draws them."""
    return config.per_class * classes if config.per_class else round(config.fraction * pool)


def run_seconds(config: TrainConfig, pool: int, val: int, test: int, classes: int, speed: float | None) -> float:
    """The method's own estimate for its budget at this data size."""
    labeled = labeled_count(config, pool, classes)
    return method_for(config).seconds(config, labeled, pool - labeled, val, test, speed)


ENCODE_SPEED = "encode_texts_per_s"  # registry setting: the latest encoding pass's texts/s at 128 tokens


def remember_encoding(registry: Registry, texts: int, seconds: float, max_len: int) -> None:
    """Keep how fast this machine encodes (scaled to 128 tokens), for the next grid's estimate."""
    if texts >= 100 and seconds > 0:
        registry.set_setting(ENCODE_SPEED, f"{texts / seconds * max_len / 128:.2f}")


def grid_seconds(registry: Registry, configs: list[TrainConfig], pool: int, val: int, test: int, classes: int
                 ) -> float:
    """The whole grid run one after another. A frozen grid encodes each text once, at the speed measured
    on this machine (else a laptop figure): validation, test and the labeled rows, and the whole pool when
    a method learns from unlabeled texts."""
    total = sum(run_seconds(c, pool, val, test, classes, measured_speed(registry, c)) for c in configs)
    frozen = [c for c in configs if c.frozen]
    if frozen:
        max_len = max(c.max_len for c in frozen)
        speed = float(registry.setting(ENCODE_SPEED) or FALLBACK_ENCODE) * 128 / max_len
        labeled = max(labeled_count(c, pool, classes) for c in frozen)
        texts = pool if any(method_for(c).uses_unlabeled for c in frozen) else min(pool, labeled)
        total += (texts + val + test) / speed
    return total
