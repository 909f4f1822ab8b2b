"""The store of token states at a backbone's boundary, for runs that train only its top K layers.

The layers below the boundary are frozen, so a text's states there never change: they are computed once and kept
under the studio home, keyed by what they depend on (the backbone's identity, the boundary, the precision they were
computed at) and, per text, by its token ids (which hold its cleaning and truncation). Every step, epoch, seed and
method of a top-K run reads them back, and so does its test split's evaluation.

Layout: `states/<key>/store.json` says what the store holds; `states/<key>/<shard>.safetensors` holds the hashes,
offsets and bf16 states (tokens × width) of the texts one pass computed, written whole and renamed into place, so
two runs at once never corrupt it. All stores together are held under a bound (`STUDIO_STATES_GIB`, 16 GiB by
default): past it the shards read least recently are deleted, and a run that needed one computes its texts again.
A cache is a saving, never a result: a damaged shard is skipped, and a full disk computes on without storing.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from core.backbone import Backbone
from core.paths import remove_stale_partials, replace_durably

STATES_DIR = "states"  # under the studio home
STATES_FORMAT = "token states bf16 v1"
DESCRIPTION = "store.json"
LIMIT_ENV = "STUDIO_STATES_GIB"
DEFAULT_LIMIT_GIB = 16.0
# Bytes of states held in memory before they are written as one shard: a pass over a large split keeps at most this
# much beyond what it is computing, and a run killed mid-pass keeps every shard it finished
SHARD_BYTES = 64 * 2**20
MAX_DESCRIPTION = 64 * 2**10  # a store's description is a few hundred bytes; a larger file is not one


def store_limit() -> int:
    """The bound on all stores together, in bytes: `STUDIO_STATES_GIB` (a number of GiB), else 16 GiB."""
    raw = os.environ.get(LIMIT_ENV, "")
    try:
        gib = float(raw) if raw else DEFAULT_LIMIT_GIB
    except ValueError:
        gib = DEFAULT_LIMIT_GIB
    return int(max(gib, 0.0) * 2**30) if math.isfinite(gib) else int(DEFAULT_LIMIT_GIB * 2**30)


def states_key(backbone: Backbone, boundary: int, precision: str) -> str:
    blob = f"{backbone.identity}|{boundary}|{precision}|{STATES_FORMAT}"
    return hashlib.sha1(blob.encode()).hexdigest()[:20]


def ids_hashes(ids: list[list[int]]) -> list[bytes]:
    """One key per text: its token ids as the run truncated them."""
    return [hashlib.sha1(np.asarray(row, dtype=np.int64).tobytes()).digest() for row in ids]


@dataclass(frozen=True)
class Entry:
    shard: Path
    start: int  # the text's first row in the shard's states
    end: int


class StateStore:
    """One store's texts, indexed once when opened (each shard's hashes and offsets, a few KB), with the states read
    text by text from the shards' memory maps."""

    def __init__(self, folder: Path, description: dict, limit: int | None = None):
        self.folder, self.description = folder, description
        self.limit = store_limit() if limit is None else limit
        self.index: dict[bytes, Entry] = {}
        self.writable = True  # off after a full disk: the run computes on without storing
        for shard in sorted(folder.glob("*.safetensors")) if folder.is_dir() else []:
            self.index_shard(shard)

    @classmethod
    def open(cls, home: Path, backbone: Backbone, boundary: int, precision: str, width: int) -> StateStore:
        key = states_key(backbone, boundary, precision)
        return cls(home / STATES_DIR / key, {"backbone": backbone.name, "identity": backbone.identity,
                                             "boundary": boundary, "precision": precision, "width": width,
                                             "format": STATES_FORMAT})

    def index_shard(self, shard: Path) -> None:
        try:
            with safe_open(str(shard), framework="pt") as f:
                hashes = f.get_tensor("hashes").numpy()
                offsets = f.get_tensor("offsets").tolist()
        except Exception:  # a foreign or damaged file is no part of the store: its texts are computed again
            return
        for i, h in enumerate(hashes):
            self.index.setdefault(bytes(h), Entry(shard, offsets[i], offsets[i + 1]))

    def __contains__(self, key: bytes) -> bool:
        return key in self.index

    def read(self, keys: list[bytes]) -> dict[bytes, torch.Tensor]:
        """The stored states of these keys, each shard opened once; a key whose shard is gone (cleared, or held
        past the bound) is left out, and out of the index."""
        found: dict[bytes, torch.Tensor] = {}
        by_shard: dict[Path, list[bytes]] = {}
        for key in keys:
            if key in self.index:
                by_shard.setdefault(self.index[key].shard, []).append(key)
        for shard, wanted in by_shard.items():
            try:
                with safe_open(str(shard), framework="pt") as f:
                    states = f.get_slice("states")
                    for key in wanted:
                        entry = self.index[key]
                        found[key] = states[entry.start:entry.end]
                os.utime(shard)  # read recently: the bound deletes the shards read least recently first
            except Exception:
                for key in wanted:
                    self.index.pop(key, None)
        return found

    def write(self, keys: list[bytes], states: list[torch.Tensor]) -> None:
        """These texts' states as one shard, then the bound held; on a full disk, nothing (and nothing after)."""
        if not keys or not self.writable:
            return
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in states])]).astype(np.int64)
        tensors = {"hashes": torch.from_numpy(np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 20)
                                              .copy()),
                   "offsets": torch.from_numpy(offsets), "states": torch.cat(states).to(torch.bfloat16).contiguous()}
        name = uuid.uuid4().hex
        tmp = self.folder / f".{name}.partial"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            remove_stale_partials(self.folder)
            describe = self.folder / DESCRIPTION
            if not describe.is_file():
                describe.write_text(json.dumps(self.description))
            save_file(tensors, str(tmp), metadata={"format": STATES_FORMAT})
            shard = self.folder / f"{name}.safetensors"
            replace_durably(tmp, shard)
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            self.writable = False
            return
        finally:
            tmp.unlink(missing_ok=True)
        for i, key in enumerate(keys):
            self.index[key] = Entry(shard, int(offsets[i]), int(offsets[i + 1]))
        hold_bound(self.folder.parent, self.limit, keep=shard)


def shards(root: Path) -> Iterator[Path]:
    """Every shard under the states root (each store's folder, one level down)."""
    if root.is_dir():
        for folder in root.iterdir():
            if folder.is_dir() and not folder.is_symlink():
                yield from (p for p in folder.glob("*.safetensors") if p.is_file() and not p.is_symlink())


def hold_bound(root: Path, limit: int, keep: Path | None = None) -> int:
    """Delete the shards read least recently until all stores together hold at most `limit` bytes (never `keep`,
    the shard just written); the bytes deleted."""
    found = []
    for shard in shards(root):
        try:
            stat = shard.stat()
        except OSError:
            continue
        found.append((stat.st_mtime, stat.st_size, shard))
    total, freed = sum(size for _, size, _ in found), 0
    for _, size, shard in sorted(found):
        if total - freed <= limit:
            break
        if shard != keep:
            shard.unlink(missing_ok=True)
            freed += size
    return freed


@dataclass(frozen=True)
class Summary:
    """What one store holds, as the CLI and the Train page say it."""

    backbone: str
    boundary: int
    precision: str
    texts: int
    bytes: int


def summaries(home: Path) -> list[Summary]:
    """Each store under the home with its texts and size, read from the shards' headers (no states read)."""
    out = []
    root = home / STATES_DIR
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []:
        about = read_description(folder / DESCRIPTION)
        texts, size = 0, 0
        for shard in folder.glob("*.safetensors"):
            try:
                size += shard.stat().st_size
                with safe_open(str(shard), framework="pt") as f:
                    texts += f.get_slice("hashes").get_shape()[0]
            except Exception:
                continue
        boundary = about.get("boundary")
        out.append(Summary(" ".join(str(about.get("backbone", "an unknown backbone")).split())[:200],
                           boundary if isinstance(boundary, int) else 0,
                           " ".join(str(about.get("precision", "?")).split())[:20], texts, size))
    return out


def read_description(path: Path) -> dict:
    """A store's `store.json`, or {} where it is missing, too large or not what it should be (it is untrusted)."""
    try:
        if path.stat().st_size > MAX_DESCRIPTION:
            return {}
        about = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return about if isinstance(about, dict) else {}


def clear(home: Path) -> int:
    """Delete every store under the home; the bytes freed. A run reading one computes its texts again."""
    root = home / STATES_DIR
    freed = sum(s.stat().st_size for s in shards(root))
    if root.is_dir() and not root.is_symlink():
        shutil.rmtree(root, ignore_errors=True)
    elif root.is_symlink():
        root.unlink()
    return freed


def size_words(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
