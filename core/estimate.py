"""Time estimates for a grid of runs, from throughput measured on this machine.

Finished runs record samples/s; an estimate uses the median of comparable runs (same method, frozen
or not, max length) and falls back to figures measured with MiniLM on a 2-core laptop CPU.
"""

from __future__ import annotations

import statistics

from core.config import TrainConfig
from core.models.ganbert import repeats_for
from core.runs import Registry

# samples/s at 128 tokens, batch 16, 2 CPU threads (MiniLM); GAN-BERT costs about a fine-tuning step
FALLBACK_TRAIN = {"finetune": 13.0, "adapter": 21.0, "ganbert": 13.0}
FALLBACK_FORWARD = 49.0  # texts/s, encoder forward only, batches as they come (evaluation)
FALLBACK_ENCODE = 80.0  # texts/s, the frozen-feature pass (length-bucketed batches; bench/frozen_grid.py)
# samples/s on cached 4,608-d `layers` features at the default batch sizes, evaluation included
FALLBACK_HEAD = {"finetune": 20000.0, "ganbert": 7000.0}


def measured_speed(registry: Registry, config: TrainConfig) -> float | None:
    speeds = [r.samples_per_s for r in registry.list(statuses=("done",))
              if r.samples_per_s and r.config.method == config.method and r.config.frozen == config.frozen
              and r.config.max_len == config.max_len]
    return statistics.median(speeds) if speeds else None


def run_seconds(config: TrainConfig, pool: int, val: int, test: int, classes: int, speed: float | None) -> float:
    """Training samples over all epochs divided by throughput, plus the validation and test passes."""
    labeled = config.per_class * classes if config.per_class else config.fraction * pool
    per_epoch = labeled
    if config.method == "ganbert":
        per_epoch = labeled * repeats_for(labeled / pool) + (pool - labeled)
    scale = config.max_len / 128
    if config.frozen:
        return (config.epochs * (per_epoch + val) + test) / (speed or FALLBACK_HEAD[config.method])
    train_speed = speed or FALLBACK_TRAIN[config.method] / scale
    return config.epochs * (per_epoch / train_speed + val / (FALLBACK_FORWARD / scale)) + test / (FALLBACK_FORWARD / scale)


def grid_seconds(registry: Registry, configs: list[TrainConfig], pool: int, val: int, test: int, classes: int,
                 features_cached: bool = False) -> float:
    """The whole grid run one after another; frozen grids encode their features once."""
    total = sum(run_seconds(c, pool, val, test, classes, measured_speed(registry, c)) for c in configs)
    if any(c.frozen for c in configs) and not features_cached:
        max_len = max(c.max_len for c in configs if c.frozen)
        total += (pool + val + test) / (FALLBACK_ENCODE * 128 / max_len)
    return total
