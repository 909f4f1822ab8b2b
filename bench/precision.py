"""Do bf16 features give the accuracy of fp32 ones? On the real M4 sample (../shared/data/m4-sample), the two
references that read frozen features directly (features-lr and a frozen head), 5 seeds at 5 and 20 labels per
class, encoded once in fp32 and once in bf16 autocast. Emulated bf16 on a CPU without native support computes
the same numbers as native bf16, only slower, so the accuracy comparison holds for machines that have it.
Prints the mean accuracies, the mean paired difference and its largest seed, and PASS when every mean
differs by at most 0.01. Run: .venv/bin/python bench/precision.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from core.data import DataSpec  # noqa: E402
from core.paths import REPO_ROOT  # noqa: E402
from core.runs import RunFolder  # noqa: E402
from core.runs.execute import train_into  # noqa: E402
from core.train import TrainConfig  # noqa: E402

M4 = REPO_ROOT.parent / "shared" / "data" / "m4-sample"


def main() -> int:
    data = DataSpec(train=str(M4 / "train.jsonl"), test=str(M4 / "dev.jsonl"))
    ok = True
    with tempfile.TemporaryDirectory() as home:
        os.environ["STUDIO_HOME"] = home
        for method in ("features-lr", "finetune"):
            for per_class in (5, 20):
                acc = {}
                for precision in ("fp32", "bf16"):
                    start, acc[precision] = time.perf_counter(), []
                    for seed in range(5):
                        config = TrainConfig(data=data, method=method, frozen=True, fraction=None, per_class=per_class,
                                             seed=seed, precision=precision)
                        folder = RunFolder(Path(home) / f"{method}-{per_class}-{precision}-{seed}")
                        result = train_into(config, folder, lambda e: None, lambda: False)
                        acc[precision].append(result["test"]["accuracy"])
                    print(f"{method:<12}{per_class:>3}/class {precision}: mean {np.mean(acc[precision]):.3f} "
                          f"({time.perf_counter() - start:.0f} s for 5 seeds)", flush=True)
                diff = np.array(acc["bf16"]) - np.array(acc["fp32"])
                ok &= abs(diff.mean()) <= 0.01
                largest = diff[np.abs(diff).argmax()]
                print(f"{'':<12}bf16 − fp32: mean {diff.mean():+.4f}, largest seed {largest:+.4f}", flush=True)
    print("PASS: bf16 features within 0.01 of fp32" if ok else "FAIL: bf16 features differ by more than 0.01")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
