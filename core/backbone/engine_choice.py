"""Which encoding engine `auto` means on a machine: the fastest whose features keep accuracy, as bench/encode.py
measured them (texts/s side by side in one process; features + LR and a trained head on the M4 sample and L2R's
dev split within 0.01 of fp32 torch)."""

from __future__ import annotations

import torch


def auto_engine(device: torch.device) -> str:
    """torch on a GPU; on a CPU, the engine bench/encode.py found fastest there within the accuracy bound."""
    return "torch"  # until bench/encode.py names a faster engine within the bound
