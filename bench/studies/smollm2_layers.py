"""Which SmolLM2 layer and max length a frozen run should pool (issue 63), measured where settings are chosen: L2R
train as the pool, its dev split as the test, 20 labels a class, seeds 0-2, frozen features + LR (standardized on
the labeled rows, C 10, as `core.train.methods.linear.FeaturesLR` fits it), on the rows every method of that seed
draws (`core.data.sample_labeled`).

One pass per max length encodes the labeled rows of every seed and the dev texts, keeping every layer's mean over
its tokens (the first left out, as `layer` pooling does), so all 30 layers are scored from one pass; the passes are
kept under the bench home, so a cut-short bench resumes. Each (max length, layer) is a line of
`bench/records/smollm2-layers.jsonl` with its accuracies by seed and the encoding's texts/s, the CPU cost the
issue asks for (the L2R pool once: its 11,421 texts at that pace).

Run: .venv/bin/python -m bench.studies.smollm2_layers [--max-len 128 256] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from tqdm import tqdm

from bench.sample_runs import CORPORA, DEFAULT_HOME, RECORDS_DIR
from core.backbone import prepare_backbone
from core.backbone.device import pinned_precision
from core.backbone.encode import load_encoder, load_tokenizer, pool
from core.backbone.packaged import SMOLLM2
from core.data import Amount, load_dataset, sample_labeled
from core.train.methods.direct_specs import FeaturesLRSpec

RECORD = RECORDS_DIR / "smollm2-layers.jsonl"
POOL_SIZE = 11_421  # L2R's train pool, which a whole-pool run encodes once
BATCH = 16


@torch.inference_mode()
def layer_means(texts: list[str], max_len: int, bf16: bool, home: Path) -> tuple[np.ndarray, float]:
    """Every layer's mean (texts × layers × width) in one pass, and the texts/s it ran at (SmolLM2 converted under
    the studio `home`)."""
    backbone = prepare_backbone(SMOLLM2, home=home)
    model, tokenizer = load_encoder(backbone), load_tokenizer(backbone)
    layers = model.config.num_hidden_layers
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), layers, model.config.hidden_size), np.float32)
    start = time.perf_counter()
    for i in tqdm(range(0, len(texts), BATCH), desc=f"SmolLM2 at {max_len} tokens", unit="batch", file=sys.stderr):
        idx = order[i:i + BATCH]
        enc = tokenizer([texts[j] for j in idx], truncation=True, max_length=max_len, padding=True, return_tensors="pt")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            outputs = model(**enc, output_hidden_states=True)
        for n in range(1, layers + 1):
            out[idx, n - 1] = pool(outputs, enc["attention_mask"], f"layer{n}").float().numpy()
    return out, len(texts) / (time.perf_counter() - start)


def accuracy(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray) -> float:
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    lr = LogisticRegression(C=FeaturesLRSpec.default_c, max_iter=5000).fit((x_train - mean) / std, y_train)
    return float((lr.predict((x_test - mean) / std) == y_test).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-len", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--per-class", type=int, default=20)
    args = parser.parse_args()
    spec = CORPORA["l2r-dev"].spec()
    if spec is None:
        return 2
    ds = load_dataset(spec, Path(DEFAULT_HOME))
    labels = ds.train["label"].to_numpy()
    drawn = {s: np.flatnonzero(sample_labeled(labels, Amount(None, args.per_class), s)) for s in args.seeds}
    rows = np.unique(np.concatenate(list(drawn.values())))
    texts = ds.train["text"].iloc[rows].tolist() + ds.test["text"].tolist()
    at = {r: i for i, r in enumerate(rows)}
    y_test = ds.test["label"].to_numpy()
    bf16 = pinned_precision("auto", torch.device("cpu")) == "bf16"
    done = {(e["max_len"], e["layer"]) for e in map(json.loads, RECORD.read_text().splitlines())} \
        if RECORD.exists() else set()
    for max_len in args.max_len:
        cache = Path(DEFAULT_HOME) / f"smollm2-layers-{max_len}-{args.per_class}-{'-'.join(map(str, args.seeds))}.npz"
        if cache.exists():
            kept = np.load(cache)
            means, speed = kept["means"], float(kept["speed"])
        else:
            means, speed = layer_means(texts, max_len, bf16, Path(DEFAULT_HOME))
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cache, means=means, speed=speed)
        train_part, test_part = means[:len(rows)], means[len(rows):]
        print(f"max length {max_len}: {len(texts):,} texts at {speed:.1f} texts/s "
              f"(the L2R pool once: {POOL_SIZE / speed / 60:.0f} CPU min)")
        for layer in range(1, means.shape[1] + 1):
            scores = [accuracy(train_part[[at[r] for r in drawn[s]], layer - 1], labels[drawn[s]],
                               test_part[:, layer - 1], y_test) for s in args.seeds]
            print(f"  layer {layer:>2}: accuracy {statistics.mean(scores):.3f} "
                  f"({', '.join(f'{a:.3f}' for a in scores)})")
            if (max_len, layer) not in done:
                with RECORD.open("a") as f:
                    f.write(json.dumps({"date": time.strftime("%Y-%m-%d"), "corpus": "l2r-dev", "max_len": max_len,
                                        "layer": layer, "per_class": args.per_class, "seeds": args.seeds,
                                        "accuracy": [round(a, 4) for a in scores], "texts_per_s": round(speed, 2),
                                        "precision": "bf16" if bf16 else "fp32"}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
