"""The method table: every training method the studio knows, one line each, readable before any method is
imported (torch and transformers take seconds, and `python -m core --help` should not wait for them).

The CLI's `--method` choices and sweep flags, the Train page's method list, the sweep grid, Compare's names
and the checkpoint loader all read it; `core.train.methods.METHODS` holds the specs it names. To add a method,
write its spec (a `Method` subclass in `methods/specs.py`, with no torch), one training module subclassing the
spec (see `methods/base.py`), and add one line here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    title: str  # how Compare, the Train page and the CLI help name it
    spec: str  # "module:Class" of its spec: names, options, defaults, budget, estimates (no torch)
    where: str  # "module:Class" of its training module's class, which fits and loads (imported on first use)
    variants: tuple[str, ...] = ()  # TrainConfig fields a sweep crosses for it


CATALOG = {
    "finetune": Entry("BERT fine-tuning", "core.train.methods.specs:FinetuneSpec",
                      "core.train.methods.finetune:Finetune"),
    "adapter": Entry("BERT + adapters", "core.train.methods.specs:AdapterSpec",
                     "core.train.methods.adapter:Adapter"),
    "lora": Entry("BERT + LoRA", "core.train.methods.specs:LoraSpec", "core.train.methods.adapter:Lora"),
    "ganbert": Entry("GAN-BERT", "core.train.methods.specs:GanBertSpec",
                     "core.train.methods.ganbert:GanBert", ("generator", "adversarial", "unlabeled_limit")),
    "setfit": Entry("SetFit", "core.train.methods.direct_specs:SetFitSpec",
                    "core.train.methods.setfit:SetFit"),
    "tfidf-lr": Entry("TF-IDF + LR", "core.train.methods.direct_specs:TfidfLRSpec",
                      "core.train.methods.linear:TfidfLR"),
    "features-lr": Entry("Frozen features + LR", "core.train.methods.direct_specs:FeaturesLRSpec",
                         "core.train.methods.linear:FeaturesLR"),
}
VARIANTS = tuple(dict.fromkeys(v for entry in CATALOG.values() for v in entry.variants))  # every method's

# What a new sweep offers before the user chooses (the CLI's `sweep` and the Train page alike).
DEFAULT_METHODS = ("finetune", "ganbert")
DEFAULT_FRACTIONS = (0.01, 0.05, 0.1, 0.5)
DEFAULT_SEEDS = (0, 1, 2, 3, 4)  # at small labeled amounts one seed's draw moves accuracy by ±0.10
