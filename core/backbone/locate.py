"""Where a backbone's files are: a backbone the studio names (`core.backbone.packaged`: the default MiniLM, read
from its package, or SmolLM2, converted under the studio home), a local folder, or a hub id in the local Hugging Face
cache, pinned to the exact snapshot it resolved to. Nothing here touches the network or imports torch."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.backbone.families import ENCODER_FAMILIES
from core.backbone.packaged import (
    CONVERTED_DIR,
    DEFAULT_BACKBONE,
    DONE,
    PACKAGED,
    Stage,
    converted_folder,
    converts,
    is_converted,
    named,
    package_file,
)
from core.errors import InputError

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
DEFAULT_TITLE = PACKAGED[DEFAULT_BACKBONE].title  # the default backbone in words: "MiniLM (bundled)"
ADAPTED_DIR = "backbones"  # under the studio home: backbones adapted to a dataset's texts (`core.train.adaptation`)
ADAPTED_RECORD = "adapted.json"


class BackboneError(InputError):
    """The backbone is missing, not cached, or not an encoder model folder."""


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment at call time (as `huggingface_hub` reads it
    at import): HF_HUB_CACHE, then HF_HOME/hub, then XDG_CACHE_HOME/huggingface/hub, then ~/.cache."""
    if os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(os.environ.get("HF_HUB_CACHE") or os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "huggingface" / "hub"

# A tokenizer's files, by the names transformers reads them from
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.txt", "vocab.json", "merges.txt", "*.model", "*.tiktoken")


@dataclass(frozen=True)
class Backbone:
    """A resolved backbone: the folder its files are read from, and for a hub id the id and the snapshot's
    commit hash, so a run and its reload read the same weights."""

    folder: Path
    hub_id: str | None = None
    revision: str | None = None
    packaged: str | None = None  # a name in `packaged.PACKAGED`: its package's folder, or a GGUF converted into it

    @property
    def name(self) -> str:
        if self.packaged:
            return PACKAGED[self.packaged].title
        if (record := self.adapted) is not None:
            return adapted_name(record)
        return self.hub_id or str(self.folder)

    @property
    def adapted(self) -> dict | None:
        """The record of a backbone the studio adapted to a dataset's texts (what it was made from, on which
        texts, at what cost); None for any other."""
        path = self.folder / ADAPTED_RECORD
        return json.loads(path.read_text()) if not self.hub_id and path.is_file() else None

    @property
    def identity(self) -> str:
        """What the feature cache, the ONNX export and an adaptation key on: the hub id at its revision (a snapshot
        never changes), or a local folder's config, weight and tokenizer files, each by name, size and modification
        time, so changed weights never reuse old features (4 KB of model.safetensors overwritten in place kept the
        size), nor does a changed tokenizer beside the same weights; an adapted backbone's record too, as two
        adaptations of one base have weights of the same sizes."""
        return self._identity(with_times=True, with_tokenizer=True)

    @property
    def past_identities(self) -> tuple[str, ...]:
        """The identity as earlier studios keyed it, newest first: without the tokenizer's files, then without
        modification times. What `found_store` finds their stores by."""
        return self._identity(with_times=True, with_tokenizer=False), self._identity(with_times=False,
                                                                                     with_tokenizer=False)

    def _identity(self, with_times: bool, with_tokenizer: bool) -> str:
        if self.hub_id:
            return f"hub:{self.hub_id}@{self.revision}"
        files = self.weight_files() + (self.tokenizer_files() if with_tokenizer else [])
        content = (self.folder / "config.json").read_text() + "".join(
            f"{p.name}{p.stat().st_size}" + (f"@{p.stat().st_mtime_ns}" if with_times else "") for p in files)
        if (self.folder / ADAPTED_RECORD).is_file():
            content += (self.folder / ADAPTED_RECORD).read_text()
        return "folder:" + hashlib.sha1(content.encode()).hexdigest()

    def weight_files(self) -> list[Path]:
        return sorted(self.folder.glob("*.safetensors")) + sorted(self.folder.glob("*.bin"))

    def tokenizer_files(self) -> list[Path]:
        """The files a tokenizer is read from (a fast tokenizer's JSON, a vocabulary, merges, a SentencePiece
        model, their configs): text that tokenizes differently encodes differently."""
        return sorted(p for pattern in TOKENIZER_FILES for p in self.folder.glob(pattern) if p.is_file())

    def changed_after(self, when: float) -> bool:
        """Whether the config, a weight file or a tokenizer file was modified after `when` (seconds since the
        epoch)."""
        return any(p.stat().st_mtime > when for p in [self.folder / "config.json", *self.weight_files(),
                                                      *self.tokenizer_files()] if p.exists())

    def describe(self) -> dict:
        return {"name": self.name, "folder": str(self.folder), "hub_id": self.hub_id, "revision": self.revision}


def found_store(path: Path, past: Sequence[Path], backbone: Backbone) -> Path:
    """Where a store keyed by `backbone.identity` is: `path`, or where it is missing, the `past` one (the same store
    keyed by an earlier studio's identity, `past_identities`, newest first) that exists and is newer than the
    backbone's files, so an upgrade re-encodes nothing. A lookup: nothing is moved (the store had been renamed to
    `path` here, by the time estimate among others). A store older than the files it was made from is passed over:
    it may hold the old weights' (or the old tokenizer's) vectors."""
    if path.exists():
        return path
    for legacy in (p for p in past if p != path and p.exists()):
        try:
            return path if backbone.changed_after(legacy.stat().st_mtime) else legacy
        except OSError:  # gone between the two looks
            continue
    return path


def download_hint(hub_id: str, revision: str | None = None) -> str:
    rev = f" --revision {revision}" if revision else ""
    return (f"`huggingface-cli download {hub_id}{rev}` on a machine with internet (then copy the cache), or let "
            f"the studio download it: --allow-download in the CLI, or 'Download if missing' on the Train page")


def resolve_backbone(spec: str | Path | None, revision: str | None = None, *, home: Path | None) -> Backbone:
    """A backbone the studio names (None or empty: the default, MiniLM) in its package's folder, or for a GGUF one
    under the studio `home` (None where the spec cannot be such a one); a local model folder; or a hub id found in the
    local Hugging Face cache. A lookup: it makes nothing, and never reaches the network; a hub id that is not cached
    is an error that says how to get it. A GGUF backbone's folder is made by `prepare_backbone`, before anything
    reads its files."""
    if (name := named(spec)) is not None:
        if not converts(name):
            return Backbone(package_file(name), packaged=name)
        if home is None:
            raise ValueError(f"{name} is converted under a studio home: resolve it with one")
        if not is_converted(name, home):
            package_file(name)  # installed, or an error that says how to install it
        return Backbone(home / CONVERTED_DIR / name, packaged=name)
    text = str(spec).strip()
    folder = Path(text).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").exists():
            raise BackboneError(f"{folder} has no config.json; it is not a Hugging Face model folder")
        return Backbone(folder)
    if not is_hub_id(text):
        raise BackboneError(f"backbone folder not found: {folder} (give a local Hugging Face model folder, or a "
                            "hub id from the local Hugging Face cache)")
    return cached_snapshot(text, revision)


def prepare_backbone(spec: str | Path | None, revision: str | None = None, *, home: Path,
                     on_stage: Stage | None = None) -> Backbone:
    """`resolve_backbone`, with a packaged backbone converted from its GGUF file under `home` first where it is not
    yet (20 to 50 s, each stage said to `on_stage`): the one step that makes a backbone's files, taken by whoever
    is about to read them (a run as it starts, a reload, the CLI, the Train page)."""
    if converts(spec):
        converted_folder(named(spec), home, on_stage)
    return resolve_backbone(spec, revision, home=home)


def check_ready(backbone: Backbone) -> Backbone:
    """A backbone whose files can be read: a packaged one not converted yet is refused in words, where a loader
    would have failed on a missing file."""
    if backbone.packaged and converts(backbone.packaged) and not (backbone.folder / DONE).is_file():
        raise BackboneError(f"{backbone.name} is not converted into {backbone.folder} yet: it is made when a run, the "
                            "CLI or the Train page first prepares it (core.backbone.prepare_backbone)")
    return backbone


def is_hub_id(spec: str | Path | None) -> bool:
    """A name like `bert-base-cased` or `org/name` that is not a local folder."""
    text = str(spec or "").strip()
    return (bool(text) and not Path(text).expanduser().is_dir() and not text.startswith((".", "/", "~"))
            and HUB_ID.match(text) is not None)


def repo_folder(hub_id: str) -> Path:
    return hub_cache_dir() / ("models--" + hub_id.replace("/", "--"))


def cached_snapshot(hub_id: str, revision: str | None = None) -> Backbone:
    """A hub id's snapshot in the local cache: `revision` when given (a commit hash or a ref), else the
    commit `refs/main` points at."""
    repo = repo_folder(hub_id)
    ref = revision or "main"
    commit = ref
    if (repo / "refs" / ref).is_file():
        commit = (repo / "refs" / ref).read_text().strip()
    snapshot = repo / "snapshots" / commit
    if not (snapshot / "config.json").is_file():
        if revision and repo.is_dir():
            raise BackboneError(f"{hub_id} at revision {revision} is no longer in the Hugging Face cache "
                                f"({hub_cache_dir()}); the run was trained on those weights. Get them back with "
                                + download_hint(hub_id, revision))
        raise BackboneError(f"{hub_id} is not in the local Hugging Face cache ({hub_cache_dir()}), and the studio "
                            f"never downloads unasked. Get it with " + download_hint(hub_id))
    return Backbone(snapshot, hub_id=hub_id, revision=commit)


def adapted_name(record: dict) -> str:
    """An adapted backbone in words: 'MiniLM (bundled) adapted to l2r (train texts, 11,421; 1 epoch at 0.0003)'; the
    settings too, as two adaptations to the same texts read as one name in a sweep's tables."""
    texts = record.get("texts", {})
    read = " and ".join(s for s in ("train", "val", "test") if texts.get(s))
    how = f"; {record['epochs']} epoch{'s' * (record['epochs'] != 1)} at {record['lr']:g}" if "epochs" in record else ""
    return f"{record['base']['name']} adapted to {record['dataset']} ({read} texts, {sum(texts.values()):,}{how})"


def backbone_label(spec: str | None) -> str:
    """A run's backbone in words: one the studio names by its title, an adapted backbone by what it was adapted from
    and on (`adapted_name`), any other as it was given."""
    if (name := named(spec)) is not None:
        return PACKAGED[name].title
    record = Path(spec) / ADAPTED_RECORD
    try:
        return adapted_name(json.loads(record.read_text())) if record.is_file() else str(spec)
    except (OSError, ValueError, KeyError):
        return str(spec)


def adapted_backbones(home: Path) -> list[tuple[Path, dict]]:
    """The backbones adapted under a studio home, newest first, each folder with its record."""
    found = []
    for record in (home / ADAPTED_DIR).glob(f"*/{ADAPTED_RECORD}"):
        try:
            found.append((record.parent, json.loads(record.read_text())))
        except (OSError, ValueError):
            continue  # a folder still being written, or not the studio's
    return sorted(found, key=lambda f: f[1].get("created", ""), reverse=True)


@dataclass(frozen=True)
class CachedModel:
    """An encoder model found in the local hub cache, for the model picker."""

    hub_id: str
    revision: str
    model_type: str
    size_bytes: int

    @property
    def label(self) -> str:
        size = float(self.size_bytes)
        for unit in ("B", "kB", "MB", "GB"):
            if size < 1024 or unit == "GB":
                break
            size /= 1024
        return f"{self.hub_id} ({self.model_type}, {size:,.0f} {unit})"


def cached_models() -> list[CachedModel]:
    """Every encoder model in the local hub cache (huggingface_hub's cache scan), by id; a model with no
    `main` ref shows its newest snapshot."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        info = scan_cache_dir(hub_cache_dir())
    except CacheNotFound:
        return []
    found = []
    for repo in info.repos:
        if repo.repo_type != "model" or not repo.revisions:
            continue
        revision = next((r for r in repo.revisions if "main" in r.refs),
                        max(repo.revisions, key=lambda r: r.last_modified))
        config = Path(revision.snapshot_path) / "config.json"
        try:
            model_type = json.loads(config.read_text()).get("model_type", "")
        except (OSError, ValueError):
            continue
        if model_type in ENCODER_FAMILIES:
            found.append(CachedModel(repo.repo_id, revision.commit_hash, model_type, revision.size_on_disk))
    return sorted(found, key=lambda m: m.hub_id.lower())
