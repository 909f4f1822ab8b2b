"""What a speed bench's figure is worth: the FLOPs an encoder's forward pass does per text, and the device's bf16
matrix-product ceiling measured in the same process, so texts/s can be told as GFLOP/s and as a share of what the
hardware reached on the simplest work it does."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from core.backbone import Backbone


def forward_flops(config, tokens: int) -> float:
    """Multiply-adds ×2 of one text's forward pass through a BERT-like encoder at `tokens` tokens: per layer the
    four attention projections (8·T·d²), the feed-forward pair (4·T·d·ff) and the attention scores and their
    weighted sum (4·T²·d). Embeddings, norms and softmax are left out (under 1%). A training step counts as three
    forward passes (the backward costs two)."""
    d, ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return layers * (8 * tokens * d * d + 4 * tokens * d * ff + 4 * tokens * tokens * d)


def text_flops(texts: list[str], max_len: int, backbone: Backbone | None = None) -> float:
    """A forward pass's mean FLOPs over real texts, each at its own length truncated to `max_len` (no padding
    counted): what a bench's texts/s on them is worth in GFLOP/s. `backbone`: resolved (and a packaged one
    prepared); the bundled MiniLM when None."""
    from transformers import AutoConfig

    from core.backbone.encode import as_backbone, load_tokenizer

    shape = AutoConfig.from_pretrained(str(as_backbone(backbone).folder), local_files_only=True)
    ids = load_tokenizer(backbone)(texts, truncation=True, max_length=max_len, verbose=False)["input_ids"]
    return sum(forward_flops(shape, len(x)) for x in ids) / len(ids)


def matmul_ceiling(device: torch.device, size: int, repeats: int = 5, dtype: torch.dtype = torch.bfloat16) -> float:
    """GFLOP/s of `size`³ matrix products on the device, bf16 unless `dtype` says (the best of `repeats` after one
    warm-up): the ceiling the encoder's own figures are shares of. On a CPU whose bf16 is emulated, the fp32
    product is the ceiling of an fp32 pass (a bf16 one read 0.3 GFLOP/s there)."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    out = torch.empty_like(a)
    best = float("inf")
    for i in range(repeats + 1):
        synchronize(device)
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        synchronize(device)
        if i:  # the first is the warm-up
            best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best / 1e9


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
