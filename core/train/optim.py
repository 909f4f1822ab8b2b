"""Optimizer pieces every step-trained method shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from core.train.model import StudioModel

Step = Callable[[torch.Tensor, torch.Tensor], dict[str, float]]  # (representations, targets, -1 = none) → losses


def adamw(params: Iterable[nn.Parameter], lr: float) -> torch.optim.AdamW:
    """Fused AdamW: one kernel per step instead of several per tensor (40 → 25 ms per frozen GAN-BERT
    step at batch 64 on this CPU)."""
    return torch.optim.AdamW(params, lr=lr, fused=True)


def encoder_and_head(model: StudioModel) -> list[nn.Parameter]:
    """What the supervised side trains: every parameter that requires grad, except the generator's."""
    return [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("generator.")]
