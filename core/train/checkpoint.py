"""A run's checkpoint folder: its two files, whether it is whole, and loading it. Its description names the
config, whose method (from the table) rebuilds the model; torch is imported only when one is loaded, so
listing runs does not pay for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from core.backbone.poolings import hidden_pooling, pooled_layer
from core.errors import InputError
from core.train.config import TrainConfig
from core.train.methods import Predictor, method_for

if TYPE_CHECKING:
    import torch

WEIGHTS, DESCRIPTION = "model.safetensors", "model.json"


class CheckpointError(RuntimeError):
    """The run directory could not be written (full disk, lost permissions, removed folder)."""


def has_checkpoint(folder: Path) -> bool:
    return (folder / DESCRIPTION).exists() and (folder / WEIGHTS).exists()


def read_description(folder: Path) -> dict:
    return json.loads((folder / DESCRIPTION).read_text())


class DamagedCheckpoint(InputError):
    """A checkpoint that cannot be read back: truncated, edited, or written by a studio that saved other tensors."""


def moved(config: TrainConfig, backbone: str) -> dict:
    """The settings that read the same backbone from another folder (an exported model's copy) as the run read it:
    its pooling pinned as it resolved, since a packaged backbone's measured layer goes by its name (SmolLM2's 20,
    where a folder's default is its middle layer, 15: an exported SmolLM2 model had called every text "human")."""
    hidden = hidden_pooling(config.resolved_pooling)
    layer = pooled_layer(hidden or "")
    pinned = {"pooling": "layer", "pool_layer": layer} if layer is not None else {"pooling": hidden} if hidden else {}
    return {"backbone": backbone, "revision": None, **pinned}


def load_predictor(folder: Path, home: Path, device: torch.device | str = "cpu", backbone: str | None = None
                   ) -> Predictor:
    """The run's model from its checkpoint, its backbone read from `backbone` where given (a copy of the folder the
    run read: an exported model's), else as the run found it under the studio `home`; `DamagedCheckpoint`, naming
    the run, where the files cannot be read (a truncated model.safetensors raised SafetensorError from deep inside a
    predict)."""
    from safetensors import SafetensorError

    try:
        description = read_description(folder)
        if backbone is not None:
            ran = TrainConfig.from_json(json.dumps(description["config"]))
            description["config"] = {**description["config"], **moved(ran, backbone)}
        config = TrainConfig.from_json(json.dumps(description["config"]))
        return method_for(config).load(folder, description, home, device)
    except InputError:  # a backbone no longer where the run found it says so itself
        raise
    except (SafetensorError, OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
        raise DamagedCheckpoint(f"run {folder.parent.name}'s checkpoint is damaged and cannot be loaded "
                                f"({type(e).__name__}: {str(e)[:200]}); train the run again") from None
