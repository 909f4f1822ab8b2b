"""Pooling strings, read without torch: how a config, the feature store and the encoder name what a frozen run
reads of a backbone (a pooling of its hidden states, a causal LM's token probabilities, or both)."""

from __future__ import annotations

POOLINGS = ("cls", "pooled", "mean", "layers", "layerN")  # layerN: one layer's mean, 'layer15'
# A causal LM's token-probability statistics (`core.backbone.probabilities`), alone ('probabilities') or after a
# pooling's vector ('layer20+probabilities'): one string, so the feature store, the engines and the model read
# them as they read any pooling.
PROBABILITIES = "probabilities"


def hidden_pooling(pooling: str) -> str | None:
    """The pooling of hidden states a pooling string holds; None for token probabilities alone."""
    return None if pooling == PROBABILITIES else pooling.removesuffix(f"+{PROBABILITIES}")


def reads_probabilities(pooling: str) -> bool:
    return pooling == PROBABILITIES or pooling.endswith(f"+{PROBABILITIES}")


def needs_layers(pooling: str) -> bool:
    """Whether a pooling reads hidden states beyond the last layer's."""
    return (hidden_pooling(pooling) or "").startswith("layer")


def pooled_layer(pooling: str) -> int | None:
    """The layer a `layerN` pooling averages ('layer15' → 15); None for any other pooling."""
    hidden = hidden_pooling(pooling) or ""
    return int(hidden[5:]) if hidden.startswith("layer") and hidden[5:].isdigit() else None


def last_layer(pooling: str) -> int | None:
    """The last layer a pooling reads, when it reads one layer's hidden states alone (`layerN`): the encoder can
    stop there (`cut_after`). None for every other pooling, and for token probabilities, which need the whole
    model."""
    return None if reads_probabilities(pooling) else pooled_layer(pooling)
