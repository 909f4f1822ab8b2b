"""Frozen encoding on a causal LM (`bench/encode.py --backbone smollm2-135m`): what a SmolLM2 pass costs and which
levers pay, each measured side by side in one process on the same real texts, its features compared with today's.

Today's path runs all 30 layers and keeps every layer's states to pool layer 20 (`output_hidden_states`). The
levers, for hidden states:
- the cut: the encoder stops at the pooled layer (`encode.cut_after`) and keeps no other layer's states;
- batches cut by tokens rather than by texts (`--token-budget` tokens a batch, the texts sorted by length);
- attention by the eager kernel against SDPA (the studio's: transformers' default for Llama);
- bf16 weights against bf16 autocast, and torch's int8 dynamic quantisation of the linear layers;
- loading the converted folder (fp32 safetensors, converted once from the GGUF file) against converting again.
Token probabilities read the whole model and its LM head: `probabilities` and `both` are measured as they run.

Each figure is texts/s, the best of `--repeats` alternating passes, with GFLOP/s (a text's forward FLOPs over the
layers run, at its own length) and its share of a 2048³ matrix product's rate measured in the same process: bf16
where the CPU has it natively, else fp32, the precision the pass then runs at.
Features are compared with today's path: the largest difference over the largest value.

Run: .venv/bin/python bench/encode.py --backbone smollm2-135m [--lengths 128 256] [--texts 96] [--repeats 2]
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable

import numpy as np
import torch

from bench.ceiling import forward_flops, matmul_ceiling
from core.backbone import resolve_backbone
from core.backbone.device import native_bf16
from core.backbone.encode import encode_texts, load_encoder, load_tokenizer, pool
from core.backbone.packaged import PACKAGED, convert, gguf_path
from core.backbone.probabilities import token_statistics


def by_tokens(model, tokenizer, texts: list[str], max_len: int, pooling: str, budget: int, bf16: bool
              ) -> np.ndarray:
    """`encode_texts` with batches cut at `budget` tokens (padded length × texts) instead of 32 texts."""
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_len, verbose=False)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    out: list = [None] * len(texts)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and lengths[order[end]] * (end + 1 - start) <= budget:
            end += 1
        idx = order[start:end]
        out_batch = encode_texts(model, tokenizer, [texts[i] for i in idx], max_len, pooling, len(idx), bf16)
        for i, v in zip(idx, out_batch):
            out[i] = v
        start = end
    return np.stack(out)


@torch.inference_mode()
def today_path(model, tokenizer, texts: list[str], max_len: int, pooling: str, bf16: bool) -> np.ndarray:
    """The pass as the studio ran it before the cut: every layer run, every layer's states kept."""
    out = []
    for start in range(0, len(texts), 32):
        enc = tokenizer(texts[start:start + 32], truncation=True, max_length=max_len, padding=True,
                        return_tensors="pt")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            outputs = model(**enc, output_hidden_states=True)
            out.append(pool(outputs, enc["attention_mask"], pooling).float().numpy())
    return np.concatenate(out)


def timed(run: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    features = run()
    return time.perf_counter() - start, features


def measure(name: str, lengths: list[int], sample: list[str], repeats: int, budget: int) -> dict:
    """Every lever at every length: texts/s, GFLOP/s, ceiling share and the features' distance from today's."""
    backbone = resolve_backbone(name)
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
        "hidden, today (30 layers, every state kept)": (lambda t, n: today_path(whole, tokenizer, t, n, hidden, bf16),
                                                        whole.config.num_hidden_layers),
        "hidden, cut at the pooled layer": (lambda t, n: encode_texts(cut, tokenizer, t, n, hidden, bf16=bf16), layer),
        f"hidden, cut, batches of {budget} tokens": (lambda t, n: by_tokens(cut, tokenizer, t, n, hidden, budget,
                                                                            bf16), layer),
        "hidden, cut, eager attention": (lambda t, n: encode_texts(eager, tokenizer, t, n, hidden, bf16=bf16), layer),
        "hidden, cut, bf16 weights": (lambda t, n: encode_texts(bf16_weights, tokenizer, t, n, hidden), layer),
        "hidden, cut, int8 linear layers": (lambda t, n: encode_texts(int8, tokenizer, t, n, hidden), layer),
        "probabilities": (lambda t, n: encode_texts(lm, tokenizer, t, n, "probabilities", bf16=bf16),
                          whole.config.num_hidden_layers),
        "both": (lambda t, n: encode_texts(lm, tokenizer, t, n, f"{hidden}+probabilities", bf16=bf16),
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
        reference = features["hidden, today (30 layers, every state kept)"]
        for lever, (_run, layers) in levers.items():
            per_text = sum(forward_flops(shape, len(x)) for x in ids) / len(ids) / shape.num_hidden_layers * layers
            gflops = best[lever] * per_text / 1e9
            apart = (float(np.abs(features[lever] - reference).max() / np.abs(reference).max())
                     if lever.startswith("hidden") else None)
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
        convert(gguf_path(name), again)
        found["convert_s"] = round(time.perf_counter() - start, 2)
    finally:
        shutil.rmtree(again, ignore_errors=True)
    print(f"loading the converted folder: {found['load_converted_s']} s; converting the GGUF file again: "
          f"{found['convert_s']} s", flush=True)
    return found
