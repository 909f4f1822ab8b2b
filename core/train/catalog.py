"""The method table: every training method the studio knows, one line each, readable before any method is
imported (torch and transformers take seconds, and `python -m core --help` should not wait for them).

The CLI's `--method` choices and sweep flags, the Train page's method list, the sweep grid, Compare's names
and the checkpoint loader all read it; `core.train.methods.METHODS` holds the specs it names. To add a method,
write its settings (a `MethodParams` in `params.py`), its spec (a `Method` subclass in `methods/specs.py`, with no
torch), its trainer (a `Trainer` in a training module, which holds the spec: see `methods/base.py`), and add one
line here.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.train.params import (
    AdapterParams,
    FinetuneParams,
    GanBertParams,
    LogisticParams,
    LoraParams,
    MethodParams,
    SetFitParams,
)


@dataclass(frozen=True)
class Entry:
    title: str  # how Compare, the Train page and the CLI help name it
    spec: str  # "module:Class" of its spec: names, defaults, budget, estimates (no torch)
    trainer: str  # "module:Class" of its trainer, built around the spec: it fits and loads (imported on first use)
    params: type[MethodParams]  # its own settings, their defaults and checks (`TrainConfig.params`)
    variants: tuple[str, ...] = ()  # settings a sweep crosses for it


CATALOG = {
    "finetune": Entry("BERT fine-tuning", "core.train.methods.specs:FinetuneSpec",
                      "core.train.methods.finetune:Finetune", FinetuneParams),
    "adapter": Entry("BERT + adapters", "core.train.methods.specs:AdapterSpec",
                     "core.train.methods.adapter:Adapter", AdapterParams),
    "lora": Entry("BERT + LoRA", "core.train.methods.specs:LoraSpec", "core.train.methods.adapter:Lora",
                  LoraParams),
    "ganbert": Entry("GAN-BERT", "core.train.methods.specs:GanBertSpec",
                     "core.train.methods.ganbert:GanBert", GanBertParams,
                     ("generator", "adversarial", "unlabeled_limit")),
    "setfit": Entry("SetFit", "core.train.methods.direct_specs:SetFitSpec",
                    "core.train.methods.setfit:SetFit", SetFitParams),
    "tfidf-lr": Entry("TF-IDF + LR", "core.train.methods.direct_specs:TfidfLRSpec",
                      "core.train.methods.linear:TfidfLR", LogisticParams),
    "features-lr": Entry("Frozen features + LR", "core.train.methods.direct_specs:FeaturesLRSpec",
                         "core.train.methods.linear:FeaturesLR", LogisticParams),
}
VARIANTS = tuple(dict.fromkeys(v for entry in CATALOG.values() for v in entry.variants))  # every method's

# What a new sweep offers before the user chooses (the CLI's `sweep` and the Train page alike).
DEFAULT_METHODS = ("finetune", "ganbert")
DEFAULT_FRACTIONS = (0.01, 0.05, 0.1, 0.5)
DEFAULT_SEEDS = (0, 1, 2, 3, 4)  # at small labeled amounts one seed's draw moves accuracy by ±0.10
