"""Writing and reading a checkpoint's tensors (`checkpoint.py` names its files): safetensors weights plus a
JSON description (config, labels and what the method needs to rebuild itself), never pickle. Every method
writes through here; the description is written last, so a folder with one is whole."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from core.paths import atomic_write_text, replace_durably
from core.train.checkpoint import DESCRIPTION, WEIGHTS, CheckpointError, DamagedCheckpoint, read_description

DIGEST = "weights_sha256"  # the description's record of the weights it was written with


def write_checkpoint(folder: Path, tensors: dict[str, torch.Tensor], description: dict,
                     files: dict[str, str] | None = None) -> None:
    """Atomically write weights, any extra text files (a vocabulary), then the description with the weights'
    digest; a killed save never leaves half a checkpoint."""
    tmp = folder / f".{WEIGHTS}.partial"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp))
        digest = file_digest(tmp)
        replace_durably(tmp, folder / WEIGHTS)
        for name, text in (files or {}).items():
            atomic_write_text(folder / name, text)
        atomic_write_text(folder / DESCRIPTION, json.dumps({**description, DIGEST: digest}, indent=2))
    except (OSError, SafetensorError) as e:  # safetensors says a failed write (a full disk) in its own error
        raise CheckpointError(f"could not write the checkpoint to {folder}: {getattr(e, 'strerror', None) or e}"
                              ) from e
    finally:
        tmp.unlink(missing_ok=True)


def file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def read_tensors(folder: Path, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """The weights, once they match the digest written with them: bytes flipped in place (the same size, still a
    safetensors file) had loaded as other weights and given other predictions without a word. A checkpoint from
    before digests is read as it is."""
    expected = read_description(folder).get(DIGEST)
    if expected is not None and file_digest(folder / WEIGHTS) != expected:
        raise DamagedCheckpoint(f"run {folder.parent.name}'s checkpoint is damaged: its weights are not those it was "
                                "written with (their digest differs); train the run again")
    return load_file(str(folder / WEIGHTS), device=str(device))
