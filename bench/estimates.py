"""How far the Train page's time estimate is from the time a grid takes, on this machine.

A grid of frozen runs on the real M4 sample (methods × seeds, at least 8 runs) goes through the real queue
(background worker processes, one at a time) in a fresh studio home, three times:

1. the first grid, estimated with no history (the rough guess from laptop figures);
2. the same grid with other seeds, estimated from the first grid's runs (the case the estimate is for:
   runs this machine has done before);
3. the same methods at another labeled amount, estimated from the runs of the same methods scaled by their
   models.

Each line prints the estimate, the measured wall time from the first start to the last end, and their ratio;
the goal for grid 2 is within a factor of 1.5.

Run: .venv/bin/python bench/estimates.py [--home DIR] [--methods ...] [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.environment import prepare  # noqa: E402

prepare()  # before torch loads: offline, reproducible sums

from bench.sample_runs import sample_spec  # noqa: E402
from core.data import load_dataset  # noqa: E402
from core.runs import FINISHED, Registry, enqueue, grid_seconds, pump  # noqa: E402
from core.train import TrainConfig, resolve  # noqa: E402

METHODS = ("finetune", "ganbert", "features-lr", "tfidf-lr")


def run_grid(registry: Registry, configs: list[TrainConfig]) -> float:
    """Queue the grid and pump until every run ends; seconds from queueing to the last end."""
    queued = time.time()
    ids = enqueue(registry, configs)
    while True:
        pump(registry)
        runs = [registry.get(i) for i in ids]
        if all(r.status in FINISHED for r in runs):
            break
        time.sleep(1.0)
    bad = [(r.id, r.status, r.message) for r in runs if r.status != "done"]
    if bad:
        raise SystemExit(f"runs did not finish: {bad}")
    return max(r.ended for r in runs) - queued


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", help="a studio home to use (default: a fresh temporary one)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--per-class", type=int, nargs=2, default=[5, 20], help="the first amount, then another")
    args = parser.parse_args()
    spec = sample_spec()
    if spec is None:
        return 2
    home = Path(args.home or tempfile.mkdtemp(prefix="studio-estimates-"))
    os.environ["STUDIO_HOME"] = str(home)
    registry = Registry()
    ds = load_dataset(spec)
    sizes = (len(ds.train), None if ds.val is None else len(ds.val), len(ds.test), len(ds.labels))

    def grid(seeds: list[int], per_class: int) -> list[TrainConfig]:
        return [resolve(TrainConfig(data=spec, method=m, frozen=True, per_class=per_class, fraction=None, seed=s))
                for m in args.methods for s in seeds]

    shift = max(args.seeds) + 1
    plans = [("first grid, no history", grid(args.seeds, args.per_class[0])),
             ("same grid, other seeds", grid([s + shift for s in args.seeds], args.per_class[0])),
             (f"another amount ({args.per_class[1]}/class)", grid(args.seeds, args.per_class[1]))]
    ratios = {}
    for name, configs in plans:
        estimate = grid_seconds(registry, configs, *sizes, texts=ds.texts())
        took = run_grid(registry, configs)
        ratios[name] = estimate.seconds / took
        print(f"{name:<32} {len(configs)} runs: estimated {estimate.seconds:6.0f} s ({estimate.from_history} from "
              f"history, {estimate.guessed} guessed), took {took:6.0f} s: ratio {ratios[name]:.2f}", flush=True)
    goal = ratios["same grid, other seeds"]
    print(f"grid done before: estimate within a factor of {max(goal, 1 / goal):.2f} (goal 1.5)")
    if not args.home:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
