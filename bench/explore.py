"""Exploration at full Subtask B size: cold and warm time per view, against the targets.

Targets (issue 2): all views together under 60 s cold; every view under 1 s warm (switching views).
Run: .venv/bin/python bench/explore.py [--train-per-class 11840 --test-per-class 3000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.environment import prepare  # noqa: E402

prepare()  # before torch loads: offline, reproducible sums

from core.backbone.encode import load_tokenizer  # noqa: E402
from core.data import CorpusConfig  # noqa: E402
from core.data import builtin_dataset  # noqa: E402
from core.explore import ExploreOptions, compute_views  # noqa: E402

COLD_TARGET_S, WARM_TARGET_S = 60.0, 1.0


def timed_views(ds, tokenizer, cache: Path) -> dict[str, float]:
    times: dict[str, float] = {}
    last = [None, 0.0]

    def step(name: str) -> None:
        now = time.perf_counter()
        if last[0] is not None:
            times[last[0]] = now - last[1]
        last[:] = [name, now]

    compute_views(ds, tokenizer, ExploreOptions(), cache, on_step=step)
    times[last[0]] = time.perf_counter() - last[1]
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train-per-class", type=int, default=11840, help="71,040 train texts by default")
    parser.add_argument("--test-per-class", type=int, default=3000, help="18,000 test texts by default")
    args = parser.parse_args()

    t0 = time.perf_counter()
    ds = builtin_dataset(CorpusConfig(args.train_per_class, args.test_per_class))
    print(f"generated {len(ds.train):,} train + {len(ds.test):,} test texts "
          f"in {time.perf_counter() - t0:.1f} s")
    tokenizer = load_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        cold = timed_views(ds, tokenizer, Path(tmp))
        warm = timed_views(ds, tokenizer, Path(tmp))
    print(f"{'view':<12}{'cold s':>9}{'warm s':>9}")
    for name in cold:
        print(f"{name:<12}{cold[name]:>9.2f}{warm[name]:>9.3f}")
    total_cold, worst_warm = sum(cold.values()), max(warm.values())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'total':<12}{total_cold:>9.2f}{sum(warm.values()):>9.3f}")
    print(f"peak memory: {peak_mb:,.0f} MB")
    ok = total_cold < COLD_TARGET_S and worst_warm < WARM_TARGET_S
    print(f"targets: cold total {total_cold:.1f} s < {COLD_TARGET_S:.0f} s, slowest warm view {worst_warm:.3f} s "
          f"< {WARM_TARGET_S:.0f} s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
