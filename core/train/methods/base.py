"""The interface of a training method. A method is one module with one `Method` subclass, registered by
one line in `core.train.methods.METHODS`; the loop, the CLI, the Train page, the sweep grid, Compare and
the checkpoint loader all go through it.

A method says how to build its head (and generator), what an epoch iterates over, what one optimizer
step does, what its checkpoint keeps, and how its logits become class probabilities.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel, get_linear_schedule_with_warmup

from core.errors import InputError
from core.train.config import TrainConfig
from core.train.inputs import Prepared
from core.train.model import StudioModel

Step = Callable[[torch.Tensor, torch.Tensor], dict[str, float]]  # (representations, labels, -1 = none) → losses


def adamw(params: Iterable[nn.Parameter], lr: float) -> torch.optim.AdamW:
    """Fused AdamW: one kernel per step instead of several per tensor (40 → 25 ms per frozen GAN-BERT
    step at batch 64 on this CPU)."""
    return torch.optim.AdamW(params, lr=lr, fused=True)


def encoder_and_head(model: StudioModel) -> list[nn.Parameter]:
    """What the supervised side trains: every parameter that requires grad, except the generator's."""
    return [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("generator.")]


class Method:
    """Defaults describe supervised training of a linear head (and the encoder unless frozen)."""

    name: ClassVar[str]
    title: ClassVar[str]  # how Compare, the Train page and the CLI help name it
    variant: ClassVar[str | None] = None  # a TrainConfig field the sweep grid crosses with (GAN-BERT: generator)
    options: ClassVar[tuple[str, ...]] = ()  # TrainConfig fields only this method reads
    fake_class: ClassVar[bool] = False  # a k+1-th "fake" output (GAN-BERT)
    frozen_ok: ClassVar[bool] = True
    encoder_lr: ClassVar[float] = 2e-5  # run_glue's default when the encoder trains
    frozen_batch_size: ClassVar[int] = 64  # an epoch of a few labeled texts is still more than one step
    # Fallback throughputs (samples/s, MiniLM, 2 CPU threads) for time estimates before any run finished:
    cpu_speed: ClassVar[float] = 13.0  # the encoder trains, 128 tokens, batch 16
    head_speed: ClassVar[float] = 20000.0  # on cached 4,608-d `layers` features, evaluation included

    # ------------------------------------------------------------ settings

    def check(self, config: TrainConfig) -> None:
        """Refuse settings this method cannot run, naming why."""
        if config.frozen and not self.frozen_ok:
            raise InputError(f"{self.title} trains inside the encoder, so it cannot use frozen-feature mode")

    def learning_rate(self, config: TrainConfig) -> float:
        return config.lr or (1e-3 if config.frozen else self.encoder_lr)

    def batch_size(self, config: TrainConfig) -> int:
        return config.batch_size or (self.frozen_batch_size if config.frozen else 16)

    def display(self, config: TrainConfig) -> str:
        """The line a run belongs to in comparisons."""
        return self.title + (" [frozen]" if config.frozen else "")

    def short(self, config: TrainConfig) -> str:
        """A short name for run labels, such as 'ganbert-noise'."""
        return self.name

    # ------------------------------------------------------------ model

    def adapt_encoder(self, encoder: PreTrainedModel, config: TrainConfig) -> None:
        """Change the encoder before training (adapters go in here); most methods leave it."""

    def build_head(self, config: TrainConfig, num_labels: int, feature_dim: int, hidden_size: int
                   ) -> tuple[nn.Module, nn.Module | None]:
        """The head over sentence representations, and a generator when the method has one."""
        return nn.Sequential(nn.Dropout(0.1), nn.Linear(feature_dim, num_labels)), None

    def saved_state(self, model: StudioModel) -> dict[str, torch.Tensor]:
        """What the checkpoint holds: what prediction needs. Never the generator; with a frozen encoder no
        encoder either (it is the unchanged backbone)."""
        state = {k: v for k, v in model.state_dict().items() if not k.startswith("generator.")}
        if model.config.frozen:
            return {k: v for k, v in state.items() if not k.startswith("encoder.")}
        return state

    def probabilities(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Probabilities over the k real classes, and the fake-class probability when there is one."""
        return F.softmax(logits.float(), dim=-1), None

    # ------------------------------------------------------------ training

    def epoch_rows(self, labeled: np.ndarray, unlabeled: np.ndarray) -> np.ndarray:
        """Indices into the pool that one epoch iterates over: here the labeled rows only."""
        return labeled

    def epoch_size(self, labeled: int, unlabeled: int) -> int:
        """How many rows `epoch_rows` gives, for time estimates made before any data is loaded."""
        return labeled

    def start(self, model: StudioModel, config: TrainConfig, data: Prepared, total_steps: int) -> Step:
        """Set up optimizers (and anything else the steps need) and return one optimizer step."""
        params = encoder_and_head(model)
        opt = adamw(params, self.learning_rate(config))
        schedule = get_linear_schedule_with_warmup(opt, int(config.warmup * total_steps), total_steps)

        def step(rep: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
            loss = F.cross_entropy(model.head_logits(rep), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            schedule.step()
            return {"loss": loss.item()}
        return step
