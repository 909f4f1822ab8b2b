"""Training the top K layers on stored states against training every layer, side by side in one process (issue 94),
on a backbone cut at its pooled layer (SmolLM2: 20 of 30), L2R's texts at 256 tokens:

- **a step**: the studio's fine-tuning step through every layer against a top-K step on stored states (K = 2, 4,
  8), each through `Representer` as a run takes it, alternating, best of the repeats (texts/s);
- **the store**: storing a text's states below the boundary (texts/s through those layers), their size on disk a
  text, and reading a batch's states back against computing them again (what GAN-BERT's unlabeled batches do when
  the store lacks them);
- **a whole run with its test split** (`--runs`, the default with `--backbone`): L2R dev at 20 labels a class, every
  layer against top K, the top-K run first with an empty store (seed 0) and then as a second seed finds it (seed 1:
  its test split stored, its labeled and validation texts not), wall time each, in a scratch studio home.

Goal (issue 94): a top-K run at least 3x shorter than an all-layer run at 256 tokens.
Run: .venv/bin/python -m bench.speed.top_layers [--backbone smollm2-135m] [--samples 96] [--max-len 256]
     [--layers 2 4 8] [--run-layers 4] [--repeats 2] [--no-runs | --runs-only]
Ends with one JSON line, also appended to bench/records/speed.jsonl.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bench.sample_runs import CORPORA, record_speed
from bench.speed.train import NAMES, sample
from core.backbone import prepare_backbone
from core.backbone.encode import load_tokenizer
from core.backbone.packaged import SMOLLM2
from core.train import METHODS, TrainConfig, bucketed_batches, resolve
from core.train.config import cut_layers
from core.train.inputs import Representer
from core.train.methods.finetune import Finetune
from core.train.state_store import clear, summaries

CPU = torch.device("cpu")


def config_for(backbone: str, max_len: int, batch_size: int, layers: int, home: Path) -> TrainConfig:
    return resolve(TrainConfig(method="finetune", backbone=backbone, max_len=max_len, batch_size=batch_size,
                               device="cpu", train_layers=layers), home)


def one_epoch(backbone: str, texts: list[str], labels: np.ndarray, max_len: int, batch_size: int, layers: int,
              home: Path) -> dict:
    """One model's storing pass (top K) and one epoch of fine-tuning steps over the texts, as `StepTrainer.fit`
    takes them: texts/s of each, and the store's bytes a text."""
    config = config_for(backbone, max_len, batch_size, layers, home)
    torch.manual_seed(0)
    method = Finetune(METHODS["finetune"])
    model = method.build_model(config, NAMES, CPU, home).train()
    ids = load_tokenizer(model.backbone)(texts, truncation=True, max_length=max_len, verbose=False)["input_ids"]
    rep = Representer(model, {"pool": ids}, config, CPU, home)
    start = time.perf_counter()
    rep.prepare({"pool": np.arange(len(ids))}, lambda event: None)
    stored = time.perf_counter() - start
    batches = bucketed_batches(np.array([len(x) for x in ids]), batch_size, np.random.default_rng(0))
    step = method.start(model, config, None, len(batches))
    start = time.perf_counter()
    for b in batches:
        step(rep("pool", b), torch.from_numpy(labels[b]))
    seconds = time.perf_counter() - start
    found = {"train_texts_per_s": len(texts) / seconds}
    if rep.states is not None:
        size = sum(p.stat().st_size for p in rep.states.store.folder.glob("*.safetensors"))
        reading = time.perf_counter()
        for b in batches:
            rep.states("pool", b)
        reading = time.perf_counter() - reading
        computing = time.perf_counter()
        for b in batches:
            rep.states.compute([ids[i] for i in b])
        computing = time.perf_counter() - computing
        found |= {"store_texts_per_s": len(texts) / stored, "store_bytes_per_text": size / len(texts),
                  "read_over_compute": reading / computing}
    return found


def steps(backbone: str, texts: list[str], labels: np.ndarray, max_len: int, batch_size: int, layers: list[int],
          repeats: int, home: Path) -> dict:
    """Every K's epoch and store, alternating with every layer's, best of `repeats`, each from an empty store."""
    best: dict[int, dict] = {}
    for _ in range(repeats):
        for k in [0, *layers]:
            clear(home)
            found = one_epoch(backbone, texts, labels, max_len, batch_size, k, home)
            mine = best.setdefault(k, found)
            for key, value in found.items():
                mine[key] = min(mine[key], value) if key == "read_over_compute" else max(mine[key], value)
    whole = best[0]["train_texts_per_s"]
    for k in layers:
        best[k]["step_over_all_layers"] = best[k]["train_texts_per_s"] / whole
        print(f"K={k}: steps {best[k]['train_texts_per_s']:.2f} texts/s ({best[k]['step_over_all_layers']:.2f}x every "
              f"layer's {whole:.2f}); storing {best[k]['store_texts_per_s']:.1f} texts/s, "
              f"{best[k]['store_bytes_per_text'] / 2**20:.2f} MiB a text; reading a batch back takes "
              f"{best[k]['read_over_compute']:.3f} of computing it", flush=True)
    return {str(k): v for k, v in best.items()}


def runs(backbone: str, k: int, home: Path) -> dict:
    """Whole runs with their test split on L2R dev at 20 a class, in the scratch home: every layer (seed 0), top K
    with an empty store (seed 0), top K as a second seed finds the store (seed 1); wall seconds each."""
    from core.runs import RunFolder
    from core.runs.execute import train_into

    spec = CORPORA["l2r-dev"].spec()
    took: dict = {}
    clear(home)
    for name, layers, seed in (("every layer", 0, 0), (f"top {k}, empty store", k, 0), (f"top {k}, second seed", k, 1)):
        config = resolve(TrainConfig(data=spec, method="finetune", backbone=backbone, per_class=20, fraction=None,
                                     seed=seed, train_layers=layers), home)
        start = time.perf_counter()
        result = train_into(config, RunFolder(home / "runs" / name.replace(" ", "-")), home, lambda e: None,
                            lambda: False)
        took[name] = {"seconds": time.perf_counter() - start, "accuracy": result["test"]["accuracy"],
                      "max_len": config.max_len, "checkpointing": bool(result.get("gradient_checkpointing"))}
        print(f"{name}: {took[name]['seconds']:.0f} s, test accuracy {took[name]['accuracy']:.3f} "
              f"({config.max_len} tokens" + (", gradient checkpointing on" if took[name]["checkpointing"] else "")
              + ")", flush=True)
    took["store_bytes"] = sum(s.bytes for s in summaries(home))
    every = took["every layer"]["seconds"]
    took["every_over_top_k"] = {name: every / took[name]["seconds"] for name in took
                                if name.startswith("top")}
    ratios = ", ".join(f"{n} {r:.2f}x" for n, r in took["every_over_top_k"].items())
    print(f"every layer's run over top {k}'s: {ratios}; the store holds {took['store_bytes'] / 2**20:.0f} MiB",
          flush=True)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default=SMOLLM2)
    parser.add_argument("--samples", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=256)
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 4, 8], help="the K of each top-K step")
    parser.add_argument("--run-layers", type=int, default=4, help="the K of the whole top-K runs")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-runs", action="store_true", help="the steps and the store alone")
    parser.add_argument("--runs-only", action="store_true", help="the whole runs alone")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-top-k-"))  # fresh stores; SmolLM2 converted once
    prepare_backbone(args.backbone, home=home)
    texts, labels = sample(args.samples)
    runs_, below = cut_layers(config_for(args.backbone, args.max_len, args.batch_size, 0, home))
    print(f"{args.backbone}: {torch.get_num_threads()} thread(s), its cut runs {runs_} layers, "
          f"{args.samples} L2R texts at {args.max_len} tokens", flush=True)
    summary = {"backbone": args.backbone, "threads": torch.get_num_threads(), "max_len": args.max_len,
               "texts": len(texts)}
    if not args.runs_only:
        summary["steps"] = steps(args.backbone, texts, labels, args.max_len, args.batch_size, args.layers, args.repeats,
                                 home)
    if not args.no_runs:
        summary["runs"] = runs(args.backbone, args.run_layers, home)
    record_speed("top-layers", summary)
    print(json.dumps(summary))
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
