"""Encoders with small trained parts inside and the rest fixed, through AdapterHub's `adapters`: bottleneck
adapters (Houlsby, Pfeiffer) and LoRA's low-rank updates of attention. Only those parts and the head train, and
only they are saved with the head."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

import adapters
import torch
from transformers import PreTrainedModel

from core.errors import InputError
from core.train.config import TrainConfig
from core.train.methods.stepwise import StepTrainer
from core.train.model import StudioModel
from core.train.params import ADAPTER_KINDS

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


class AdapterLibrary(StepTrainer):
    """A method whose trained part inside the encoder is an AdapterHub configuration (`library_config`)."""

    def library_config(self, config: TrainConfig, below: int) -> adapters.AdapterConfig:
        """The method's configuration, with no part in the first `below` layers (those a top-K run keeps frozen)."""
        raise NotImplementedError

    def adapt_encoder(self, encoder: PreTrainedModel, config: TrainConfig, below: int) -> None:
        """The method's adapter added above the `below` frozen layers and made the one that trains; afterwards only
        it requires gradients."""
        try:
            adapters.init(encoder)
        except (ValueError, KeyError, NotImplementedError) as e:
            raise InputError(f"the adapters library does not support {encoder.config.model_type} models ({e}); "
                             "choose another backbone or method") from None
        encoder.add_adapter("studio", config=self.library_config(config, below))
        with quiet_activation():
            encoder.train_adapter("studio")  # freezes the rest and makes the adapter the active one

    def saved_state(self, model: StudioModel) -> dict[str, torch.Tensor]:
        """The adapter, head and buffers: the rest of the encoder is the unchanged backbone."""
        keep = {f"encoder.{n}" for n, p in model.encoder.named_parameters() if p.requires_grad}
        return {k: v for k, v in super().saved_state(model).items() if not k.startswith("encoder.") or k in keep}


class Adapter(AdapterLibrary):
    def library_config(self, config: TrainConfig, below: int) -> adapters.AdapterConfig:
        """Houlsby (`double_seq_bn`) or Pfeiffer (`seq_bn`) bottleneck adapters."""
        own = config.params
        return adapters.AdapterConfig.load(ADAPTER_KINDS[own.adapter_kind], reduction_factor=own.reduction_factor,
                                           leave_out=list(range(below)))


class Lora(AdapterLibrary):
    def library_config(self, config: TrainConfig, below: int) -> adapters.AdapterConfig:
        """LoRA on the self-attention query and value matrices, as Hu et al. trained RoBERTa on GLUE."""
        own = config.params
        return adapters.LoRAConfig(r=own.lora_rank, alpha=own.lora_alpha, attn_matrices=["q", "v"],
                                   selfattn_lora=True, intermediate_lora=False, output_lora=False, dropout=0.0,
                                   leave_out=list(range(below)))
