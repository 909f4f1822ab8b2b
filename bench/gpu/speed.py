"""The GPU check's throughput figures (bench/gpu/check.py): the studio's encoder encoding and training on one
device, in texts/s at 128, 256 and 512 tokens, with the GFLOP/s they reach, the share of the device's bf16
matrix-product ceiling measured in the same process (bench/speed/ceiling.py), and the peak memory.

Every text is exactly as long as the length says (windows cut from L2R's texts, between [CLS] and [SEP]), so a
text's FLOPs are known and the figures at each length can be set side by side; each is the better of two passes, the
first warming the device up. Encoding is a forward pass under
bf16 autocast; training is the studio's fine-tuning step (`Finetune.start`: the encoder and head, AdamW) at the
precision a run would pin on the device, and counts three forward passes a text."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import torch

from bench.speed.ceiling import forward_flops, matmul_ceiling, synchronize

LENGTHS = (128, 256, 512)
LABELS = ("human", "gpt-3.5-turbo", "gpt-4o", "gemini-1.5-pro", "llama-3-70b")


def windows(tokenizer, texts: list[str], length: int, count: int) -> torch.Tensor:
    """`count` rows of exactly `length` token ids: the texts' tokens end to end, cut into windows."""
    body = length - 2
    flat = [t for ids in tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"] for t in ids]
    while len(flat) < count * body:
        flat += flat
    rows = [[tokenizer.cls_token_id, *flat[i * body:(i + 1) * body], tokenizer.sep_token_id] for i in range(count)]
    return torch.tensor(rows)


def encoding_speed(model, ids: torch.Tensor, batch: int, device: torch.device) -> float:
    """Texts/s of bf16 forward passes over `ids` (after one warm-up batch)."""
    mask = torch.ones_like(ids[:batch], device=device)
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16):
        model(input_ids=ids[:batch].to(device), attention_mask=mask)
        synchronize(device)
        start = time.perf_counter()
        for i in range(0, len(ids), batch):
            chunk = ids[i:i + batch].to(device, non_blocking=True)
            model(input_ids=chunk, attention_mask=mask[:len(chunk)])
        synchronize(device)
    return len(ids) / (time.perf_counter() - start)


def training_speed(backbone: str | None, ids: torch.Tensor, batch: int, device: torch.device, home: Path
                   ) -> float:
    """Texts/s of the studio's fine-tuning step over `ids` (after one warm-up step)."""
    from core.train import METHODS, TrainConfig
    from core.train.methods.finetune import Finetune

    config = TrainConfig(method="finetune", backbone=backbone, max_len=ids.shape[1], batch_size=batch,
                         device=device.type)
    config = METHODS["finetune"].settle(config).with_(precision="bf16" if device.type == "cuda" else "fp32")
    trainer = Finetune(METHODS["finetune"])
    torch.manual_seed(0)
    model = trainer.build_model(config, LABELS, device, home).train()
    batches = [ids[i:i + batch] for i in range(0, len(ids), batch)]
    step = trainer.start(model, config, None, len(batches) + 1)
    labels = torch.arange(len(ids), device=device) % len(LABELS)

    def one(chunk: torch.Tensor, targets: torch.Tensor) -> None:
        chunk = chunk.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.precision == "bf16"):
            rep = model.encode(chunk, torch.ones_like(chunk)).float()
        step(rep, targets)

    one(batches[0], labels[:batch])
    synchronize(device)
    start = time.perf_counter()
    for i, chunk in enumerate(batches):
        one(chunk, labels[i * batch:i * batch + len(chunk)])
    synchronize(device)
    return len(ids) / (time.perf_counter() - start)


def peak_mib(device: torch.device) -> float:
    """The device's peak allocation since the last reset (the process's peak resident memory on a CPU)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def measure(device: torch.device, backbone: str | None, texts: list[str], small: bool, home: Path) -> dict:
    """Every figure at every length; `small` (the CPU dry run) takes a few batches where a GPU takes thousands
    of texts. `home`: the check's studio home."""
    from core.backbone.encode import load_encoder, load_tokenizer

    tokenizer = load_tokenizer(backbone)
    ceiling = matmul_ceiling(device, 512 if small else 8192)
    figures: dict = {"ceiling_gflops": round(ceiling, 1), "encode": {}, "train": {}}
    for length in LENGTHS:
        ids = windows(tokenizer, texts, length, 64 if small else 4096)
        reset_peak(device)
        model = load_encoder(backbone, device)
        flops = forward_flops(model.config, length)
        rate = max(encoding_speed(model, ids, 16 if small else 256, device) for _ in range(2))  # the first warms up
        figures["encode"][str(length)] = described(rate, rate * flops, ceiling, peak_mib(device))
        del model
        reset_peak(device)
        rate = max(training_speed(backbone, ids[:16 if small else 2048], 8 if small else 32, device, home)
                   for _ in range(2))
        figures["train"][str(length)] = described(rate, 3 * rate * flops, ceiling, peak_mib(device))
    return figures


def described(rate: float, flops_per_s: float, ceiling: float, peak: float) -> dict:
    gflops = flops_per_s / 1e9
    return {"texts_s": round(rate, 1), "gflops": round(gflops, 1), "ceiling_share": round(gflops / ceiling, 3),
            "peak_mib": round(peak)}
