"""What a grid's top-K runs spend storing states: each text's pass through the layers below their boundary, once per
state store, at the speed this machine measured for the backbone's whole pass scaled to those layers, less the
share of the texts the store already holds. The steps after it are the method's own model (`StepSpec.seconds`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from core.backbone.packaged import PACKAGED, is_converted
from core.backbone.token_count import tokens_per_text
from core.data import clean_texts
from core.runs.encoding_speed import tokens_per_second
from core.runs.planned import texts_to_encode
from core.runs.registry import Registry
from core.train import TrainConfig
from core.train.config import cut_layers

SAMPLE = 500  # texts tokenized to tell the share a store holds (~0.2 s)


def store_cached(config: TrainConfig, texts: Sequence[str], home: Path) -> float:
    """The share of up to `SAMPLE` of these texts whose states a top-K config's store holds here (their token ids as
    its runs truncate them); 0 for a packaged backbone not converted yet (asking would convert it)."""
    if not texts or (config.backbone in PACKAGED and not is_converted(config.backbone, home)):
        return 0.0
    from core.backbone.encode import load_tokenizer  # a run still to come: listing runs must not wait for torch
    from core.train.state_store import StateStore, ids_hashes

    backbone = config.resolved_backbone(home)
    store = StateStore.open(home, backbone, cut_layers(config)[1], config.precision, 0)
    if not store.index:
        return 0.0
    step = max(1, len(texts) // SAMPLE)
    sample = clean_texts(list(texts[::step][:SAMPLE]), config.cleaning)
    ids = load_tokenizer(backbone)(sample, truncation=True, max_length=config.max_len, verbose=False)["input_ids"]
    return sum(key in store for key in ids_hashes(ids)) / len(sample)


def states_seconds(registry: Registry, configs: list[TrainConfig], pool: int, split: int | None, test: int,
                   classes: int, texts: Sequence[str] = (), extra: int = 0,
                   cached: Callable[[TrainConfig, Sequence[str]], float] | None = None) -> dict[str, float]:
    """Each top-K config's share of its grid's states pass, by its config's JSON: on each store (backbone, boundary,
    precision, max length), the texts `texts_to_encode` counts, each run adding what the ones before it did not
    store, priced at the tokens they hold over this machine's speed for the whole pass, times the share of the
    layers that run below the boundary."""
    cached = cached or partial(store_cached, home=registry.home)
    stores: dict[tuple, list[TrainConfig]] = {}
    for c in configs:
        runs, below = cut_layers(c)
        if below:
            stores.setdefault((c.backbone, c.revision, below, c.precision, c.max_len, c.cleaning), []).append(c)
    out: dict[str, float] = {}
    for group in stores.values():
        first = group[0]
        runs, below = cut_layers(first)
        per_text = tokens_per_text(texts, first.max_len) / tokens_per_second(registry, first) * below / runs
        missing = 1 - cached(first, texts)
        before = 0.0
        for i, c in enumerate(group):
            upto = texts_to_encode(group[:i + 1], pool, split, test, classes, extra)
            out[c.to_json()] = (upto - before) * missing * per_text
            before = upto
    return out
