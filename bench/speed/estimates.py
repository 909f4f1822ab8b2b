"""How far the Train page's time estimate is from the time a grid takes, on this machine.

A grid of frozen runs on a real corpus goes through the real queue (background worker processes, as the Train
page launches them) in a fresh studio home, three times:

1. the first grid, estimated with no history: the methods' own models at laptop-CPU figures, and the
   encoding at the laptop figure (goal: within 2x of the time it takes);
2. the same grid with other seeds, estimated from the first grid's runs (the case the estimate is for:
   runs this machine has done before; goal: within 1.5x);
3. the same methods at another labeled amount, estimated from the runs of the same methods scaled by their
   models.

The grids (`GRIDS`): on the M4 sample (`--corpus m4-sample`), every frozen method and GAN-BERT's control
on its whole pool; on L2R (`--corpus l2r`: train as the pool, validated on dev, tested on test), frozen GAN-BERT
G1 at pools of 0 and 1,000 unlabeled texts and its control at 1,000, beside features + LR and TF-IDF + LR.
`--backbone smollm2-135m` runs the grid on SmolLM2's features (its defaults: hidden states, the length from the
data; `--features both` adds its token probabilities), whose encoding is most of a first grid's time.

Each grid's record keeps what its estimate read (the finished runs, the encoding speeds, the share of texts already
cached), so `replay` prices the grid again with today's estimator against the time it took: tests/test_estimates.py
holds the estimator to the records that way.

Each line prints the estimate, the measured wall time from queueing to the last end, and their ratio
(estimate / actual: above 1 promises too long); ends with one JSON line holding `first_grid_ratio`,
`repeated_grid_ratio` and `other_amount_ratio`.

Run: .venv/bin/python -m bench.speed.estimates [--corpus m4-sample|l2r] [--backbone smollm2-135m] [--features both]
     [--home DIR] [--seeds 0 1] [--per-class 5 20]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from bench.sample_runs import CORPORA, RECORDS_DIR, cpu_name
from core.backbone.packaged import PACKAGED, converts
from core.data import load_dataset
from core.runs import FINISHED, Registry, Status, enqueue, grid_seconds, pump
from core.runs.encoding_speed import SPEEDS
from core.runs.estimate import ROWS, History, planned_rows, run_estimate, train_seconds
from core.runs.registry_store import named_speeds
from core.runs.run import Run
from core.train import TrainConfig, method_for, resolve

RECORD = RECORDS_DIR / "estimates.jsonl"
# each run of a grid: its method and settings, on top of frozen mode, the amount and the seed
GRIDS = {
    "m4-sample": [{"method": "finetune"}, {"method": "ganbert"}, {"method": "ganbert", "adversarial": False},
                  {"method": "features-lr"}, {"method": "tfidf-lr"}],
    "l2r": [{"method": "ganbert", "unlabeled_limit": 0}, {"method": "ganbert", "unlabeled_limit": 1000},
            {"method": "ganbert", "adversarial": False, "unlabeled_limit": 1000}, {"method": "features-lr"},
            {"method": "tfidf-lr"}],
}


def run_grid(registry: Registry, configs: list[TrainConfig]) -> tuple[float, list]:
    """Queue the grid and pump until every run ends; seconds from queueing to the last end, and the runs."""
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
    return max(r.ended for r in runs) - queued, runs


KEPT = (*ROWS, "seconds", "encode_seconds", "gradient_checkpointing")  # what an estimate reads of a run's metrics


def compact(config: TrainConfig) -> str:
    """A config as JSON without the fields at their defaults (`TrainConfig.from_json` gives them back), but those
    it reads a missing value of as an older studio's."""
    default, mine = json.loads(TrainConfig().to_json()), json.loads(config.to_json())
    kept = ("data", "cleaning", "validation", "encoder_engine", "precision", "gan_preset")
    config_json = json.dumps({k: v for k, v in mine.items() if k in kept or v != default.get(k)})
    assert TrainConfig.from_json(config_json) == config, "a compact config reads back as another"
    return config_json


def kept(run: Run) -> dict:
    """A finished run as the estimate reads it."""
    return {"config": compact(run.config), "claimed": run.claimed, "started": run.started, "ended": run.ended,
            "metrics": {k: v for k, v in (run.metrics or {}).items() if k in KEPT}}


class Recorded:
    """A registry as a grid's estimate read it: its finished runs and its encoding speeds, in a studio `home` whose
    stores it looks up."""

    def __init__(self, state: dict, home: Path):
        self.home = home
        self.runs = [Run(id=f"r{i}", created=r["claimed"] or 0.0, started=r["started"], ended=r["ended"],
                         status=Status.DONE, config=TrainConfig.from_json(r["config"]), label="", pid=None,
                         device=None, heartbeat=None, progress=1.0, evaluations=0, samples_per_s=None, message=None,
                         metrics=r["metrics"], cancel_requested=False, deleted=False, claimed=r["claimed"])
                     for i, r in enumerate(state["runs"])]
        # as a registry of today keys them (migration 7): a grid recorded before keyed MiniLM's passes by no name
        self.speeds = state["speeds"] and json.dumps(named_speeds(json.loads(state["speeds"])))

    def list(self, statuses=None) -> list[Run]:
        return self.runs

    def setting(self, key: str, default: str | None = None) -> str | None:
        return self.speeds if key == SPEEDS else default


def replay(state: dict, texts: list[str], test_texts: list[str], home: Path) -> float:
    """The grid's estimate by today's estimator, from what it read when it ran (`state`) and the corpus' texts (a
    record from before the test split's share was kept apart read one share for both)."""
    configs = [TrainConfig.from_json(c) for c in state["configs"]]
    test_texts = test_texts if "cached_test" in state else []
    return grid_seconds(Recorded(state, home), configs, *state["sizes"], texts=texts, test_texts=test_texts,
                        cached=lambda config, some: state["cached_test"] if some is test_texts else state["cached"]
                        ).seconds


def per_run(history: History, runs: list, sizes: tuple) -> None:
    """Each run's estimate outside encoding (from `history`, as the grid's was made) against what it took, and
    its encoding: where an estimate goes wrong."""
    for r in runs:
        guess, known = run_estimate(history, r.config, planned_rows(r.config, *sizes))
        drawn = tuple((r.metrics or {}).get(k) for k in ROWS)
        print(f"  {method_for(r.config).short(r.config):<28} seed {r.config.seed}: estimated {guess:6.1f} s "
              f"({'history' if known else 'guess'}), took {train_seconds(r):6.1f} s + encoding "
              f"{(r.metrics or {}).get('encode_seconds', 0.0):5.1f} s; rows {drawn}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", help="a studio home to use (default: a fresh temporary one)")
    parser.add_argument("--corpus", choices=list(GRIDS), default="m4-sample")
    parser.add_argument("--backbone", choices=[n for n in PACKAGED if converts(n)], default=None,
                        help="a packaged causal LM (default: MiniLM)")
    parser.add_argument("--features", choices=("hidden", "both"), default="hidden", help="what a causal backbone's "
                        "frozen runs read (default: hidden states)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--per-class", type=int, nargs=2, default=[5, 20], help="the first amount, then another")
    args = parser.parse_args()
    spec = CORPORA[args.corpus].spec()
    if spec is None:
        return 2
    home = Path(args.home or tempfile.mkdtemp(prefix="studio-estimates-"))
    registry = Registry(home)
    ds = load_dataset(spec, home)
    sizes = (len(ds.train), None if ds.val is None else len(ds.val), len(ds.test), len(ds.labels))

    def grid(seeds: list[int], per_class: int) -> list[TrainConfig]:
        return [resolve(TrainConfig.of(data=spec, frozen=True, per_class=per_class, fraction=None, seed=s,
                                    backbone=args.backbone, features=args.features, **run), home)
                for run in GRIDS[args.corpus] for s in seeds]

    shift = max(args.seeds) + 1
    plans = [("first grid, no history", grid(args.seeds, args.per_class[0])),
             ("same grid, other seeds", grid([s + shift for s in args.seeds], args.per_class[0])),
             (f"another amount ({args.per_class[1]}/class)", grid(args.seeds, args.per_class[1]))]
    ratios, grids = {}, {}
    for name, configs in plans:
        done = registry.list(statuses=(Status.DONE,))
        history = History(done)
        estimate = grid_seconds(registry, configs, *sizes, texts=ds.texts(), test_texts=list(ds.test["text"]))
        state = {"configs": [compact(c) for c in configs], "sizes": sizes, "cached": estimate.cached,
                 "cached_test": estimate.cached_test,
                 "runs": [kept(r) for r in done], "speeds": registry.setting(SPEEDS)}  # as the estimate read them
        took, runs = run_grid(registry, configs)
        ratios[name] = estimate.seconds / took
        again = replay(json.loads(json.dumps(state)), ds.texts(), list(ds.test["text"]), home)  # as the record reads it
        if abs(again - estimate.seconds) > 0.01 * estimate.seconds:
            raise SystemExit(f"{name}: the replay gives {again:.1f} s, the estimate gave {estimate.seconds:.1f} s")
        grids[name] = {"runs": len(configs), "estimated_s": round(estimate.seconds, 1), "took_s": round(took, 1),
                       "replay": state}
        print(f"{name:<32} {len(configs)} runs: estimated {estimate.seconds:6.0f} s ({estimate.from_history} from "
              f"history, {estimate.guessed} guessed), took {took:6.0f} s: ratio {ratios[name]:.2f}", flush=True)
        per_run(history, runs, sizes)
    first, repeated, other = ratios.values()
    print(f"first grid within a factor of {max(first, 1 / first):.2f} (goal 2), a grid done before within "
          f"{max(repeated, 1 / repeated):.2f} (goal 1.5)")
    line = {"corpus": args.corpus, "backbone": args.backbone or "minilm", "features": args.features,
            "cpu": cpu_name(), "runs": len(plans[0][1]),
            "first_grid_ratio": round(first, 3),
            "repeated_grid_ratio": round(repeated, 3), "other_amount_ratio": round(other, 3), "grids": grids}
    print(json.dumps({k: v for k, v in line.items() if k != "grids"}))
    with RECORD.open("a") as f:  # the estimates' record, read by bench.report
        f.write(json.dumps({"date": time.strftime("%Y-%m-%d"), **line}) + "\n")
    if not args.home:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
