"""Encoder training throughput, side by side in one process (alternating, best of the repeats): the studio's
fine-tuning step against Hugging Face's `Trainer` with `group_by_length` on the same model (MiniLM with a linear
head on mean pooling), the same texts, batch, max length, optimizer and precision; and one GAN-BERT step against
one fine-tuning step on the same batches.

The studio's step: pre-tokenized texts in length-bucketed batches with dynamic padding, dropout masks drawn
cheaply (`core.train.dropout`), attention dropout at the default (0, the fused kernel's), fused AdamW, at the
precision `auto` picks on this CPU. The Trainer runs the model as the backbone ships it. Texts: 320 of L2R's
train split (paragraphs: a fifth pass 256 tokens).

Beside the ratios, the GFLOP/s each path reaches on these texts (a text's FLOPs at its own truncated length, a
training step counted as three forward passes: bench/speed/ceiling.py) and their share of a 2048³ bf16 matrix product's
rate measured in the same process. `--levers` also measures what else might pay, two epochs each (the first
holding any compile time): attention dropout at MiniLM's 0.1 (as shipped) and at 0, and `torch.compile` of the
encoder, with dynamic shapes and with static ones padded to a multiple of 64 tokens.

Targets (issue "twice as fast"): fine-tuning at least 1.5x the Trainer at 256 tokens; a GAN-BERT step at most
1.3x a fine-tuning step.
Run: .venv/bin/python -m bench.speed.train [--samples 320] [--max-len 128 256] [--repeats 2] [--levers]
Ends with one JSON line: over_trainer_<len> for each length, ganbert_step_over_finetune_step, gflops_<len> and
ceiling_share_<len> (studio fine-tuning and the Trainer), ceiling_gflops, and levers_256 when measured.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from bench.calibrate import add_flag, record
from bench.sample_runs import CORPORA, DEFAULT_HOME, record_speed
from bench.speed.ceiling import matmul_ceiling, text_flops
from core.backbone import depth, prepare_backbone
from core.backbone.device import native_bf16
from core.backbone.encode import load_tokenizer
from core.backbone.poolings import last_layer
from core.data import load_file
from core.train import METHODS, TrainConfig, bucketed_batches, pad_batch, resolve
from core.train.methods.adapter import Adapter, Lora
from core.train.methods.finetune import Finetune
from core.train.methods.ganbert import GanBert

NAMES = ("human", "gpt-3.5-turbo", "gpt-4o", "gemini-1.5-pro", "llama-3-70b")
CPU = torch.device("cpu")


def sample(n: int) -> tuple[list[str], np.ndarray]:
    frame = load_file(CORPORA["l2r"].folder / "train.jsonl")[0].sample(n, random_state=0)
    return frame["text"].tolist(), frame["label"].to_numpy()


STEPPERS = {"finetune": Finetune, "ganbert": GanBert, "lora": Lora, "adapter": Adapter}


def studio_config(home: Path, method: str, max_len: int, batch_size: int, **kw) -> TrainConfig:
    """As a launch resolves it on this machine (precision `auto` pinned), with the encoder training."""
    return resolve(TrainConfig.of(method=method, max_len=max_len, batch_size=batch_size, device="cpu", **kw), home)


def studio(home: Path, texts, labels, max_len, batch_size, method: str = "finetune", epochs: int = 1,
           compiled: str | None = None, stepper=None, **settings) -> tuple[float, float, list[float]]:
    """The studio's path, as `StepTrainer.fit` runs it: (texts/s over the last epoch, mean seconds per step, texts/s
    of each epoch). `compiled`: the encoder under `torch.compile`, with dynamic shapes or ("static") batches padded
    to a multiple of 64 tokens; `stepper`: another method class in the method's place (the same config); `settings`
    go into the config (attention dropout, the backbone)."""
    config = studio_config(home, method, max_len, batch_size, **settings)
    torch.manual_seed(0)
    trainer = (stepper or STEPPERS[method])(METHODS[method])
    model = trainer.build_model(config, NAMES, CPU, home).train()
    if compiled:
        model.encoder = torch.compile(model.encoder, dynamic=compiled == "dynamic")
    tok = load_tokenizer(model.backbone)
    ids = tok(texts, truncation=True, max_length=max_len, verbose=False)["input_ids"]
    batches = bucketed_batches(np.array([len(x) for x in ids]), batch_size, np.random.default_rng(0))
    step = trainer.start(model, config, None, len(batches) * epochs)
    bf16 = config.precision == "bf16"
    rates, seconds = [], 0.0
    for _ in range(epochs):
        start = time.perf_counter()
        for b in batches:
            input_ids, mask = pad_batch([ids[i] for i in b], tok.pad_token_id, CPU)
            if compiled == "static":
                input_ids, mask = padded(input_ids, mask, max_len, tok.pad_token_id)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                rep = model.encode(input_ids, mask).float()
            step(rep, torch.from_numpy(labels[b]))
        seconds = time.perf_counter() - start
        rates.append(len(texts) / seconds)
    return rates[-1], seconds / len(batches), rates


def padded(input_ids: torch.Tensor, mask: torch.Tensor, max_len: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch padded to the next multiple of 64 tokens (at most `max_len`): few shapes, so few recompiles."""
    length = input_ids.shape[1]
    wanted = min(max_len, -(-length // 64) * 64)
    return F.pad(input_ids, (0, wanted - length), value=pad_id), F.pad(mask, (0, wanted - length), value=0)


def levers(home: Path, texts, labels, batch_size: int) -> dict:
    """What else might make a step faster at 256 tokens, each two epochs on the same texts (texts/s per epoch)."""
    found = {}
    for name, kw in (("as shipped", {"attention_dropout": 0.1}), ("attention dropout 0", {"attention_dropout": 0.0}),
                     ("compile, dynamic shapes", {"compiled": "dynamic"}),
                     ("compile, padded to 64", {"compiled": "static"})):
        start = time.perf_counter()
        _, _, rates = studio(home, texts, labels, 256, batch_size, epochs=2, **kw)
        found[name] = {"texts_per_s_by_epoch": [round(r, 1) for r in rates],
                       "seconds": round(time.perf_counter() - start, 1)}
        print(f"lever {name}: {found[name]}", flush=True)
    return found


class Classifier(torch.nn.Module):
    """The same model for the Trainer: the backbone as it ships (every layer; MiniLM by default), the studio's
    pooling (MiniLM: the mean; a causal LM: its pooled layer's mean, read from every layer's states as a whole
    model gives them), a linear head; returns the loss."""

    def __init__(self, home: Path, max_len: int, batch_size: int, backbone: str | None = None):
        super().__init__()
        config = studio_config(home, "finetune", max_len, batch_size, backbone=backbone).with_(attention_dropout=None)
        torch.manual_seed(0)
        from core.backbone.encode import load_encoder
        from core.train.methods.neural import NeuralTrainer

        self.pooling = config.resolved_pooling
        self.encoder = load_encoder(config.resolved_backbone(home), CPU).train()
        self.head = NeuralTrainer(METHODS["finetune"]).build_head(config, len(NAMES), self.encoder.config.hidden_size,
                                              self.encoder.config.hidden_size)[0]

    def forward(self, input_ids, attention_mask, labels, token_type_ids=None):
        from core.backbone.encode import pool

        outputs = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                               output_hidden_states=self.pooling.startswith("layer"))
        logits = self.head(pool(outputs, attention_mask, self.pooling))
        return {"loss": F.cross_entropy(logits.float(), labels), "logits": logits}


def trainer(home: Path, texts, labels, max_len, batch_size, backbone: str | None = None) -> float:
    """Hugging Face's Trainer, one epoch, `group_by_length`, fused AdamW at the studio's rate, bf16 where the
    studio runs bf16; texts/s from its own `train_runtime`."""
    import datasets
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    config = studio_config(home, "finetune", max_len, batch_size, backbone=backbone)
    tok = load_tokenizer(config.resolved_backbone(home))
    encoded = tok(texts, truncation=True, max_length=max_len, verbose=False)
    data = datasets.Dataset.from_dict({"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"],
                                       "labels": [int(x) for x in labels]})
    args = TrainingArguments(output_dir=str(Path("/tmp") / "bench-trainer"), per_device_train_batch_size=batch_size,
                             num_train_epochs=1, learning_rate=config.lr, group_by_length=True, use_cpu=True,
                             bf16=config.precision == "bf16", optim="adamw_torch_fused", max_grad_norm=1.0,
                             warmup_ratio=0.1, lr_scheduler_type="linear", report_to="none", save_strategy="no",
                             logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0, seed=0)
    result = Trainer(model=Classifier(home, max_len, batch_size, backbone), args=args, train_dataset=data,
                     data_collator=DataCollatorWithPadding(tok)).train()
    return len(texts) / result.metrics["train_runtime"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=320)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--levers", action="store_true", help="also attention dropout 0 and torch.compile")
    parser.add_argument("--backbone", help="a causal LM such as smollm2-135m: its trained steps (bench_backbone)")
    add_flag(parser)
    args = parser.parse_args()
    texts, labels = sample(args.samples)
    home = Path(DEFAULT_HOME)  # the benches' home: a packaged backbone converted there once, for every bench
    if args.backbone:
        prepare_backbone(args.backbone, home=home)
        return bench_backbone(home, args.backbone, texts, labels, args.max_len, args.batch_size, args.repeats)
    ceiling = matmul_ceiling(CPU, 2048)
    print(f"{torch.get_num_threads()} threads; precision {studio_config(home, 'finetune', 256, 16).precision} "
          f"(native bf16: {native_bf16(CPU)}); 2048³ bf16 matrix products at {ceiling:.0f} GFLOP/s")
    summary: dict = {"ceiling_gflops": ceiling}
    for max_len in args.max_len:
        best = {"trainer": 0.0, "finetune": 0.0, "ganbert": 0.0}
        step = {"finetune": float("inf"), "ganbert": float("inf")}
        for _ in range(args.repeats):  # alternating: a busy core slows them alike
            best["trainer"] = max(best["trainer"], trainer(home, texts, labels, max_len, args.batch_size))
            for method in ("finetune", "ganbert"):
                speed, seconds, _ = studio(home, texts, labels, max_len, args.batch_size, method)
                best[method], step[method] = max(best[method], speed), min(step[method], seconds)
        ratio, gan = best["finetune"] / best["trainer"], step["ganbert"] / step["finetune"]
        gflops = {k: 3 * best[k] * text_flops(texts, max_len) / 1e9 for k in ("finetune", "trainer")}
        summary |= {f"gflops_{max_len}": gflops,
                    f"ceiling_share_{max_len}": {k: v / ceiling for k, v in gflops.items()}}
        print(f"max_len {max_len}: Trainer {best['trainer']:.1f} texts/s | studio fine-tuning {best['finetune']:.1f} "
              f"(x{ratio:.2f}, {gflops['finetune']:.0f} GFLOP/s, {gflops['finetune'] / ceiling:.2f} of the ceiling) | "
              f"GAN-BERT step {step['ganbert']:.3f} s against {step['finetune']:.3f} s (x{gan:.2f})", flush=True)
        summary |= {f"over_trainer_{max_len}": ratio, f"ganbert_step_over_finetune_step_{max_len}": gan,
                    f"texts_per_s_{max_len}": best}
    summary["ganbert_step_over_finetune_step"] = max(v for k, v in summary.items()
                                                     if k.startswith("ganbert_step_over_finetune_step_"))
    if args.levers:
        summary["levers_256"] = levers(home, texts, labels, args.batch_size)
    record_speed("train", summary)
    print(json.dumps(summary))
    if args.calibrate:
        record(calibration(summary), "bench/speed/train.py" + (" --levers" if args.levers else ""))
    return 0


def calibration(summary: dict) -> dict[str, float]:
    """The figures the estimates read that this bench measures as they mean them: with the levers, a step at the
    backbone's attention dropout over one at 0. Fine-tuning's own texts/s is not one: this bench times idle cores,
    and the estimates' figure is a busy machine's (`core/calibration.json`, `minilm_training_speed`)."""
    figures = {}
    if "levers_256" in summary:
        seconds = {name: lever["seconds"] for name, lever in summary["levers_256"].items()}
        figures["attention_dropout_slowdown"] = seconds["as shipped"] / seconds["attention dropout 0"]
    return figures


def bench_backbone(home: Path, backbone: str, texts: list[str], labels: np.ndarray, lengths: list[int],
                   batch_size: int, repeats: int) -> int:
    """A backbone's trained steps (issue 83): the studio's fine-tuning (cut at the pooled layer) against the Trainer
    on the whole model as it ships; LoRA, adapters, a GAN-BERT G1 step and its control's priced against a
    fine-tuning step; and MiniLM's fine-tuning step on the same texts, the ratio the estimates weigh this backbone's
    training by (`Packaged.costs` in core/backbone/packaged.py). Alternating, best of `repeats`."""
    dtype = (torch.float32 if studio_config(home, "finetune", 128, 16, backbone=backbone).precision == "fp32"
             else torch.bfloat16)
    ceiling = matmul_ceiling(CPU, 2048, dtype=dtype)
    config = studio_config(home, "finetune", 128, batch_size, backbone=backbone)
    layers = last_layer(config.resolved_pooling)
    whole = depth(backbone)[0]
    print(f"{backbone}: {torch.get_num_threads()} threads, precision {config.precision} (native bf16: "
          f"{native_bf16(CPU)}); trained up to layer {layers} of {whole}; 2048³ {dtype} products at {ceiling:.0f} "
          f"GFLOP/s", flush=True)
    summary: dict = {"backbone": backbone, "ceiling_gflops": ceiling, "precision": config.precision,
                     "texts": len(texts), "batch_size": batch_size}
    kinds = {"finetune": {}, "lora": {}, "adapter": {}, "ganbert": {}, "control": {"adversarial": False}}
    for max_len in lengths:
        best = dict.fromkeys(("trainer", "minilm", *kinds), 0.0)
        for _ in range(repeats):  # alternating: a busy core slows them alike
            best["trainer"] = max(best["trainer"], trainer(home, texts, labels, max_len, batch_size, backbone))
            for kind, settings in kinds.items():
                method = "ganbert" if kind == "control" else kind
                speed, _, _ = studio(home, texts, labels, max_len, batch_size, method, backbone=backbone, **settings)
                best[kind] = max(best[kind], speed)
            best["minilm"] = max(best["minilm"], studio(home, texts, labels, max_len, batch_size)[0])
        # the FLOPs a step needs: the layers up to the pooled one, whatever a path runs beyond them
        flops = text_flops(texts, max_len, config.resolved_backbone(home)) * (layers or whole) / whole
        gflops = {k: 3 * best[k] * flops / 1e9 for k in ("finetune", "trainer")}
        summary[f"texts_per_s_{max_len}"] = best
        summary[f"over_trainer_{max_len}"] = best["finetune"] / best["trainer"]
        summary[f"ceiling_share_{max_len}"] = {k: v / ceiling for k, v in gflops.items()}
        summary[f"over_finetune_step_{max_len}"] = {k: best["finetune"] / best[k] for k in kinds}
        summary[f"cost_over_minilm_{max_len}"] = best["minilm"] / best["finetune"]
        print(f"max_len {max_len}: Trainer {best['trainer']:.2f} texts/s | studio fine-tuning {best['finetune']:.2f} "
              f"(x{best['finetune'] / best['trainer']:.2f}, {gflops['finetune'] / ceiling:.2f} of the ceiling, the "
              f"Trainer {gflops['trainer'] / ceiling:.2f}) | LoRA {best['lora']:.2f}, adapters {best['adapter']:.2f}, "
              f"GAN-BERT G1 {best['ganbert']:.2f}, control {best['control']:.2f} | MiniLM fine-tuning "
              f"{best['minilm']:.2f} ({best['minilm'] / best['finetune']:.1f}x this backbone)", flush=True)
    record_speed("train-backbone", summary)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
