"""BERT fine-tuning: a linear head on the sentence representation, trained with the encoder (AdamW with
linear warm-up and decay, as run_glue), or alone on cached features when the encoder is frozen.

Everything it does is the `StepMethod` loop with `FinetuneSpec`'s settings; this module names it.
"""

from __future__ import annotations

from core.train.methods.specs import FinetuneSpec
from core.train.methods.stepwise import StepMethod


class Finetune(FinetuneSpec, StepMethod):
    pass
