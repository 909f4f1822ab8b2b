"""Frozen-feature mode on a CPU: the full grid finetune, ganbert-noise and ganbert-bow × 4 labeled fractions
on the built-in corpus (12,000 train texts + 3,000 test), with MiniLM features encoded once and cached.
Also compares the pooling options on the same features budget.

Target (issue 3): the whole grid in minutes on a 2-core laptop CPU.
Run: .venv/bin/python bench/frozen_grid.py [--pooling layers mean cls] [--epochs 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.data import CorpusConfig, DataSpec  # noqa: E402
from core.runs import RunFolder  # noqa: E402
from core.runs.execute import train_into  # noqa: E402
from core.train import TrainConfig, run_label  # noqa: E402

FRACTIONS = (0.01, 0.05, 0.1, 0.5)
GRID = (("finetune", "noise"), ("ganbert", "noise"), ("ganbert", "bow"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--bf16", action="store_true",
                        help="bfloat16 autocast while encoding (measured 7x slower on a CPU without native bf16)")
    parser.add_argument("--pooling", nargs="+", default=["layers", "mean", "cls"], help="poolings to compare")
    parser.add_argument("--budget-minutes", type=float, default=15.0, help="the 'in minutes' target")
    args = parser.parse_args()
    data = DataSpec(builtin=CorpusConfig())
    rows = []
    with tempfile.TemporaryDirectory() as home:
        os.environ["STUDIO_HOME"] = home
        grid_start = time.perf_counter()
        for pooling in args.pooling:
            for method, generator in GRID if pooling == "layers" else (("finetune", "noise"),):
                for fraction in FRACTIONS:
                    cfg = TrainConfig(data=data, method=method, generator=generator, fraction=fraction, frozen=True,
                                      pooling=pooling, epochs=args.epochs, bf16=args.bf16)
                    t0 = time.perf_counter()
                    result = train_into(cfg, RunFolder(Path(home) / "runs" / f"{pooling}-{method}-{generator}-{fraction}"),
                                        lambda e: None, lambda: False)
                    rows.append((pooling, run_label(cfg), time.perf_counter() - t0, result["test"]["accuracy"],
                                 result["test"]["macro_f1"]))
                    print(f"{pooling:<7}{run_label(cfg):<36}{rows[-1][2]:>7.1f} s  acc {rows[-1][3]:.3f}  "
                          f"macro-F1 {rows[-1][4]:.3f}", flush=True)
            if pooling == "layers":
                grid_seconds = time.perf_counter() - grid_start
    print(f"grid (3 methods × 4 fractions, layers pooling, features included): {grid_seconds / 60:.1f} min")
    for pooling in args.pooling:
        accs = [r[3] for r in rows if r[0] == pooling and r[1].startswith("finetune")]
        print(f"pooling {pooling:<7} finetune mean accuracy over fractions: {sum(accs) / len(accs):.3f}")
    ok = grid_seconds / 60 <= args.budget_minutes
    print(f"target: grid within {args.budget_minutes:.0f} min: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
