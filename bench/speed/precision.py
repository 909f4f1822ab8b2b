"""Do bf16 features give the accuracy of fp32 ones? On the real M4 sample (../shared/data/m4-sample), the two
references that read frozen features directly (features-lr and a frozen head), 5 seeds at 5 and 20 labels per
class, encoded once in fp32 and once in bf16 autocast. Emulated bf16 on a CPU without native support computes
the same numbers as native bf16, only slower, so the accuracy comparison holds for machines that have it.
Prints the mean accuracies, the mean paired difference and its largest seed, and PASS when every mean
differs by at most 0.01.

First, side by side in this run: MiniLM's encoding speed in fp32 and in bf16 autocast on the sample's texts
(up to 256) at 128 tokens (interleaved rounds, best of 3), and whether `--precision auto` picks the faster one
on this machine.
Run: .venv/bin/python -m bench.speed.precision [--speed-only]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from core.backbone.device import pick_device, pinned_precision
from core.backbone.encode import encode_texts, load_encoder, load_tokenizer
from core.data import DataSpec, load_dataset
from core.paths import REPO_ROOT
from core.runs import RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, resolve

M4 = REPO_ROOT.parent / "shared" / "data" / "m4-sample"


def speed(data: DataSpec, home: Path) -> bool:
    """Texts per second in each precision, measured in alternating rounds so both see the same machine."""
    texts = [t for frame in load_dataset(data, home).splits.values() for t in frame["text"]][:256]
    device = pick_device("auto")
    model, tokenizer = load_encoder(None, device), load_tokenizer(None)  # the bundled MiniLM
    encode_texts(model, tokenizer, texts[:32], 128)  # warm-up: first-call allocations and kernel choice
    best = {"fp32": 0.0, "bf16": 0.0}
    for _ in range(3):
        for precision in best:
            start = time.perf_counter()
            encode_texts(model, tokenizer, texts, 128, bf16=precision == "bf16")
            best[precision] = max(best[precision], len(texts) / (time.perf_counter() - start))
    auto = pinned_precision("auto", device)
    faster = max(best, key=best.get)
    print(f"encoding {len(texts)} texts at 128 tokens on {device}: fp32 {best['fp32']:.1f} texts/s, bf16 "
          f"{best['bf16']:.1f} texts/s (bf16/fp32 {best['bf16'] / best['fp32']:.2f}x); auto picks {auto}, "
          f"{'the faster' if auto == faster else 'NOT the faster'}", flush=True)
    return auto == faster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speed-only", action="store_true", help="the encoding speeds and auto's pick only")
    args = parser.parse_args()
    data = DataSpec(train=str(M4 / "train.jsonl"), test=str(M4 / "dev.jsonl"))
    with tempfile.TemporaryDirectory() as scratch:
        ok = speed(data, Path(scratch))
    if args.speed_only:
        return 0 if ok else 1
    with tempfile.TemporaryDirectory() as home:
        for method in ("features-lr", "finetune"):
            for per_class in (5, 20):
                acc = {}
                for precision in ("fp32", "bf16"):
                    start, acc[precision] = time.perf_counter(), []
                    for seed in range(5):
                        config = resolve(TrainConfig(data=data, method=method, frozen=True, fraction=None,
                                                     per_class=per_class, seed=seed, precision=precision),
                                         Path(home))
                        folder = RunFolder(Path(home) / f"{method}-{per_class}-{precision}-{seed}")
                        result = train_into(config, folder, Path(home), lambda e: None, lambda: False)
                        acc[precision].append(result["test"]["accuracy"])
                    print(f"{method:<12}{per_class:>3}/class {precision}: mean {np.mean(acc[precision]):.3f} "
                          f"({time.perf_counter() - start:.0f} s for 5 seeds)", flush=True)
                diff = np.array(acc["bf16"]) - np.array(acc["fp32"])
                ok &= abs(diff.mean()) <= 0.01
                largest = diff[np.abs(diff).argmax()]
                print(f"{'':<12}bf16 − fp32: mean {diff.mean():+.4f}, largest seed {largest:+.4f}", flush=True)
    print("PASS: auto picks the faster precision, and bf16 features are within 0.01 of fp32" if ok else
          "FAIL: auto picks the slower precision, or bf16 features differ by more than 0.01")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
