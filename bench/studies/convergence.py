"""Accuracy against optimizer steps for each step-trained method, on the real M4 sample, at 5 and 20
labels per class (frozen MiniLM `layers` features, the last checkpoint kept), beside the converged
references `features-lr` and `tfidf-lr` on the same labeled rows. The default budgets
(`StepSpec.min_steps_frozen`) sit where these curves flatten.

Run: .venv/bin/python -m bench.studies.convergence [--seeds 0 1 2] [--steps 10 25 50 100 200 400 800]
Ends with one JSON line: mean test accuracy per method, amount and steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from core.data import DataSpec
from core.runs import RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, method_for, resolve, run_label

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "m4-sample"
CURVES = (("finetune", {}), ("ganbert", {"generator": "noise"}), ("ganbert", {"generator": "bow"}))
REFERENCES = ("features-lr", "tfidf-lr")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--per-class", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 25, 50, 100, 200, 400, 800])
    args = parser.parse_args()
    if not (SAMPLE / "train.jsonl").exists():
        print(f"the real sample is not at {SAMPLE}", file=sys.stderr)
        return 2
    data = DataSpec(train=str(SAMPLE / "train.jsonl"), test=str(SAMPLE / "dev.jsonl"))
    table: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as home:

        def accuracy(cfg: TrainConfig) -> float:
            accs = []
            for seed in args.seeds:
                run = cfg.with_(seed=seed)
                folder = RunFolder(Path(home) / "runs" / f"{len(table)}-{seed}-{time.time_ns()}")
                result = train_into(resolve(run, Path(home)), folder, Path(home), lambda e: None, lambda: False)
                accs.append(result["test"]["accuracy"])
            return statistics.mean(accs)

        for per_class in args.per_class:
            base = TrainConfig(data=data, fraction=None, per_class=per_class, frozen=True, selection="last")
            for method in REFERENCES:
                key = f"{method} @ {per_class}/class"
                table[key] = {"converged": accuracy(base.with_(method=method))}
                print(f"{key:<34} {table[key]['converged']:.3f}", flush=True)
            for method, own in CURVES:
                cfg = base.with_(method=method, **own)
                key = f"{method_for(cfg).short(cfg)} @ {per_class}/class"
                table[key] = {}
                for steps in args.steps:
                    table[key][str(steps)] = accuracy(cfg.with_(steps=steps))
                    print(f"{key:<34} {steps:>5} steps {table[key][str(steps)]:.3f}", flush=True)
                default = accuracy(cfg)
                table[key]["default"] = default
                print(f"{key:<34} default ({run_label(cfg)}) {default:.3f}", flush=True)
    print(json.dumps({"seeds": args.seeds, "mean_test_accuracy": table}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
