"""Loading a resolved backbone's encoder and tokenizer, and turning texts into sentence vectors.

Everything family-specific (pad token, special tokens, token type ids, layer count) comes from the model's
own config and tokenizer, so BERT, RoBERTa, DeBERTa, DistilBERT and ELECTRA all take the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from core.backbone.cut import Cut, cut_after, layer_stack
from core.backbone.device import pick_device
from core.backbone.locate import Backbone, BackboneError, check_ready, resolve_backbone
from core.backbone.packaged import CAUSAL_EXAMPLES
from core.backbone.poolings import POOLINGS, hidden_pooling, last_layer, needs_layers, pooled_layer, reads_probabilities
from core.backbone.probabilities import NAMES, token_statistics

BackboneLike = Backbone | str | Path | None


def feature_size(config, pooling: str) -> int:
    """The length of the vector a pooling gives on a model of this config."""
    hidden = hidden_pooling(pooling)
    size = 0 if hidden is None else 2 * config.hidden_size * config.num_hidden_layers if hidden == "layers" \
        else config.hidden_size
    return size + (len(NAMES) if reads_probabilities(pooling) else 0)


def as_backbone(backbone: BackboneLike) -> Backbone:
    """A backbone whose files are there to load: a packaged one comes resolved against its home, and converted."""
    return check_ready(backbone) if isinstance(backbone, Backbone) else resolve_backbone(backbone, home=None)


def load_tokenizer(backbone: BackboneLike = None) -> PreTrainedTokenizerBase:
    """The backbone's own tokenizer; one with no pad token cannot batch texts, so it is refused."""
    return _tokenizer(as_backbone(backbone))


@lru_cache(maxsize=4)
def _tokenizer(backbone: Backbone) -> PreTrainedTokenizerBase:
    """Cached: loading costs ~0.1 s and a tokenizer is immutable."""
    tokenizer = AutoTokenizer.from_pretrained(str(backbone.folder), local_files_only=True)
    if tokenizer.pad_token_id is None:
        raise BackboneError(f"{backbone.name}'s tokenizer has no pad token, which batches need: give it one and save "
                            "it (a causal LM's: `tokenizer.pad_token = tokenizer.eos_token`, right padding, as the "
                            "studio does for SmolLM2), or pick an encoder such as BERT or RoBERTa")
    return tokenizer


LENGTH_SAMPLE = 500  # texts tokenized to estimate how many a max length cuts (~0.2 s)


def sampled_token_lengths(texts: pd.Series, tokenizer: PreTrainedTokenizerBase, seed: int = 0) -> np.ndarray:
    """Token counts (special tokens included) of up to `LENGTH_SAMPLE` of the texts, drawn by `seed`: what the
    Data page's check and max length `auto` both measure truncation on."""
    if not len(texts):
        return np.zeros(0, dtype=np.int64)
    sample = texts.sample(min(LENGTH_SAMPLE, len(texts)), random_state=seed).tolist()
    return np.array([len(ids) for ids in tokenizer(sample, verbose=False)["input_ids"]])


def load_encoder(backbone: BackboneLike = None, device: torch.device | str = "cpu", lm_head: bool = False,
                 upto: int | None = None) -> PreTrainedModel:
    """The backbone's bare encoder (no head), in eval mode; with `lm_head`, a causal LM with its head, whose
    token probabilities a pooling reads. `upto`: cut after that many layers, as `load_cut` cuts it."""
    return load_cut(backbone, device, lm_head, upto).model


def load_cut(backbone: BackboneLike = None, device: torch.device | str = "cpu", lm_head: bool = False,
             upto: int | None = None) -> Cut:
    """`load_encoder`'s model with where it was cut: after `upto` layers (`cut_after`), for a pooling that reads no
    later one; `represent` runs its base model and, with `lm_head`, the head apart."""
    folder = as_backbone(backbone).folder
    if not lm_head:
        model = AutoModel.from_pretrained(str(folder), local_files_only=True)
        cut = cut_after(model, upto) if upto is not None else Cut(model)
        cut.model.to(device).eval()
        return cut
    try:
        model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True)
    except ValueError as e:  # an encoder's config has no causal-LM class
        raise BackboneError(f"token probabilities need a causal LM backbone (such as {CAUSAL_EXAMPLES}): {e}") from None
    return Cut(model.to(device).eval())


def states_of_layer(encoder: PreTrainedModel, stack: torch.nn.ModuleList, layer: int, inputs: dict):
    """The whole model's outputs with `hidden_states[layer]` (layer N's output, where `output_hidden_states` puts
    it) and None at every other index: token probabilities need the last layer, a `layerN` pooling layer N, and
    keeping all 31 of SmolLM2's states for one took 290 MB a batch of 4,096 tokens."""
    kept: list[torch.Tensor] = []
    handle = stack[layer - 1].register_forward_hook(
        lambda module, args, output: kept.append(output[0] if isinstance(output, tuple) else output))
    try:
        outputs = encoder(**inputs)
    finally:
        handle.remove()
    outputs.hidden_states = tuple(kept[0] if i == layer else None for i in range(len(stack) + 1))
    return outputs


def pool(outputs, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Sentence vectors from encoder outputs, masked by the tokenizer's own attention mask.

    `layers` concatenates every layer's mean-pooled and first-token vectors: sentence-embedding models
    keep topic in their last layer and style in the lower ones, and authorship is about style. `layerN` is layer
    N's mean over every token but the first: a causal LM's start token attends to nothing else and carries a norm
    that would swamp the mean (its tokenizer pads on the right, so the first is always the start).
    """
    mask = attention_mask.unsqueeze(-1).to(outputs.last_hidden_state.dtype)

    def mean(h: torch.Tensor) -> torch.Tensor:
        return (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    if pooling == "cls":
        return outputs.last_hidden_state[:, 0]
    if pooling == "pooled":  # BERT's pooler (dense + tanh on CLS), what both GAN-BERT codes read; CLS without one
        pooled = getattr(outputs, "pooler_output", None)
        return outputs.last_hidden_state[:, 0] if pooled is None else pooled
    if pooling == "mean":
        return mean(outputs.last_hidden_state)
    if pooling == "layers":
        return torch.cat([torch.cat([mean(h), h[:, 0]], dim=-1) for h in outputs.hidden_states[1:]], dim=-1)
    if (layer := pooled_layer(pooling)) is not None:  # a model cut after it gives it as its last hidden state
        h = outputs.last_hidden_state if outputs.hidden_states is None else \
            outputs.hidden_states[min(layer, len(outputs.hidden_states) - 1)]
        rest = mask.clone()
        rest[:, 0] = 0
        return (h * rest).sum(1) / rest.sum(1).clamp(min=1.0)
    raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")


def represent(model: Cut | PreTrainedModel, enc: dict, pooling: str, inputs_embeds: torch.Tensor | None = None,
              states: torch.Tensor | None = None) -> torch.Tensor:
    """Sentence vectors of a tokenized batch (`input_ids`, `attention_mask` and what else the tokenizer gave), as
    `pooling` says: a pooling of hidden states, token-probability statistics (a causal LM loaded with its head,
    `load_cut(lm_head=True)`), or both side by side. `inputs_embeds`, when given, replaces the ids' word
    embeddings (attributions); token probabilities still score the ids. `states`: the batch's states at the cut's
    boundary (`Cut.below`, as the state store keeps them), which the layers above it alone then run."""
    cut = model if isinstance(model, Cut) else Cut(model)
    hidden, probabilities = hidden_pooling(pooling), reads_probabilities(pooling)
    encoder = cut.encoder
    inputs = dict(enc) | ({"input_ids": None, "inputs_embeds": inputs_embeds} if inputs_embeds is not None else {})
    if cut.layers is not None and (pooled_layer(hidden or "") != cut.layers or probabilities):
        raise ValueError(f"an encoder cut after layer {cut.layers} gives that layer alone, not the {pooling} pooling")
    layer = pooled_layer(hidden or "")
    stack = layer_stack(encoder)
    if states is not None:
        outputs = cut.above(states, enc["attention_mask"])
    elif cut.boundary:
        outputs = cut.outputs(inputs)
    elif layer is not None and cut.layers is None and stack is not None and 0 < layer < len(stack):
        outputs = states_of_layer(encoder, stack, layer, inputs)
    elif layer is not None and stack is not None and layer >= len(stack):  # the last: `last_hidden_state`, normed
        outputs = encoder(**inputs)
    else:
        outputs = encoder(**inputs, output_hidden_states=needs_layers(pooling) and cut.layers is None)
    parts = [] if hidden is None else [pool(outputs, enc["attention_mask"], hidden)]
    if probabilities:
        parts.append(token_statistics(cut.model.get_output_embeddings(), outputs.last_hidden_state,
                                      enc["input_ids"], enc["attention_mask"]))
    return torch.cat([p.float() for p in parts], dim=-1)


# A CPU batch's tokens (padded length × texts): bench/speed/encode.py --backbone smollm2-135m measured batches of 4,096
# tokens 1.09x batches of 32 texts at 256 tokens (level at 128, where both are 32 texts), and on MiniLM (--batches)
# 1.01x/1.07x/1.04x at 128/256/512. A GPU keeps its batches of texts, which it fills better.
CPU_BATCH_TOKENS = 4096


def batches(lengths: list[int], batch_size: int, budget: int | None) -> list[np.ndarray]:
    """Positions of texts in order of their token lengths, cut every `batch_size` texts, or with a `budget` where
    the padded batch (its longest text × its texts) would pass that many tokens."""
    order = np.argsort(lengths, kind="stable")
    if budget is None:
        return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    out, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and lengths[order[end]] * (end + 1 - start) <= budget:
            end += 1
        out.append(order[start:end])
        start = end
    return out


@torch.inference_mode()
def encode_texts(model: Cut | PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: list[str], max_len: int = 128,
                 pooling: str = "mean", batch_size: int = 32, bf16: bool = False,
                 on_progress: Callable[[int, int], None] | None = None, budget: int | None = CPU_BATCH_TOKENS
                 ) -> np.ndarray:
    """Float32 sentence vectors of a loaded encoder, tokenized once and padded per batch of like lengths; on a CPU
    batches hold up to `budget` tokens (None: `batch_size` texts, as on a GPU)."""
    dev = next((model.model if isinstance(model, Cut) else model).parameters()).device
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    ids = tokenizer(texts, truncation=True, max_length=max_len, verbose=False)
    tokenizer.deprecation_warnings["Asking-to-pad-a-fast-tokenizer"] = True  # padding apart is the point here
    out: list[np.ndarray | None] = [None] * len(texts)
    done = 0
    for idx in batches([len(x) for x in ids["input_ids"]], batch_size, budget if dev.type == "cpu" else None):
        enc = tokenizer.pad({k: [ids[k][i] for i in idx] for k in ids}, return_tensors="pt").to(dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            vecs = represent(model, enc, pooling).float().cpu().numpy()
        for i, v in zip(idx, vecs):
            out[i] = v
        done += len(idx)
        if on_progress is not None:
            on_progress(done, len(texts))
    return np.stack(out)


def embed_texts(texts: list[str], backbone: BackboneLike = None, max_len: int = 128, pooling: str = "mean",
                batch_size: int = 32, device: torch.device | str = "auto", bf16: bool = False,
                on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Frozen sentence vectors of a backbone as a float32 numpy array."""
    backbone = as_backbone(backbone)
    dev = device if isinstance(device, torch.device) else pick_device(device)
    return encode_texts(load_cut(backbone, dev, reads_probabilities(pooling), last_layer(pooling)),
                        load_tokenizer(backbone), texts, max_len, pooling, batch_size, bf16, on_progress)
