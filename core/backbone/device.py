"""The device a run uses, and the precision its encoder runs at there."""

from __future__ import annotations

import torch

from core.errors import InputError

PRECISIONS = ("auto", "fp32", "bf16")


def pick_device(requested: str = "auto") -> torch.device:
    """`auto` takes CUDA when there is one; asking for CUDA without one is an error, not a silent CPU run."""
    if requested not in ("auto", "cpu", "cuda"):
        raise InputError(f"device must be auto, cpu or cuda, got {requested!r}")
    if requested == "cuda" and not torch.cuda.is_available():
        raise InputError("device cuda was asked for, but no CUDA GPU is visible")
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def describe_device() -> str:
    """'CPU (N threads)' or the GPU's name and memory, for the sidebar and the home page."""
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        return f"GPU: {props.name} ({props.total_memory / 2**30:.0f} GiB)"
    threads = torch.get_num_threads()
    return f"CPU ({threads} thread{'s' * (threads != 1)})"


def native_bf16(device: torch.device) -> bool:
    """Whether the hardware computes bf16 natively: a CUDA GPU that supports it, or a CPU with AVX512-BF16
    or AMX. Without it bf16 is emulated, and was measured 7× slower than fp32 for MiniLM on a 2-core CPU."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    checks = (getattr(torch.cpu, "_is_avx512_bf16_supported", None), getattr(torch.cpu, "_is_amx_tile_supported", None))
    return any(check is not None and check() for check in checks)


def pinned_precision(precision: str, device: torch.device) -> str:
    """What a precision means on this device: `auto` becomes the one it runs (a run stores that, not `auto`)."""
    return "bf16" if use_bf16(precision, device) else "fp32"


def use_bf16(precision: str, device: torch.device) -> bool:
    """`auto` is bf16 autocast where the hardware runs it natively and fp32 elsewhere."""
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision == "bf16" or precision == "auto" and native_bf16(device)
