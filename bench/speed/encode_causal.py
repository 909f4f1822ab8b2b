"""Frozen encoding on a causal LM (`bench/speed/encode.py --backbone smollm2-135m`): what a SmolLM2 pass costs and which
levers pay, each measured side by side in one process on the same real texts, its features compared with today's.

Today's path (before issue 78) runs all 30 layers and keeps every layer's states to pool layer 20
(`output_hidden_states`), in batches of 32 texts sorted by their characters' length. The levers, for hidden states:
- the cut: the encoder stops at the pooled layer (`encode.cut_after`) and keeps no other layer's states;
- batches cut by tokens rather than by texts (`--token-budget` tokens a batch, the texts sorted by their tokens:
  the studio's `encode_texts` on a CPU), against 32 texts a batch;
- attention by the eager kernel against SDPA (the studio's: transformers' default for Llama);
- bf16 weights against bf16 autocast, and torch's int8 dynamic quantisation of the linear layers;
- loading the converted folder (fp32 safetensors, converted once from the GGUF file) against converting again.
Token probabilities read the whole model and its LM head: `probabilities` and `both` are measured as they run, and
`both` also as it ran before issue 84 (`statistics_before`: the head called text by text in chunks of 64 positions,
autocast casting its weight at every call, each step of the softmax in a fresh tensor), the same statistics.

Each figure is texts/s, the best of `--repeats` alternating passes, with GFLOP/s (a text's forward FLOPs over the
layers run, at its own length, and the LM head's product where the pass scores tokens) and its share of a 2048³
matrix product's rate measured in the same process: bf16 where the CPU has it natively, else fp32, the precision the
pass then runs at. Features are compared with today's path: the largest difference over the largest value; token
statistics with `both` as it ran before issue 84: the largest such ratio over the statistics.

Run: .venv/bin/python -m bench.speed.encode --backbone smollm2-135m [--lengths 128 256] [--texts 96] [--repeats 2]
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np
import torch

from bench.speed.ceiling import forward_flops, matmul_ceiling
from core.backbone import prepare_backbone
from core.backbone.device import native_bf16
from core.backbone.encode import encode_texts, load_encoder, load_tokenizer, pool
from core.backbone.packaged import PACKAGED, convert, package_file
from core.backbone.probabilities import NAMES, text_statistics

TODAY = "hidden, today (30 layers, every state kept)"  # the pass before the cut, which every lever is held to
BEFORE = "both, before issue 84 (the head text by text, its weight cast at every call)"


def statistics_before(lm_head, hidden: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor
                      ) -> torch.Tensor:
    """`probabilities.token_statistics` as it ran before issue 84, kept to be measured against."""
    out = torch.zeros(len(input_ids), len(NAMES), dtype=torch.float32, device=hidden.device)
    for row, (h, ids, mask) in enumerate(zip(hidden, input_ids, attention_mask)):
        n = int(mask.sum())
        if n < 2:
            continue
        parts = []
        for i in range(0, n - 1, 64):
            logits, targets = lm_head(h[i:min(i + 64, n - 1)]).float(), ids[i + 1:min(i + 65, n)]
            log_p = torch.log_softmax(logits, dim=-1)
            p = log_p.exp()
            entropy = -(p * log_p).sum(1)
            rank = (logits > logits.gather(1, targets[:, None])).sum(1).float() + 1
            parts.append((log_p.gather(1, targets[:, None]).squeeze(1), entropy, torch.log(rank),
                          (p * log_p.square()).sum(1) - entropy ** 2))
        out[row] = text_statistics(*(torch.cat(series) for series in zip(*parts)))
    return out


def encode_before(model, tokenizer, texts: list[str], max_len: int, pooling: str, bf16: bool) -> np.ndarray:
    """The studio's pass with the token statistics of before issue 84."""
    with mock.patch("core.backbone.encode.token_statistics", statistics_before):
        return encode_texts(model, tokenizer, texts, max_len, pooling, bf16=bf16)


@torch.inference_mode()
def today_path(model, tokenizer, texts: list[str], max_len: int, pooling: str, bf16: bool) -> np.ndarray:
    """The pass as the studio ran it before the cut: every layer run, every layer's states kept, batches of 32
    texts in order of their characters' length."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    out: list = [None] * len(texts)
    for start in range(0, len(texts), 32):
        idx = order[start:start + 32]
        enc = tokenizer([texts[i] for i in idx], truncation=True, max_length=max_len, padding=True,
                        return_tensors="pt")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            outputs = model(**enc, output_hidden_states=True)
        for i, v in zip(idx, pool(outputs, enc["attention_mask"], pooling).float().numpy()):
            out[i] = v
    return np.stack(out)


def timed(run: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    features = run()
    return time.perf_counter() - start, features


def measure(name: str, lengths: list[int], sample: list[str], repeats: int, budget: int, home: Path) -> dict:
    """Every lever at every length: texts/s, GFLOP/s, ceiling share and the features' distance from today's."""
    backbone = prepare_backbone(name, home=home)
    layer = PACKAGED[name].layer
    tokenizer = load_tokenizer(backbone)
    bf16 = native_bf16(torch.device("cpu"))
    hidden = f"layer{layer}"
    whole = load_encoder(backbone)
    cut = load_encoder(backbone, upto=layer)
    eager = load_encoder(backbone, upto=layer)
    eager.config._attn_implementation = "eager"
    bf16_weights = load_encoder(backbone, upto=layer).to(torch.bfloat16)
    int8 = torch.ao.quantization.quantize_dynamic(load_encoder(backbone, upto=layer), {torch.nn.Linear},
                                                  dtype=torch.qint8)
    lm = load_encoder(backbone, lm_head=True)
    levers: dict[str, tuple[Callable, int]] = {  # name → (pass on texts at a length, layers it runs)
        TODAY: (lambda t, n: today_path(whole, tokenizer, t, n, hidden, bf16), whole.config.num_hidden_layers),
        "hidden, cut at the pooled layer, batches of 32 texts": (
            lambda t, n: encode_texts(cut, tokenizer, t, n, hidden, bf16=bf16, budget=None), layer),
        f"hidden, cut, batches of {budget:,} tokens (the studio's)": (
            lambda t, n: encode_texts(cut, tokenizer, t, n, hidden, bf16=bf16, budget=budget), layer),
        "hidden, cut, eager attention": (lambda t, n: encode_texts(eager, tokenizer, t, n, hidden, bf16=bf16), layer),
        "hidden, cut, bf16 weights": (lambda t, n: encode_texts(bf16_weights, tokenizer, t, n, hidden), layer),
        "hidden, cut, int8 linear layers": (lambda t, n: encode_texts(int8, tokenizer, t, n, hidden), layer),
        "probabilities": (lambda t, n: encode_texts(lm, tokenizer, t, n, "probabilities", bf16=bf16),
                          whole.config.num_hidden_layers),
        "both": (lambda t, n: encode_texts(lm, tokenizer, t, n, f"{hidden}+probabilities", bf16=bf16),
                 whole.config.num_hidden_layers),
        BEFORE: (lambda t, n: encode_before(lm, tokenizer, t, n, f"{hidden}+probabilities", bf16),
                 whole.config.num_hidden_layers),
    }
    ceiling = matmul_ceiling(torch.device("cpu"), 2048, dtype=torch.bfloat16 if bf16 else torch.float32)
    shape = whole.config
    found: dict = {"ceiling_gflops": ceiling, "ceiling_dtype": "bf16" if bf16 else "fp32", "native_bf16": bf16,
                   "threads": torch.get_num_threads(), "texts": len(sample), "levers": {}}
    for max_len in lengths:
        ids = tokenizer(sample, truncation=True, max_length=max_len, verbose=False)["input_ids"]
        best: dict[str, float] = {}
        features: dict[str, np.ndarray] = {}
        for _ in range(repeats):  # alternating: a busy core slows all of them alike
            for lever, (run, _layers) in levers.items():
                seconds, features[lever] = timed(lambda: run(sample, max_len))
                best[lever] = max(best.get(lever, 0.0), len(sample) / seconds)
        reference, statistics = features[TODAY], features[BEFORE][:, -len(NAMES):]
        head = sum(2 * shape.hidden_size * shape.vocab_size * (len(x) - 1) for x in ids) / len(ids)
        for lever, (_run, layers) in levers.items():
            per_text = sum(forward_flops(shape, len(x)) for x in ids) / len(ids) / shape.num_hidden_layers * layers
            gflops = best[lever] * (per_text + (0 if lever.startswith("hidden") else head)) / 1e9
            apart = (float(np.abs(features[lever] - reference).max() / np.abs(reference).max())
                     if lever.startswith("hidden") else
                     float((np.abs(features[lever][:, -len(NAMES):] - statistics).max(0)
                            / np.abs(statistics).max(0).clip(1e-6)).max()))
            found["levers"].setdefault(lever, {})[str(max_len)] = {
                "texts_s": round(best[lever], 2), "gflops": round(gflops, 1),
                "ceiling_share": round(gflops / ceiling, 3), "feature_gap": apart}
            print(f"{max_len} tokens · {lever}: {best[lever]:.1f} texts/s, {gflops:.0f} GFLOP/s "
                  f"({gflops / ceiling:.2f} of the ceiling)" + (f", features within {apart:.4f}" if apart is not None
                                                                  else ""), flush=True)
    start = time.perf_counter()
    load_encoder(backbone, upto=layer)
    found["load_converted_s"] = round(time.perf_counter() - start, 2)
    again = backbone.folder.parent / f".bench-{name}"
    start = time.perf_counter()
    try:
        convert(package_file(name), again)
        found["convert_s"] = round(time.perf_counter() - start, 2)
    finally:
        shutil.rmtree(again, ignore_errors=True)
    print(f"loading the converted folder: {found['load_converted_s']} s; converting the GGUF file again: "
          f"{found['convert_s']} s", flush=True)
    return found


def int8_accuracy(name: str, corpora: dict[str, tuple[list[str], np.ndarray, list[str], np.ndarray, int]],
                  seeds: list[int], amounts: list[int], home: Path) -> dict:
    """What int8 linear layers cost in accuracy: features + LR (standardized, the studio's C) on the cut pass's
    features in fp32 and with int8 weights, the same labeled rows for both at each seed and amount, per corpus
    (its pool texts, their labels, its test texts, their labels, the max length). Mean accuracy of each and the
    largest fall."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from core.data.sampling import Amount, sample_labeled
    from core.train.methods.direct_specs import FeaturesLRSpec

    backbone, layer = prepare_backbone(name, home=home), PACKAGED[name].layer
    tokenizer = load_tokenizer(backbone)
    fp32 = load_encoder(backbone, upto=layer)
    int8 = torch.ao.quantization.quantize_dynamic(load_encoder(backbone, upto=layer), {torch.nn.Linear},
                                                  dtype=torch.qint8)
    found: dict = {}
    for corpus, (texts_pool, pool_y, test, test_y, max_len) in corpora.items():
        masks = {(n, seed): sample_labeled(pool_y, Amount(per_class=n), seed) for n in amounts for seed in seeds}
        rows = np.flatnonzero(np.any(list(masks.values()), axis=0))  # every seed's labeled rows, encoded once
        scores: dict[str, dict[str, list[float]]] = {}
        for engine, model in (("fp32", fp32), ("int8", int8)):
            texts = [texts_pool[i] for i in rows] + test
            x = encode_texts(model, tokenizer, texts, max_len, f"layer{layer}")
            by_row, x_test = dict(zip(rows, x[:len(rows)])), x[len(rows):]
            for (n, seed), mask in masks.items():
                labeled = np.flatnonzero(mask)
                scaler = StandardScaler().fit(np.stack([by_row[i] for i in labeled]))
                lr = LogisticRegression(C=FeaturesLRSpec.default_c, max_iter=5000).fit(
                    scaler.transform(np.stack([by_row[i] for i in labeled])), pool_y[labeled])
                accuracy = float((lr.predict(scaler.transform(x_test)) == test_y).mean())
                scores.setdefault(f"{n}/class", {}).setdefault(engine, []).append(accuracy)
        found[corpus] = {amount: {engine: round(float(np.mean(v)), 4) for engine, v in by.items()}
                         | {"fall": round(float(np.mean(by["fp32"]) - np.mean(by["int8"])), 4),
                            "seeds": len(seeds)} for amount, by in scores.items()}
        print(f"int8 linear layers on {corpus} ({max_len} tokens): " + ", ".join(
            f"{a} fp32 {v['fp32']:.3f}, int8 {v['int8']:.3f}" for a, v in found[corpus].items()), flush=True)
    return found


def accuracy_corpora(name: str, test_texts: int, home: Path) -> dict:
    """The M4 sample (tested on its dev texts) and L2R dev (its train pool; `test_texts` of its dev split drawn by
    seed 0), each at the max length `auto` chooses for the backbone there."""
    from bench.sample_runs import CORPORA
    from core.data import load_dataset
    from core.train.maxlen import auto_max_len

    out = {}
    for corpus in ("m4-sample", "l2r-dev"):
        ds = load_dataset(CORPORA[corpus].spec(), home)
        test = ds.test.sample(min(test_texts, len(ds.test)), random_state=0)
        out[corpus] = (ds.train["text"].tolist(), ds.train["label"].to_numpy(), test["text"].tolist(),
                       test["label"].to_numpy(), auto_max_len(ds, prepare_backbone(name, home=home)).tokens)
    return out


def table(entry: dict) -> str:
    """A recorded measurement (`speed.jsonl`'s `encode-causal`) as the results page shows it: each lever's texts/s
    against today's pass, its GFLOP/s share of the ceiling and its features' distance from today's."""
    s = entry["summary"]
    levers = s["levers"]
    today = levers[TODAY]
    lengths = list(today)
    lines = [(f"**bench/speed/encode.py --backbone {s['backbone']}** ({entry['machine']}; {s['texts']} real texts, the "
              "best of alternating passes): texts/s (× today's pass), share of the ceiling, and the features' "
              "largest difference from today's over their largest value (token statistics: from `both` before "
              "issue 84's, the largest over the statistics)"),
             "", "| lever | " + " | ".join(f"{n} tokens" for n in lengths) + " |", "|---|" + "---:|" * len(lengths)]
    order = [TODAY, *sorted(k for k in levers if k.startswith("hidden") and k != TODAY),
             *(k for k in levers if not k.startswith("hidden"))]  # the record's keys are sorted alphabetically
    for lever in order:
        by = levers[lever]
        lines.append(f"| {lever} | " + " | ".join(
            f"{by[n]['texts_s']:.1f} (×{by[n]['texts_s'] / today[n]['texts_s']:.2f}), {by[n]['ceiling_share']:.2f}"
            + ("" if by[n]["feature_gap"] is None else f", {by[n]['feature_gap']:.4f}") for n in lengths) + " |")
    lines.append(f"\nThe ceiling: 2048³ {s['ceiling_dtype']} matrix products in the same process, "
                 f"{s['ceiling_gflops']:.0f} GFLOP/s (native bf16: {s['native_bf16']}); a text's FLOPs are counted at "
                 "its own truncated length over the layers a pass runs"
                 + (", and the LM head's product where it scores tokens" if BEFORE in levers else "")
                 + ". Loading the converted folder took "
                 f"{s['load_converted_s']} s; converting the GGUF file again {s['convert_s']} s.")
    if BEFORE in levers:
        studio = next(k for k in levers if k.endswith("(the studio's)"))
        lines.append("\nBoth feature sets against hidden states alone (cut, the studio's batches), in texts/s: "
                     + "; ".join(
            f"at {n} tokens {levers['both'][n]['texts_s'] / levers[studio][n]['texts_s']:.2f} "
            f"(before issue 84 {levers[BEFORE][n]['texts_s'] / levers[studio][n]['texts_s']:.2f})" for n in lengths)
            + ". Both run 30 layers and the LM head where hidden states run 20: at the hidden pass's own GFLOP/s, "
            "that work alone, with the statistics free, would leave them at " + " and ".join(
                f"{bound(levers, studio, n):.2f} at {n} tokens" for n in lengths) + ".")
    return "\n".join(lines)


def bound(levers: dict, studio: str, length: str) -> float:
    """Both feature sets' texts/s over hidden states' if they ran their FLOPs (30 layers and the head) at the rate
    the cut hidden pass runs its 20 layers: what the extra work alone costs."""
    hidden, both = levers[studio][length], levers["both"][length]
    return (hidden["gflops"] / hidden["texts_s"]) / (both["gflops"] / both["texts_s"])


def int8_table(entry: dict) -> str:
    """A recorded `encode-causal-int8`: features + LR's mean accuracy on fp32 and int8 features, and the fall."""
    s = entry["summary"]
    rows = [(corpus, amount, v) for corpus in ("m4-sample", "l2r-dev") for amount, v in s.get(corpus, {}).items()]
    lines = [f"**int8 linear layers against fp32** (bench/speed/encode.py --backbone {s['backbone']} --int8-accuracy "
             f"{s['test_texts']}: L2R dev tested on {s['test_texts']} of its texts): features + LR on the cut pass's "
             f"features, mean accuracy over {rows[0][2]['seeds']} seeds, the same rows for both", "",
             "| corpus | amount | fp32 | int8 | fall |", "|---|---|---:|---:|---:|"]
    lines += [f"| {corpus} | {amount} | {v['fp32']:.3f} | {v['int8']:.3f} | {v['fall']:+.3f} |"
              for corpus, amount, v in rows]
    return "\n".join(lines)


def batches_table(entry: dict) -> str:
    """A recorded `encode-batches`: MiniLM's texts/s in batches of texts and of tokens at each length."""
    speeds = entry["summary"]["texts_per_s"]
    kinds = list(speeds)
    lengths = list(speeds[kinds[0]])
    return "\n".join([f"**MiniLM's batches** (bench/speed/encode.py --batches, {entry['summary']['texts']} real texts, "
                      "fp32 torch): texts/s", "", "| batches of | " + " | ".join(f"{n} tokens" for n in lengths)
                      + " |", "|---|" + "---:|" * len(lengths),
                      *(f"| {k} | " + " | ".join(f"{speeds[k][n]:.1f}" for n in lengths) + " |" for k in kinds)])
