"""Which encoding engine `auto` means on a machine: the fastest whose features keep accuracy, as bench/encode.py
measured them (texts/s side by side in one process; features + LR and a trained head on the M4 sample and L2R's
dev split within 0.01 of fp32 torch)."""

from __future__ import annotations

import torch

from core.backbone.device import native_bf16


def auto_engine(device: torch.device) -> str:
    """torch on a GPU; on a CPU, the engine bench/encode.py found fastest there within the accuracy bound."""
    if device.type != "cpu":
        return "torch"
    return "torch" if native_bf16(device) else "torch"
