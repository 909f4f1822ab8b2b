"""The frozen-encoder feature cache, per text, for fast CPU experiments.

With the encoder frozen, a text's vector never changes, so it is computed once per (backbone at its
revision, max length, pooling, precision) and stored under the studio home, keyed by the text itself. A run
encodes only the texts it needs that no earlier run encoded: a first frozen head encodes its labeled,
validation and test texts; a later GAN-BERT run adds only the unlabeled ones.

Layout: `features/<store key>/<shard>.safetensors`, each shard the hashes and float32 vectors of the texts
one encoding pass computed. Shards are written whole and renamed into place, so two runs encoding at once
never corrupt the store (a text both encoded is simply stored twice).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from core.backbone import Backbone
from core.backbone.locate import found_store
from core.paths import remove_stale_partials, replace_durably

if TYPE_CHECKING:
    from core.train.config import TrainConfig

STORE_FORMAT = "per-text float32 v2"  # per-split files of earlier versions are never read


def store_key(backbone: Backbone, max_len: int, pooling: str, bf16: bool, engine: str = "torch",
              identity: str | None = None) -> str:
    """What a vector depends on besides its text: the backbone's identity (a hub id's revision, a folder's
    files), the encoding options, the precision (bf16 vectors differ from fp32 ones), the engine (ONNX Runtime's,
    int8 above all, differ from torch's; torch's key is as it was before engines, so its stores stay) and the
    format."""
    precision = "fp32" if engine != "torch" else "bf16" if bf16 else "fp32"  # ONNX Runtime computes in fp32
    identity = identity or backbone.identity  # or one of its `past_identities`, as earlier studios keyed it
    blob = f"{identity}|{max_len}|{pooling}|{precision}|{STORE_FORMAT}"
    if engine != "torch":
        blob += f"|{engine}"
    return hashlib.sha1(blob.encode()).hexdigest()[:20]


def feature_store(home: Path, backbone: Backbone, max_len: int, pooling: str, bf16: bool, engine: str = "torch"
                  ) -> Path:
    """The folder of these encoding options' vectors under a studio home (or the store an earlier studio keyed
    without the tokenizer's files or modification times, used where it lies: `found_store`)."""
    return found_store(home / "features" / store_key(backbone, max_len, pooling, bf16, engine),
                       [home / "features" / store_key(backbone, max_len, pooling, bf16, engine, identity)
                        for identity in backbone.past_identities], backbone)


def both_store(config: TrainConfig, home: Path, bf16: bool, engine: str) -> Path | None:
    """The store of a causal LM's hidden states and token probabilities side by side, which holds a run's features
    when it reads either alone (`cached_features`' `wider`); None for a run that reads both."""
    if config.features == "both":
        return None
    return feature_store(home, config.resolved_backbone(home), config.max_len,
                         config.with_(features="both").resolved_pooling, bf16, engine)


def text_hashes(texts: list[str]) -> np.ndarray:
    return np.array([hashlib.sha1(t.encode("utf-8", "surrogatepass")).digest() for t in texts], dtype="S20")


def read_store(store: Path, wanted: np.ndarray) -> dict[bytes, np.ndarray]:
    """The stored vectors of the wanted hashes, whichever shards hold them."""
    found: dict[bytes, np.ndarray] = {}
    for shard in sorted(store.glob("*.safetensors")) if store.is_dir() else []:
        tensors = load_file(str(shard))
        hashes = tensors["hashes"].view("S20").ravel()
        for i in np.flatnonzero(np.isin(hashes, wanted)):
            found.setdefault(bytes(hashes[i]), tensors["vectors"][i])
    return found


def cached_share(store: Path, texts: list[str]) -> float:
    """The share of these distinct texts whose vectors the store holds, reading the shards' hashes alone (a
    shard's vectors run to hundreds of MB): what a grid still has to encode, for its estimate."""
    wanted = np.unique(text_hashes(texts))
    if not len(wanted):
        return 1.0
    stored = [stored_hashes(shard) for shard in sorted(store.glob("*.safetensors"))] if store.is_dir() else []
    return float(np.isin(wanted, np.concatenate(stored)).mean()) if stored else 0.0


def stored_hashes(shard: Path) -> np.ndarray:
    with safe_open(str(shard), framework="numpy") as f:
        return f.get_tensor("hashes").view("S20").ravel()


def write_shard(store: Path, hashes: np.ndarray, vectors: np.ndarray) -> None:
    store.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(store)
    for legacy in store.parent.glob("*.safetensors"):  # per-split files of earlier versions: never read again
        legacy.unlink(missing_ok=True)
    name = uuid.uuid4().hex
    tmp = store / f"{name}.partial"
    try:
        save_file({"hashes": np.ascontiguousarray(hashes).view(np.uint8).reshape(len(hashes), 20),
                   "vectors": np.ascontiguousarray(vectors, dtype=np.float32)}, str(tmp))
        replace_durably(tmp, store / f"{name}.safetensors")
    finally:
        tmp.unlink(missing_ok=True)


# Texts encoded between two writes to the store: a pass over a large file holds at most this many texts' vectors
# and tokens beyond what it keeps, and an interrupted pass keeps every chunk it finished
STREAM_TEXTS = 1024

Encode = Callable[[list[str], Callable[[int, int], None]], np.ndarray]


def cached_features(texts: dict[str, list[str]], store: Path, encode: Encode,
                    on_status: Callable[[str], None] = lambda message: None,
                    wider: tuple[Path, slice] | None = None,
                    on_progress: Callable[[int, int], None] = lambda done, total: None) -> dict[str, np.ndarray]:
    """Float32 features per split: the cached ones, and `encode` (length-sorted passes of `STREAM_TEXTS` texts,
    each stored as it ends) for the texts no run has encoded yet, with `on_progress` counting them. Each distinct
    text is encoded once. `wider` is a store whose vectors hold these features at `cols` (a causal LM's hidden
    states and token probabilities side by side hold each alone): texts it has are read from it, not encoded
    again."""
    hashes = {name: text_hashes(split) for name, split in texts.items()}
    distinct, first = np.unique(np.concatenate(list(hashes.values())) if hashes else np.zeros(0, "S20"),
                                return_index=True)
    found = read_store(store, distinct)
    if wider is not None and len(found) < len(distinct):
        wide_store, cols = wider
        absent = np.array([h for h in distinct if bytes(h) not in found], dtype="S20")
        found.update((h, v[cols]) for h, v in read_store(wide_store, absent).items())
    flat = [t for split in texts.values() for t in split]
    missing = np.array([bytes(h) not in found for h in distinct], dtype=bool)
    total = int(missing.sum())
    on_status(f"features: {len(distinct) - total} of {len(distinct)} texts cached, encoding {total}")
    todo, positions = distinct[missing], first[missing]
    if total:
        on_progress(0, total)
    for start in range(0, total, STREAM_TEXTS):
        chunk = slice(start, start + STREAM_TEXTS)
        vectors = encode([flat[i] for i in positions[chunk]],
                         lambda done, _, start=start: on_progress(start + done, total))
        write_shard(store, todo[chunk], vectors)
        found.update((bytes(h), v) for h, v in zip(todo[chunk], vectors))
    dim = len(next(iter(found.values()))) if found else 0
    return {name: np.stack([found[bytes(h)] for h in split]) if len(split) else np.zeros((0, dim), np.float32)
            for name, split in hashes.items()}
