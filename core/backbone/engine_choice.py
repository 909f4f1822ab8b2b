"""Which encoding engine `auto` means on a machine: the fastest whose features keep accuracy, as bench/speed/encode.py
measured them (texts/s side by side in one process; features + LR and a trained head on the M4 sample and L2R's
dev split within 0.01 of fp32 torch).

Measured 2026-11-28 on 2 cores of an AMD EPYC with native bf16, at 128/256/512 tokens (texts/s): torch bf16
97/60/37, torch fp32 60/34/22, ONNX Runtime fp32 61/34/23, ONNX Runtime with int8 weights 132/73/44. ONNX fp32
keeps accuracy but is no faster than torch at the same precision; int8 weights are the only engine past torch bf16
(1.2x at 256 tokens) and lose up to 0.046 accuracy (the M4 sample's trained head at 5/class), past the 0.01 bound.
So `auto` stays torch, at the precision `auto` picks; ONNX and ONNX int8 remain choices a user makes knowingly.
"""

from __future__ import annotations

import torch


def auto_engine(device: torch.device) -> str:
    """torch, on a GPU and on a CPU: no engine bench/speed/encode.py measured was faster within the accuracy bound."""
    return "torch"
