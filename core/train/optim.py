"""Optimizer pieces every step-trained method shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from core.train.model import StudioModel

Step = Callable[[torch.Tensor, torch.Tensor], dict[str, float]]  # (representations, targets, -1 = none) → losses


NO_DECAY = ("LayerNorm", "layer_norm", "bias")  # BERT's own optimizer leaves these out of weight decay
WEIGHT_DECAY = 0.01  # torch's AdamW default, and BERT's


def adamw(params: Iterable[nn.Parameter] | list[tuple[str, nn.Parameter]], lr: float, eps: float = 1e-8,
          decay_norms: bool = True) -> torch.optim.AdamW:
    """Fused AdamW: one kernel per step instead of several per tensor (40 → 25 ms per frozen GAN-BERT
    step at batch 64 on this CPU). Given named parameters with `decay_norms` off, LayerNorm weights and
    biases get no weight decay, as in BERT's (and GAN-BERT's TF) optimizer."""
    params = list(params)
    if params and isinstance(params[0], tuple):
        if decay_norms:
            params = [p for _, p in params]
        else:
            plain = [p for n, p in params if any(k in n for k in NO_DECAY)]
            decayed = [p for n, p in params if not any(k in n for k in NO_DECAY)]
            params = [{"params": decayed}, {"params": plain, "weight_decay": 0.0}]
    return torch.optim.AdamW(params, lr=lr, eps=eps, weight_decay=WEIGHT_DECAY, fused=True)


def trained_named(model: StudioModel, generator: bool = False) -> list[tuple[str, nn.Parameter]]:
    """The named parameters that require grad on the supervised side (encoder and head) or on G's."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad and n.startswith("generator.") == generator]


def encoder_and_head(model: StudioModel) -> list[nn.Parameter]:
    """What the supervised side trains: every parameter that requires grad, except the generator's."""
    return [p for _, p in trained_named(model)]
