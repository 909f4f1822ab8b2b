"""BERT fine-tuning: a linear head on the sentence representation, trained with the encoder (AdamW with
linear warm-up and decay, as run_glue), or alone on cached features when the encoder is frozen.

Everything it does is the `StepTrainer` loop with `FinetuneSpec`'s settings; the paper preset (the GAN-BERT paper's
BERT baseline, `specs.PAPER`) draws its head and takes its steps as BERT's TF code does.
"""

from __future__ import annotations

from torch import nn

from core.train.config import TrainConfig
from core.train.methods.presets import PAPER, paper
from core.train.methods.stepwise import StepTrainer


class Finetune(StepTrainer):
    """The loop's linear head, or bert.py's under the paper preset."""

    def build_head(self, config: TrainConfig, num_labels: int, feature_dim: int, hidden_size: int
                   ) -> tuple[nn.Module, nn.Module | None]:
        """bert.py's classifier: dropout 0.1, then weights from a normal of spread 0.02 (truncated in TF; cut at two
        spreads here too) and zero biases."""
        head, generator = super().build_head(config, num_labels, feature_dim, hidden_size)
        if paper(config):
            linear = head[-1]
            nn.init.trunc_normal_(linear.weight, std=0.02, a=-0.04, b=0.04)
            nn.init.zeros_(linear.bias)
        return head, generator

    def adamw_options(self, config: TrainConfig) -> tuple[float, bool]:
        """BERT's optimization.py: epsilon 1e-6, no weight decay on LayerNorm weights and biases."""
        return (PAPER["eps"], False) if paper(config) else super().adamw_options(config)
