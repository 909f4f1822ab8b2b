"""The studio's model: an optional encoder, a head (linear, or GAN-BERT's discriminator), an optional
generator, and its own save and load (safetensors weights + a JSON description, never pickle).

One class for every method keeps prediction uniform: `encode` turns token batches into (pooled,
standardized) sentence representations, `head_logits` turns representations into class logits.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from core.backbone import load_encoder, pool, resolve_backbone
from core.config import ADAPTER_KINDS, TrainConfig
from core.models.ganbert import Discriminator, NoiseGenerator, preset_sizes
from core.paths import atomic_write_text

WEIGHTS, DESCRIPTION = "model.safetensors", "model.json"


class CheckpointError(RuntimeError):
    """The run directory could not be written (full disk, lost permissions, removed folder)."""


def add_bottleneck_adapter(encoder: nn.Module, kind: str, reduction_factor: int) -> None:
    """Houlsby (`double_seq_bn`) or Pfeiffer (`seq_bn`) bottleneck adapters through AdapterHub's
    `adapters`; afterwards only the adapter weights require gradients."""
    import adapters

    adapters.init(encoder)
    config = adapters.AdapterConfig.load(ADAPTER_KINDS[kind], reduction_factor=reduction_factor)
    encoder.add_adapter("studio", config=config)
    encoder.train_adapter("studio")
    encoder.set_active_adapters("studio")


class StudioModel(nn.Module):
    def __init__(self, config: TrainConfig, labels: tuple[str, ...], feature_dim: int, hidden_size: int,
                 encoder: nn.Module | None):
        super().__init__()
        self.config, self.labels = config, labels
        self.feature_dim, self.hidden_size = feature_dim, hidden_size
        self.encoder = encoder
        # Frozen mode standardizes cached features with train-pool statistics; identity otherwise.
        self.register_buffer("feature_mean", torch.zeros(feature_dim))
        self.register_buffer("feature_std", torch.ones(feature_dim))
        k = len(labels)
        if config.method == "ganbert":
            sizes = preset_sizes(config.gan_preset, hidden_size, config.noise)
            self.head = Discriminator(feature_dim, sizes.d_hidden, k, sizes.dropout)
            self.generator: nn.Module | None = NoiseGenerator(config.noise_dim, sizes.g_hidden, feature_dim,
                                                              sizes.noise, sizes.dropout)
        else:
            self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(feature_dim, k))
            self.generator = None

    # ------------------------------------------------------------ forward

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Sentence representations of a token batch, standardized as in training."""
        outputs = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                               output_hidden_states=self.config.resolved_pooling == "layers")
        rep = pool(outputs, attention_mask, self.config.resolved_pooling).float()
        return (rep - self.feature_mean) / self.feature_std

    def standardize(self, features: torch.Tensor) -> torch.Tensor:
        return (features - self.feature_mean) / self.feature_std

    def head_logits(self, rep: torch.Tensor) -> torch.Tensor:
        """Logits over the k real classes, plus GAN-BERT's fake class as the last column when present."""
        out = self.head(rep)
        return out[0] if isinstance(out, tuple) else out

    @property
    def has_fake_class(self) -> bool:
        return self.config.method == "ganbert"

    # ------------------------------------------------------------ save and load

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """What the checkpoint holds: what prediction needs. For adapters only adapters, head and buffers;
        for frozen mode no encoder at all (it is the unchanged backbone); never the generator."""
        state = {k: v for k, v in self.state_dict().items() if not k.startswith("generator.")}
        if self.config.frozen:
            return {k: v for k, v in state.items() if not k.startswith("encoder.")}
        if self.config.method == "adapter":
            keep = {f"encoder.{n}" for n, p in self.encoder.named_parameters() if p.requires_grad}
            return {k: v for k, v in state.items() if not k.startswith("encoder.") or k in keep}
        return state

    def save(self, folder: Path) -> None:
        """Atomically write weights and description; a killed save never leaves half a checkpoint."""
        tensors = {k: v.detach().contiguous().cpu() for k, v in self.trainable_state().items()}
        description = {"config": json.loads(self.config.to_json()), "labels": list(self.labels),
                       "feature_dim": self.feature_dim, "hidden_size": self.hidden_size,
                       "backbone": str(resolve_backbone(self.config.backbone))}
        tmp = folder / f".{WEIGHTS}.partial"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            save_file(tensors, str(tmp))
            os.replace(tmp, folder / WEIGHTS)
            atomic_write_text(folder / DESCRIPTION, json.dumps(description, indent=2))
        except OSError as e:
            raise CheckpointError(f"could not write the checkpoint to {folder}: {e.strerror or e}") from e
        finally:
            tmp.unlink(missing_ok=True)


def build_model(config: TrainConfig, labels: tuple[str, ...], device: torch.device) -> StudioModel:
    """A fresh model for a config: encoder from the local backbone, adapters added when asked for."""
    encoder = load_encoder(config.backbone, device)
    hidden = encoder.config.hidden_size
    layers = encoder.config.num_hidden_layers
    feature_dim = {"cls": hidden, "mean": hidden, "layers": 2 * hidden * layers}[config.resolved_pooling]
    if config.frozen:
        encoder.requires_grad_(False)
    if config.method == "adapter":
        add_bottleneck_adapter(encoder, config.adapter_kind, config.reduction_factor)
    return StudioModel(config, labels, feature_dim, hidden, encoder).to(device)


def load_model(folder: Path, device: torch.device | str = "cpu") -> StudioModel:
    """Rebuild the model from its description and load the weights (safetensors only)."""
    description = json.loads((folder / DESCRIPTION).read_text())
    config = TrainConfig.from_json(json.dumps(description["config"]))
    model = build_model(config, tuple(description["labels"]), torch.device(device))
    state = load_file(str(folder / WEIGHTS), device=str(device))
    _, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise ValueError(f"checkpoint in {folder} has weights this model does not: {unexpected[:3]}")
    not_loaded = [k for k in model.trainable_state() if k not in state]
    if not_loaded:
        raise ValueError(f"checkpoint in {folder} lacks weights: {not_loaded[:3]}")
    return model.eval()
