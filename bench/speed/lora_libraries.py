"""LoRA from two libraries, side by side in one process (issue 83 asks for the one chosen by measurement): the
studio's, AdapterHub's `LoRAConfig` through `adapters` (pinned already for the bottleneck adapters), against
PEFT's `LoraConfig` injected into the same encoder. Both on the studio's LoRA run as it trains (the same config:
rank 8, alpha 8, the query and value matrices, no LoRA dropout, the head, AdamW at LoRA's rate, the precision
`auto` picks), on MiniLM and on SmolLM2 cut at its pooled layer, the same L2R train texts and batches.

Measured: the parameters each trains (the same update must train as many), the features at the start (both start
B at 0: the frozen encoder's, so their gap should be 0), and training texts/s, the best of alternating epochs.

Needs PEFT: `.venv/bin/pip install -r requirements-bench.txt`.
Run: .venv/bin/python -m bench.speed.lora_libraries [--backbones minilm smollm2-135m] [--samples 96] [--max-len 128]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from bench.sample_runs import DEFAULT_HOME, record_speed
from bench.speed.train import CPU, NAMES, sample, studio, studio_config
from core.backbone import prepare_backbone
from core.backbone.encode import load_tokenizer
from core.train import METHODS, pad_batch
from core.train.methods.adapter import Lora

BACKBONES = {"minilm": None, "smollm2-135m": "smollm2-135m"}  # None: the bundled MiniLM


class PeftLora(Lora):
    """The studio's LoRA method with PEFT's update in AdapterHub's place: the same matrices, rank and alpha."""

    def adapt_encoder(self, encoder, config, below: int) -> None:
        """PEFT's LoRA on every layer (`below` is 0: the bench trains them all)."""
        from peft import LoraConfig, inject_adapter_in_model

        matrices = ["q_proj", "v_proj"] if encoder.config.model_type == "llama" else ["query", "value"]
        encoder.requires_grad_(False)
        lora = config.params
        inject_adapter_in_model(LoraConfig(r=lora.lora_rank, lora_alpha=lora.lora_alpha, lora_dropout=0.0,
                                           target_modules=matrices), encoder)


def trained(method, config, texts: list[str], home: Path) -> tuple[int, torch.Tensor]:
    """The parameters the method trains in the encoder, and its features for `texts` before any step."""
    torch.manual_seed(0)
    model = method.build_model(config, NAMES, CPU, home).eval()
    tok = load_tokenizer(model.backbone)
    ids, mask = pad_batch(tok(texts, truncation=True, max_length=config.max_len)["input_ids"], tok.pad_token_id, CPU)
    with torch.no_grad():
        features = model.encode(ids, mask).float()
    return sum(p.numel() for p in model.encoder.parameters() if p.requires_grad), features


def measure(backbone: str, texts, labels, max_len: int, repeats: int, home: Path) -> dict:
    prepare_backbone(BACKBONES[backbone], home=home)
    config = studio_config(home, "lora", max_len, 16, backbone=BACKBONES[backbone])
    spec = METHODS["lora"]
    (ours, start), (theirs, their_start) = (trained(m, config, texts[:8], home) for m in (Lora(spec), PeftLora(spec)))
    best = {"adapters": 0.0, "peft": 0.0}
    for _ in range(repeats):  # alternating: a busy core slows both alike
        for library, stepper in (("adapters", Lora), ("peft", PeftLora)):
            speed, _, _ = studio(home, texts, labels, max_len, 16, "lora", stepper=stepper,
                                 backbone=BACKBONES[backbone])
            best[library] = max(best[library], speed)
    found = {"max_len": max_len, "precision": config.precision, "trained_params": {"adapters": ours, "peft": theirs},
             "start_gap": float((start - their_start).abs().max() / start.abs().max()),
             "texts_per_s": {k: round(v, 2) for k, v in best.items()},
             "peft_over_adapters": best["peft"] / best["adapters"]}
    print(f"{backbone} at {max_len} tokens ({config.precision}): adapters {best['adapters']:.1f} texts/s, PEFT "
          f"{best['peft']:.1f} (x{found['peft_over_adapters']:.2f}); trained parameters {ours:,} and {theirs:,}; "
          f"features at the start within {found['start_gap']:.1e}", flush=True)
    return found


def table(entry: dict) -> str:
    """A recorded measurement (`speed.jsonl`'s `lora-libraries`) as the results page shows it."""
    s = entry["summary"]
    rows = [(b, s[b]) for b in BACKBONES if b in s]
    return "\n".join([
        f"**bench/speed/lora_libraries.py** ({entry['machine']}; {s['samples']} L2R texts, the best of alternating "
        f"epochs; PEFT {s['peft']}): the studio's LoRA run, AdapterHub's `LoRAConfig` against PEFT's `LoraConfig` "
        "(rank 8, alpha 8, query and value), training texts/s", "",
        "| backbone | max length, precision | adapters | PEFT (× adapters) | trained parameters (adapters, PEFT) | "
        "features at the start apart |", "|---|---|---:|---:|---:|---:|",
        *(f"| {b} | {v['max_len']}, {v['precision']} | {v['texts_per_s']['adapters']:.1f} | "
          f"{v['texts_per_s']['peft']:.1f} (×{v['peft_over_adapters']:.2f}) | {v['trained_params']['adapters']:,}, "
          f"{v['trained_params']['peft']:,} | {v['start_gap']:.1e} |" for b, v in rows)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbones", nargs="+", choices=list(BACKBONES), default=list(BACKBONES))
    parser.add_argument("--samples", type=int, default=96)
    parser.add_argument("--max-len", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    try:
        import peft
    except ImportError:
        print("PEFT is not installed: .venv/bin/pip install -r requirements-bench.txt", file=sys.stderr)
        return 2
    texts, labels = sample(args.samples)
    home = Path(DEFAULT_HOME)  # the benches' home: SmolLM2 converted there once, for every bench
    summary = {"peft": peft.__version__, "samples": args.samples,
               **{b: measure(b, texts, np.asarray(labels), args.max_len, args.repeats, home) for b in args.backbones}}
    record_speed("lora-libraries", summary)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
