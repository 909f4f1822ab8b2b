"""What the studio needs to know of a model family (a config's `model_type`), one entry a family: whether it is a
causal LM, where its layers and the modules around them are, and what its config calls its depth, width and
attention dropout. The cut (`core.backbone.cut`), the dropout switch, the checkpoints' layer names, the position
limit and the estimates read this table; supporting another family is one entry here (GPT-2's was added so, and
tests/test_families.py trains it with every method). Nothing here imports torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from core.errors import InputError


@dataclass(frozen=True)
class Family:
    causal: bool  # its tokens see only those before them: features read a middle layer's mean (`layer` pooling)
    stack: tuple[str, ...]  # the path from the base model to its list of layers
    embeddings: tuple[str, ...] = ()  # what embeds given ids before layer 1 and is not skipped for `inputs_embeds`
    positions: tuple[str, ...] = ()  # position tables its forward adds even to given `inputs_embeds`
    on_embeddings: tuple[str, ...] = ()  # what its forward applies to the embedded inputs before layer 1 (a dropout)
    final_norm: str | None = None  # applied after the last layer alone: a cut below it drops it
    after: tuple[str, ...] = ()  # what follows the last layer and trains with the layers above a boundary
    dropout_keys: tuple[str, ...] = ("attention_probs_dropout_prob",)  # its config's attention dropout
    dropout_modules: tuple[str, ...] = ("attention.self.dropout",)  # the dropouts on attention weights, by suffix
    depth_key: str = "num_hidden_layers"
    width_key: str = "hidden_size"
    position_offset: int = 0  # positions its table keeps for padding (RoBERTa's 2)

    def depth(self, config: dict) -> int:
        return int(config.get(self.depth_key) or 0)

    def width(self, config: dict) -> int:
        return int(config.get(self.width_key) or 0)

    def attention_dropout(self, config: dict) -> float:
        return float(next((config[k] for k in self.dropout_keys if config.get(k) is not None), 0.0))


BERT_KIN = Family(causal=False, stack=("encoder", "layer"), embeddings=("embeddings",), after=("pooler",))
ROBERTA_KIN = replace(BERT_KIN, position_offset=2)
LLAMA_KIN = Family(causal=True, stack=("layers",), final_norm="norm", after=("norm",),
                   dropout_keys=("attention_dropout",), dropout_modules=())

FAMILIES = {
    "bert": BERT_KIN,
    "electra": replace(BERT_KIN, embeddings=("embeddings", "embeddings_project"), after=()),
    "mpnet": replace(BERT_KIN, dropout_modules=("attention.attn.dropout",)),
    "roberta": ROBERTA_KIN,
    "xlm-roberta": ROBERTA_KIN,
    "camembert": ROBERTA_KIN,
    "deberta": BERT_KIN,
    "deberta-v2": BERT_KIN,
    "distilbert": Family(causal=False, stack=("transformer", "layer"), embeddings=("embeddings",),
                         dropout_keys=("attention_dropout",), dropout_modules=("attention.dropout",),
                         depth_key="n_layers", width_key="dim"),
    "albert": Family(causal=False, stack=(), embeddings=("embeddings",), after=("pooler",)),  # one layer, shared
    "llama": LLAMA_KIN,
    "mistral": LLAMA_KIN,
    "qwen2": LLAMA_KIN,
    "phi3": LLAMA_KIN,
    # word embeddings skipped for given `inputs_embeds`, positions added to them all the same
    "gpt2": Family(causal=True, stack=("h",), positions=("wpe",), on_embeddings=("drop",), final_norm="ln_f",
                   after=("ln_f",),
                   dropout_keys=("attn_pdrop",), dropout_modules=("attn.attn_dropout",), depth_key="n_layer",
                   width_key="n_embd"),
}

ENCODER_FAMILIES = tuple(name for name, family in FAMILIES.items() if not family.causal)  # the model picker's
CAUSAL_FAMILIES = tuple(name for name, family in FAMILIES.items() if family.causal)


def family(model_type: str | None) -> Family:
    """The entry of a config's `model_type`; a family the table lacks is refused by name, not run half-known."""
    if model_type not in FAMILIES:
        raise InputError(f"{model_type or 'a model with no model_type'} is not a family the studio knows "
                         f"({', '.join(FAMILIES)}); one entry in core/backbone/families.py adds it")
    return FAMILIES[model_type]


def family_of(config: dict) -> Family | None:
    """The entry of a config read as a dict, or None where it has no known `model_type`."""
    return FAMILIES.get(config.get("model_type"))


# An encoder layer's weights in a checkpoint (`encoder.` + the stack's path + `.N.`), and a final norm's
STACKS = sorted({".".join(f.stack) for f in FAMILIES.values() if f.stack})
LAYER_KEY = re.compile(r"^encoder\.(?:" + "|".join(map(re.escape, STACKS)) + r")\.(\d+)\.")
FINAL_NORMS = tuple(sorted({f"encoder.{f.final_norm}." for f in FAMILIES.values() if f.final_norm}))
