"""What a grid's runs will read, told before they draw it: each run's rows, and the texts a grid's runs on one store
(frozen features, or a top-K run's states) compute, each text once."""

from __future__ import annotations

import math

from core.train import TrainConfig, method_for


def labeled_count(config: TrainConfig, pool: int, classes: int) -> int:
    """The texts a config will label, before the run draws them."""
    return config.per_class * classes if config.per_class else round(config.fraction * pool)


def planned_rows(config: TrainConfig, pool: int, split: int | None, test: int, classes: int, extra: int = 0
                 ) -> tuple[int, ...]:
    """A config's data (`ROWS`) before its run draws them, from a validation split of `split` rows (None: the
    data has none, so validation rows come out of the pool), with `extra` texts of an unlabeled set beside the pool
    (the GAN-BERT authors' 5,343 beside their 109 labeled: without them a `tf` run there was estimated at "under a
    minute")."""
    labeled = labeled_count(config, pool, classes)
    val = config.validating.planned(labeled, classes, split, pool)
    unlabeled = pool - labeled - (val if split is None else 0) + extra
    if config.unlabeled_limit is not None:
        unlabeled = min(unlabeled, config.unlabeled_limit)
    return labeled, unlabeled, val, test


def texts_to_encode(configs: list[TrainConfig], pool: int, split: int | None, test: int, classes: int,
                    extra: int = 0) -> float:
    """The texts a grid's frozen runs on one feature store encode, expected: the test rows once, and from the pool
    (and a validation split, and an unlabeled set of `extra` texts) each seed's draw, the largest of its runs'
    (labeled, validation, and unlabeled where the method reads them, up to the pool limit, drawn from the pool's
    unlabeled rows and the unlabeled set alike), seeds' draws overlapping as random rows do: n × (1 − Π(1 −
    drawn / n)). A walk's grid of pool-1,000 runs on L2R was estimated with its 11,421-text pool encoded."""
    from_pool: dict[int, float] = {}
    from_split: dict[int, float] = {}
    from_extra: dict[int, float] = {}
    for c in configs:
        labeled, unlabeled, val, _ = planned_rows(c, pool, split, test, classes, extra)
        unlabeled = unlabeled if method_for(c).uses_unlabeled else 0
        sources = pool - labeled - (val if split is None else 0) + extra
        extra_share = unlabeled * extra / sources if sources else 0.0
        drawn = labeled + (val if split is None else 0) + unlabeled - extra_share
        from_pool[c.seed] = max(from_pool.get(c.seed, 0), drawn)
        from_split[c.seed] = max(from_split.get(c.seed, 0), val if split is not None else 0)
        from_extra[c.seed] = max(from_extra.get(c.seed, 0), extra_share)

    def union(n: int | None, draws: dict[int, float]) -> float:
        return n * (1 - math.prod(1 - min(d, n) / n for d in draws.values())) if n else 0.0

    return union(pool, from_pool) + union(split, from_split) + union(extra, from_extra) + test
