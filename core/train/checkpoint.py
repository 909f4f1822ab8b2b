"""Making a model for a config, and its checkpoint: safetensors weights plus a JSON description (config,
labels, sizes), never pickle. The method decides which weights the checkpoint keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from core.backbone import load_encoder, resolve_backbone
from core.paths import atomic_write_text
from core.train.config import TrainConfig
from core.train.methods import method_for
from core.train.model import StudioModel

WEIGHTS, DESCRIPTION = "model.safetensors", "model.json"


class CheckpointError(RuntimeError):
    """The run directory could not be written (full disk, lost permissions, removed folder)."""


def build_model(config: TrainConfig, labels: tuple[str, ...], device: torch.device) -> StudioModel:
    """A fresh model for a config: the local backbone's encoder (frozen, or changed by the method) and the
    method's head."""
    method = method_for(config)
    encoder = load_encoder(config.backbone, device)
    hidden = encoder.config.hidden_size
    feature_dim = {"cls": hidden, "mean": hidden,
                   "layers": 2 * hidden * encoder.config.num_hidden_layers}[config.resolved_pooling]
    if config.frozen:
        encoder.requires_grad_(False)
    method.adapt_encoder(encoder, config)
    head, generator = method.build_head(config, len(labels), feature_dim, hidden)
    return StudioModel(config, labels, feature_dim, hidden, encoder, head, generator).to(device)


def save_model(model: StudioModel, folder: Path) -> None:
    """Atomically write weights and description; a killed save never leaves half a checkpoint."""
    state = method_for(model.config).saved_state(model)
    tensors = {k: v.detach().contiguous().cpu() for k, v in state.items()}
    description = {"config": json.loads(model.config.to_json()), "labels": list(model.labels),
                   "feature_dim": model.feature_dim, "hidden_size": model.hidden_size,
                   "backbone": str(resolve_backbone(model.config.backbone))}
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


def has_checkpoint(folder: Path) -> bool:
    return (folder / DESCRIPTION).exists() and (folder / WEIGHTS).exists()


def load_model(folder: Path, device: torch.device | str = "cpu") -> StudioModel:
    """Rebuild the model from its description and load the weights (safetensors only)."""
    description = json.loads((folder / DESCRIPTION).read_text())
    config = TrainConfig.from_json(json.dumps(description["config"]))
    model = build_model(config, tuple(description["labels"]), torch.device(device))
    state = load_file(str(folder / WEIGHTS), device=str(device))
    _, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise ValueError(f"checkpoint in {folder} has weights this model does not: {unexpected[:3]}")
    not_loaded = [k for k in method_for(config).saved_state(model) if k not in state]
    if not_loaded:
        raise ValueError(f"checkpoint in {folder} lacks weights: {not_loaded[:3]}")
    return model.eval()
