"""BERT with bottleneck adapters (AdapterHub's `adapters`): the encoder stays fixed, small adapter
layers inside it and the head train, and only those are saved."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

import adapters
import torch
from transformers import PreTrainedModel

from core.errors import InputError
from core.train.config import ADAPTER_KINDS, TrainConfig
from core.train.methods.specs import AdapterSpec
from core.train.methods.stepwise import StepMethod
from core.train.model import StudioModel


NOT_YET_ACTIVE = "none are activated for the forward pass"


@contextmanager
def quiet_activation() -> Iterator[None]:
    """`train_adapter` warns that no adapter is active while it is activating one (adapter-hub/adapters#815):
    every run's log said so though the adapter trained. Drop that one warning, here only."""
    log = logging.getLogger("adapters.model_mixin")

    def drop(record: logging.LogRecord) -> bool:
        return NOT_YET_ACTIVE not in record.getMessage()
    log.addFilter(drop)
    try:
        yield
    finally:
        log.removeFilter(drop)


class Adapter(AdapterSpec, StepMethod):
    def adapt_encoder(self, encoder: PreTrainedModel, config: TrainConfig) -> None:
        """Houlsby (`double_seq_bn`) or Pfeiffer (`seq_bn`) adapters; afterwards only they require gradients."""
        try:
            adapters.init(encoder)
        except (ValueError, KeyError, NotImplementedError) as e:
            raise InputError(f"the adapters library does not support {encoder.config.model_type} models ({e}); "
                             "choose another backbone or method") from None
        adapter_config = adapters.AdapterConfig.load(ADAPTER_KINDS[config.adapter_kind],
                                                     reduction_factor=config.reduction_factor)
        encoder.add_adapter("studio", config=adapter_config)
        with quiet_activation():
            encoder.train_adapter("studio")  # freezes the rest and makes the adapter the active one

    def saved_state(self, model: StudioModel) -> dict[str, torch.Tensor]:
        """Adapters, head and buffers: the rest of the encoder is the unchanged backbone."""
        keep = {f"encoder.{n}" for n, p in model.encoder.named_parameters() if p.requires_grad}
        return {k: v for k, v in super().saved_state(model).items() if not k.startswith("encoder.") or k in keep}
