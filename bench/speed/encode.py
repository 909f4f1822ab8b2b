"""Frozen encoding, engine against engine: texts/s of each engine at 128, 256 and 512 tokens on real texts, measured
side by side in one process (alternating, best of the repeats), and what each costs in accuracy on the two real sets.

Engines: torch at fp32 and at bf16 (autocast; native on CPUs with AVX512-BF16 or AMX, emulated and slow elsewhere),
torch's own int8 dynamic quantisation (measured, not offered), and ONNX Runtime on the exported backbone in fp32 and
with int8 weights. Speeds are on 600 real texts: the M4 sample's (long: most pass 256 tokens) and L2R's (paragraphs).
Accuracy: features + LR and the trained head at 5 and 20 labels per class, 5 seeds, on the M4 sample (tested on its
dev texts) and on L2R's dev split, each engine's mean against fp32 torch's; those runs go through the benches' home
and the corpora's records like every bench's.

`auto` is the fastest engine whose accuracy stays within 0.01 of fp32 torch everywhere; the baseline is today's
torch path at the precision `auto` runs on this CPU (bf16 where it is native, else fp32).

Each engine's texts/s is also told as GFLOP/s (a text's forward FLOPs at its own truncated length:
bench/speed/ceiling.py)
and as a share of a 2048³ bf16 matrix product's rate measured in the same process.

Run: .venv/bin/python -m bench.speed.encode [--lengths 128 256 512] [--repeats 2] [--seeds 0 1 2 3 4] [--speed-only]
     .venv/bin/python -m bench.speed.encode --backbone smollm2-135m [--lengths 128 256] [--texts 96]  (the levers of a
     causal LM: bench/speed/encode_causal.py; with --int8-accuracy N, what int8 weights cost in accuracy instead)
Ends with one JSON line: auto_engine, auto_over_torch_256, auto_over_torch_512, accuracy_drop_max, the table,
ceiling_gflops and gflop_per_text.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from bench.sample_runs import CORPORA, DEFAULT_HOME, record_speed, run_once
from bench.speed.ceiling import matmul_ceiling, text_flops
from core.backbone import resolve_backbone
from core.backbone.device import native_bf16
from core.backbone.encode import encode_texts, load_encoder, load_tokenizer
from core.backbone.engines import encode_onnx, usable_engine
from core.backbone.packaged import PACKAGED, converts
from core.data import load_file
from core.runs import Registry, reconcile
from core.train import TrainConfig

CANDIDATES = ("torch-fp32", "torch-bf16", "torch-int8", "onnx", "onnx-int8")
OFFERED = {"torch-fp32": ("torch", "fp32"), "torch-bf16": ("torch", "bf16"), "onnx": ("onnx", "fp32"),
           "onnx-int8": ("onnx-int8", "fp32")}  # engine and precision of a run; torch-int8 is measured only
BOUND = 0.01  # the largest fall in mean accuracy an engine may cost against fp32 torch


def texts() -> list[str]:
    """600 real texts: the M4 sample's 193 and 407 of L2R's train split, drawn by seed 0."""
    m4 = [t for f in ("train.jsonl", "dev.jsonl") for t in load_file(CORPORA["m4-sample"].folder / f)[0]["text"]]
    l2r = load_file(CORPORA["l2r"].folder / "train.jsonl")[0]["text"].sample(600 - len(m4), random_state=0)
    return m4 + l2r.tolist()


def speed(name: str, sample: list[str], max_len: int, home: Path) -> float:
    """Texts/s of one engine on the sample at one max length ('layers' pooling, as frozen runs read it)."""
    backbone = resolve_backbone(None, home=None)
    start = time.perf_counter()
    if name.startswith("onnx"):
        encode_onnx(backbone, home, sample, max_len, "layers", name == "onnx-int8")
    else:
        model = load_encoder(backbone, "cpu")
        if name == "torch-int8":
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        start = time.perf_counter()  # the model is loaded, as the export is cached: encoding alone is timed
        encode_texts(model, load_tokenizer(backbone), sample, max_len, "layers", bf16=name == "torch-bf16")
    return len(sample) / (time.perf_counter() - start)


def batch_speeds(lengths: list[int], repeats: int) -> dict[str, dict[int, float]]:
    """MiniLM's torch pass (fp32) in batches of 32 texts against the studio's batches of up to 4,096 tokens on a
    CPU, texts/s at each length, alternating: the token budget was measured on SmolLM2, and MiniLM reads it too."""
    from core.backbone.encode import CPU_BATCH_TOKENS

    sample, backbone = texts(), resolve_backbone(None, home=None)
    model, tokenizer = load_encoder(backbone, "cpu"), load_tokenizer(backbone)
    kinds = {"32 texts": None, f"{CPU_BATCH_TOKENS:,} tokens": CPU_BATCH_TOKENS}
    best: dict[str, dict[int, float]] = {k: {} for k in kinds}
    for max_len in lengths:
        for _ in range(repeats):
            for kind, budget in kinds.items():
                start = time.perf_counter()
                encode_texts(model, tokenizer, sample, max_len, "layers", budget=budget)
                best[kind][max_len] = max(best[kind].get(max_len, 0.0), len(sample) / (time.perf_counter() - start))
        print(f"{max_len} tokens: " + ", ".join(f"batches of {k} {best[k][max_len]:.1f}/s" for k in kinds), flush=True)
    return best


def speeds(lengths: list[int], repeats: int, home: Path) -> dict[str, dict[int, float]]:
    sample = texts()
    for name in ("onnx", "onnx-int8"):  # exported once, before any timing
        usable_engine(name, resolve_backbone(None, home=None), home, torch.device("cpu"))
    best: dict[str, dict[int, float]] = {n: {} for n in CANDIDATES}
    for max_len in lengths:
        for _ in range(repeats):  # alternating: a busy core slows all of them alike
            for name in CANDIDATES:
                best[name][max_len] = max(best[name].get(max_len, 0.0), speed(name, sample, max_len, home))
        print(f"{max_len} tokens: " + ", ".join(f"{n} {best[n][max_len]:.1f}/s" for n in CANDIDATES), flush=True)
    return best


def accuracy(seeds: list[int], home: str) -> dict[str, dict[str, float]]:
    """Mean test accuracy of each offered engine per (corpus, method, amount), through the benches' home."""
    registry = Registry(Path(home))
    reconcile(registry)
    out: dict[str, dict[str, float]] = {}
    for corpus in (CORPORA["m4-sample"], CORPORA["l2r-dev"]):
        spec = corpus.spec()
        for method in ("features-lr", "finetune"):
            for per_class in (5, 20):
                for name, (engine, precision) in OFFERED.items():
                    scores = []
                    for seed in seeds:
                        config = TrainConfig(data=spec, method=method, frozen=True, fraction=None, per_class=per_class,
                                             seed=seed, encoder_engine=engine, precision=precision, tags=("encode",))
                        run = run_once(registry, config, corpus=corpus)
                        scores.append(run.metrics["test"]["accuracy"])
                    key = f"{corpus.name} · {'head' if method == 'finetune' else method} · {per_class}/class"
                    out.setdefault(key, {})[name] = float(np.mean(scores))
                print(f"{key}: " + ", ".join(f"{n} {v:.3f}" for n, v in out[key].items()), flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--home", default=DEFAULT_HOME)
    parser.add_argument("--speed-only", action="store_true", help="no accuracy runs (auto is then not chosen)")
    parser.add_argument("--backbone", choices=[n for n in PACKAGED if converts(n)], default=None,
                        help="a packaged causal LM: its levers instead (bench/speed/encode_causal.py)")
    parser.add_argument("--texts", type=int, default=96, help="with --backbone: how many of the real texts")
    parser.add_argument("--token-budget", type=int, default=4096, help="with --backbone: tokens a batch")
    parser.add_argument("--batches", action="store_true", help="MiniLM's batches of texts against batches of "
                        "tokens instead (recorded as encode-batches)")
    parser.add_argument("--int8-accuracy", type=int, metavar="TEST_TEXTS", default=0,
                        help="with --backbone: features + LR on fp32 and int8 features (M4 sample, L2R dev with this "
                             "many of its dev texts), 5 and 20/class, --seeds; recorded apart")
    args = parser.parse_args()
    if args.batches:
        found = batch_speeds(args.lengths, args.repeats)
        record_speed("encode-batches", {"backbone": "minilm", "texts": 600, "texts_per_s": found})
        return 0
    if args.backbone and args.int8_accuracy:
        from bench.speed.encode_causal import accuracy_corpora, int8_accuracy

        home = Path(args.home)
        found = int8_accuracy(args.backbone, accuracy_corpora(args.backbone, args.int8_accuracy, home), args.seeds,
                              [5, 20], home)
        record_speed("encode-causal-int8", {"backbone": args.backbone, "test_texts": args.int8_accuracy, **found})
        print(json.dumps(found))
        return 0
    if args.backbone:
        from bench.speed.encode_causal import measure

        found = measure(args.backbone, args.lengths if args.lengths != [128, 256, 512] else [128, 256],
                        texts()[:: max(1, 600 // args.texts)][:args.texts], args.repeats, args.token_budget,
                        Path(args.home))
        record_speed("encode-causal", {"backbone": args.backbone, **found})
        print(json.dumps(found))
        return 0
    if not all(c.spec() for c in CORPORA.values()):
        return 2
    cpu = torch.device("cpu")
    baseline = "torch-bf16" if native_bf16(cpu) else "torch-fp32"
    print(f"{torch.get_num_threads()} threads; native bf16: {native_bf16(cpu)}; today's torch path: {baseline}")
    measured = speeds(args.lengths, args.repeats, Path(args.home))
    print("\n| engine | " + " | ".join(f"{n} tokens: texts/s (× {baseline})" for n in args.lengths) + " |")
    print("|---|" + "---:|" * len(args.lengths))
    for name in CANDIDATES:
        print(f"| {name} | " + " | ".join(f"{measured[name][n]:.1f} (×{measured[name][n] / measured[baseline][n]:.2f})"
                                          for n in args.lengths) + " |")
    ceiling, sample = matmul_ceiling(cpu, 2048), texts()
    per_text = {n: text_flops(sample, n) / 1e9 for n in args.lengths}
    print(f"{baseline} at 2048³-bf16-product ceiling {ceiling:.0f} GFLOP/s: " + ", ".join(
        f"{n} tokens {measured[baseline][n] * per_text[n]:.0f} GFLOP/s "
        f"({measured[baseline][n] * per_text[n] / ceiling:.2f})"
        for n in args.lengths))
    summary: dict = {"threads": torch.get_num_threads(), "native_bf16": native_bf16(cpu), "baseline": baseline,
                     "texts_per_s": measured, "ceiling_gflops": ceiling, "gflop_per_text": per_text}
    if not args.speed_only:
        scores = accuracy(args.seeds, args.home)
        drops = {name: max(row["torch-fp32"] - row[name] for row in scores.values()) for name in OFFERED}
        keeps = [n for n in OFFERED if drops[n] <= BOUND]
        auto = max(keeps, key=lambda n: measured[n][256])
        print("\n| set · method · amount | " + " | ".join(OFFERED) + " |")
        print("|---|" + "---:|" * len(OFFERED))
        for key, row in scores.items():
            print(f"| {key} | " + " | ".join(f"{row[n]:.3f}" for n in OFFERED) + " |")
        print("| largest fall against torch-fp32 | " + " | ".join(f"{drops[n]:+.3f}" for n in OFFERED) + " |")
        print(f"auto: {auto} (fastest at 256 tokens of those within {BOUND} of fp32 torch everywhere: "
              f"{', '.join(keeps)})")
        summary |= {"auto_engine": auto, "accuracy": scores, "accuracy_drop": drops,
                    "accuracy_drop_max": drops[auto],
                    **{f"auto_over_torch_{n}": measured[auto][n] / measured[baseline][n] for n in args.lengths}}
    record_speed("encode", summary)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
