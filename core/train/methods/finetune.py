"""BERT fine-tuning: a linear head on the sentence representation, trained with the encoder (AdamW with
linear warm-up and decay, as run_glue), or alone on cached features when the encoder is frozen.

Everything it does is the `StepMethod` default; this module names it.
"""

from __future__ import annotations

from core.train.catalog import CATALOG
from core.train.config import TrainConfig
from core.train.methods.stepwise import StepMethod


class Finetune(StepMethod):
    name = "finetune"
    title = CATALOG[name].title

    def display(self, config: TrainConfig) -> str:
        """With the encoder frozen nothing is fine-tuned: it is a head trained on frozen features."""
        return "Trained head on frozen features" if config.frozen else self.title
