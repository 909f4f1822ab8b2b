"""Writing and reading a checkpoint's tensors (`checkpoint.py` names its files): safetensors weights plus a
JSON description (config, labels and what the method needs to rebuild itself), never pickle. Every method
writes through here; the description is written last, so a folder with one is whole."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from core.paths import atomic_write_text, replace_durably
from core.train.checkpoint import DESCRIPTION, WEIGHTS, CheckpointError


def write_checkpoint(folder: Path, tensors: dict[str, torch.Tensor], description: dict,
                     files: dict[str, str] | None = None) -> None:
    """Atomically write weights, any extra text files (a vocabulary), then the description; a killed save
    never leaves half a checkpoint."""
    tmp = folder / f".{WEIGHTS}.partial"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp))
        replace_durably(tmp, folder / WEIGHTS)
        for name, text in (files or {}).items():
            atomic_write_text(folder / name, text)
        atomic_write_text(folder / DESCRIPTION, json.dumps(description, indent=2))
    except (OSError, SafetensorError) as e:  # safetensors says a failed write (a full disk) in its own error
        raise CheckpointError(f"could not write the checkpoint to {folder}: {getattr(e, 'strerror', None) or e}"
                              ) from e
    finally:
        tmp.unlink(missing_ok=True)


def read_tensors(folder: Path, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    return load_file(str(folder / WEIGHTS), device=str(device))
