"""Frozen-feature mode on a CPU, measured side by side in one process on the built-in corpus:

1. encoding the whole corpus once (train, validation and test) in fp32: the reference time;
2. the frozen grid, finetune (a head on frozen features), ganbert G1 and ganbert G2 × 4 labeled fractions,
   from an empty feature cache. The cache's promise is that the grid encodes each text once:
   `grid_encoding_over_encoding`, the encoding summed over the grid's runs against the reference (goal ≤ 1.3).
   What the runs do beyond encoding is training, reported as `grid_training_s` with each run's share: since
   issue 22 a frozen GAN-BERT run trains its faithful budget (30 epochs over every unlabeled text), which no
   cache can shorten;
3. a new user's first run, a frozen head at 10 labels per class, from an empty feature cache:
   `cold_run_over_full_encoding` (goal ≤ 0.35).

Also prints where each run's time goes, from the run's own events (encoding vs the rest), so the overhead
beyond encoding can be found. Ends with one JSON line of the figures.
Run: .venv/bin/python -m bench.speed.frozen_grid
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from core.backbone.encode import embed_texts
from core.data import CorpusConfig, DataSpec
from core.runs import RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, resolve
from core.train.inputs import load_data

FRACTIONS = (0.01, 0.05, 0.1, 0.5)
GRID = (("finetune", "head"), ("ganbert", "noise"), ("ganbert", "bow"))  # a method, and its generator or head


class Clock:
    """Splits a run's wall time into encoding (from its first to its last `features` event) and the rest."""

    def __init__(self):
        self.first = self.last = None

    def __call__(self, event: dict) -> None:
        if event["type"] == "features":
            now = time.perf_counter()
            self.first = self.first or now
            self.last = now

    @property
    def encoding(self) -> float:
        return 0.0 if self.first is None else self.last - self.first


def timed_run(config: TrainConfig, home: Path, name: str) -> tuple[float, float, dict]:
    """Wall seconds, the encoding's share of them, and the run's result."""
    clock = Clock()
    start = time.perf_counter()
    result = train_into(resolve(config, home), RunFolder(home / "runs" / name), home, clock, lambda: False)
    return time.perf_counter() - start, clock.encoding, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-len", type=int, help="tokens per text (default: auto, from the training texts)")
    args = parser.parse_args()
    data = DataSpec(builtin=CorpusConfig())
    scratch = Path(tempfile.mkdtemp(prefix="bench-frozen-grid-"))  # the corpus's cache; each timing has its own home
    base = resolve(TrainConfig(data=data, frozen=True, max_len=args.max_len), scratch)  # auto's length, for every run

    ds = load_data(base, scratch)
    texts = [t for split in ("train", "val", "test") for t in ds.splits[split]["text"].tolist()]
    start = time.perf_counter()
    embed_texts(texts, base.backbone, max_len=base.max_len, pooling=base.resolved_pooling, device="cpu")
    encoding = time.perf_counter() - start
    print(f"encode the whole corpus once, fp32: {len(texts)} texts in {encoding:.1f} s "
          f"({len(texts) / encoding:.0f} texts/s)", flush=True)

    with tempfile.TemporaryDirectory() as home:
        start, grid_encoding = time.perf_counter(), 0.0
        for method, generator in GRID:
            for fraction in FRACTIONS:
                own = {"generator": generator} if method == "ganbert" else {}
                config = TrainConfig.of(data=data, method=method, fraction=fraction, frozen=True, max_len=base.max_len,
                                        **own)
                seconds, encoded, result = timed_run(config, Path(home), f"{method}-{generator}-{fraction}")
                grid_encoding += encoded
                fake = result.get("val_fake_prob")
                print(f"  {method:<9}{generator:<6}{fraction:<6}{seconds:7.1f} s (encoding {encoded:5.1f} s, "
                      f"rest {seconds - encoded:5.1f} s, {result.get('steps')} steps)  acc "
                      f"{result['test']['accuracy']:.3f}" + ("" if fake is None else f", val fake prob {fake:.2f}"),
                      flush=True)
        grid = time.perf_counter() - start
    print(f"grid, 12 runs from an empty cache: {grid:.1f} s = {grid / encoding:.2f}× the encoding; its encoding "
          f"{grid_encoding:.1f} s = {grid_encoding / encoding:.2f}×, its training {grid - grid_encoding:.1f} s",
          flush=True)

    with tempfile.TemporaryDirectory() as home:
        config = TrainConfig(data=data, method="finetune", fraction=None, per_class=10, frozen=True,
                             max_len=base.max_len)
        cold, encoded, result = timed_run(config, Path(home), "cold")
    print(f"first frozen run at 10/class, empty cache: {cold:.1f} s (encoding {encoded:.1f} s) = "
          f"{cold / encoding:.2f}× the full encoding; acc {result['test']['accuracy']:.3f}", flush=True)

    figures = {"texts": len(texts), "encoding_s": round(encoding, 1), "grid_s": round(grid, 1),
               "cold_run_s": round(cold, 1), "grid_over_encoding": round(grid / encoding, 3),
               "grid_encoding_over_encoding": round(grid_encoding / encoding, 3),
               "grid_training_s": round(grid - grid_encoding, 1),
               "cold_run_over_full_encoding": round(cold / encoding, 3)}
    ok = figures["grid_encoding_over_encoding"] <= 1.3 and figures["cold_run_over_full_encoding"] <= 0.35
    print(json.dumps({**figures, "goals_met": ok}))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
