"""The frozen-encoder feature cache, for fast CPU experiments.

With the encoder frozen, a text's representation never changes, so it is computed once per
(backbone, data, max length, pooling, cleaning) and stored under the studio home; every later run
on the same data (any method, fraction or seed) trains heads on the cached matrix in seconds.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

from core.backbone import embed_texts, resolve_backbone


CACHE_FORMAT = "float32"  # caches written as float16 before are not read: their values differ from a fresh pass


def feature_key(backbone: str | None, fingerprint: str, max_len: int, pooling: str) -> str:
    """Keys on the backbone's identity (its config and weights' size and time), the data content
    (the fingerprint covers cleaning, which changes the texts), the encoding options and the format."""
    folder = resolve_backbone(backbone)
    weights = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin"))
    ident = (folder / "config.json").read_text() + "".join(f"{p.name}{p.stat().st_size}" for p in weights)
    blob = f"{ident}|{fingerprint}|{max_len}|{pooling}|{CACHE_FORMAT}"
    return hashlib.sha1(blob.encode()).hexdigest()[:20]


def cached_features(texts: dict[str, list[str]], backbone: str | None, fingerprint: str, max_len: int,
                    pooling: str, folder: Path, device: str = "auto", bf16: bool = False,
                    on_progress: Callable[[int, int], None] | None = None) -> dict[str, np.ndarray]:
    """Float32 features per split, from the cache or computed (all splits in one length-sorted pass)."""
    path = folder / f"{feature_key(backbone, fingerprint, max_len, pooling)}.safetensors"
    if path.exists():
        stored = load_file(str(path))
        if set(stored) == set(texts) and all(len(stored[k]) == len(v) for k, v in texts.items()):
            return stored
    names = list(texts)
    flat = [t for name in names for t in texts[name]]
    with torch.inference_mode():
        matrix = embed_texts(flat, backbone, max_len=max_len, pooling=pooling, device=device, bf16=bf16,
                             on_progress=on_progress)
    # float32 on disk, exactly what was computed: a run's result never depends on whether the cache was cold
    # or warm, and live predictions (which encode in float32) match the recorded ones
    stored, start = {}, 0
    for name in names:
        stored[name] = np.ascontiguousarray(matrix[start:start + len(texts[name])], dtype=np.float32)
        start += len(texts[name])
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    try:
        save_file(stored, str(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return stored
