"""The studio's model: an encoder, a head (a method's), an optional generator, and the standardization
of frozen features.

One container for every method keeps prediction uniform: `encode` turns token batches into (pooled,
standardized) sentence representations, `head_logits` turns representations into logits. What the
head is and what its logits mean belongs to the method (`core.train.methods`).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel

from core.backbone.cut import Cut
from core.backbone.encode import represent
from core.backbone.locate import Backbone
from core.backbone.poolings import reads_probabilities
from core.train.config import TrainConfig


class StudioModel(nn.Module):
    def __init__(self, config: TrainConfig, labels: tuple[str, ...], feature_dim: int, hidden_size: int,
                 cut: Cut, head: nn.Module, backbone: Backbone, generator: nn.Module | None = None):
        super().__init__()
        self.config, self.labels = config, labels
        self.backbone = backbone  # where its files were read: its tokenizer is read from there too
        self.pooling = config.resolved_pooling  # once: resolving reads the backbone's config file
        self.feature_dim, self.hidden_size = feature_dim, hidden_size
        self.encoder: PreTrainedModel = cut.model
        self.cut = cut  # the same encoder, with where it is cut (a plain attribute: its weights are `encoder`'s)
        # Frozen mode standardizes cached features with the labeled rows' statistics; identity otherwise.
        self.register_buffer("feature_mean", torch.zeros(feature_dim))
        self.register_buffer("feature_std", torch.ones(feature_dim))
        if reads_probabilities(self.pooling):  # each class's mean features, for explanations in words
            self.register_buffer("class_means", torch.zeros(len(labels), feature_dim))
        self.head = head
        self.generator = generator

    def encode(self, input_ids: torch.Tensor | None, attention_mask: torch.Tensor,
               inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        """Sentence representations of a token batch (or of its word embeddings, for attributions),
        standardized as in training."""
        rep = represent(self.cut, {"input_ids": input_ids, "attention_mask": attention_mask}, self.pooling,
                        inputs_embeds)
        return self.standardize(rep)

    def encode_states(self, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Sentence representations from a batch's states at the cut's boundary (`core.train.boundary_states`):
        the layers above it alone run."""
        return self.standardize(represent(self.cut, {"attention_mask": attention_mask}, self.pooling, states=states))

    def standardize(self, features: torch.Tensor) -> torch.Tensor:
        return (features - self.feature_mean) / self.feature_std

    def head_logits(self, rep: torch.Tensor) -> torch.Tensor:
        """The head's logits; a head that also returns features (GAN-BERT's D) gives its logits first."""
        out = self.head(rep)
        return out[0] if isinstance(out, tuple) else out
