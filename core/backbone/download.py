"""The one place the studio reaches the network, and only when the user opted in (`--allow-download`, or
the Train page's checkbox): a hub model into the local Hugging Face cache, with byte progress.

The download runs in a child process with the hub's offline switches off, so the studio's own process
stays offline; the parent reports progress by watching the repo's blob folder grow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.backbone.locate import Backbone, BackboneError, cached_snapshot, hub_cache_dir, repo_folder

# Only what an encoder needs: configs, tokenizer files and one copy of the weights.
WANTED = (".json", ".txt", ".model", ".safetensors", ".bin")


def chosen_files(files: dict[str, int]) -> dict[str, int]:
    """The files worth fetching from a repo listing (name → bytes): safetensors weights when the repo has
    them, else the PyTorch .bin; never other frameworks' exports (which live in subfolders). Sentence-transformers'
    pooling config (1_Pooling/) comes along for SetFit."""
    keep = {n: s for n, s in files.items() if n.endswith(WANTED) and "/" not in n.removeprefix("1_Pooling/")}
    if any(n.endswith(".safetensors") for n in keep):
        keep = {n: s for n, s in keep.items() if not n.endswith(".bin")}
    return keep


def fetch(hub_id: str, revision: str | None) -> None:
    """In the child: list the repo, say how many bytes are coming, download into the cache."""
    from huggingface_hub import model_info, snapshot_download

    info = model_info(hub_id, revision=revision, files_metadata=True)
    files = chosen_files({s.rfilename: s.size or 0 for s in info.siblings or []})
    if "config.json" not in files:
        raise SystemExit(f"{hub_id} has no config.json: it is not a transformers model")
    print(json.dumps({"total": sum(files.values()), "files": len(files)}), flush=True)
    snapshot_download(hub_id, revision=revision, cache_dir=hub_cache_dir(), allow_patterns=list(files))


def blob_bytes(folder: Path) -> int:
    blobs = folder / "blobs"
    return sum(p.stat().st_size for p in blobs.iterdir() if p.is_file()) if blobs.is_dir() else 0


def download(hub_id: str, revision: str | None = None, on_progress: Callable[[int, int], None] | None = None,
             poll: float = 0.5) -> Backbone:
    """Download a hub model into the local cache (opted in by the caller) and return it resolved offline.
    Raises BackboneError with the hub's own message when the download fails."""
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_HUB_CACHE": str(hub_cache_dir()),
           "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    with tempfile.TemporaryFile("w+") as errors:
        child = subprocess.Popen([sys.executable, "-m", "core.backbone.download", hub_id, revision or ""],
                                 stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        header = json.loads(child.stdout.readline() or "{}")
        total, start = header.get("total", 0), blob_bytes(repo_folder(hub_id))
        while child.poll() is None:
            if on_progress is not None and total:
                on_progress(min(blob_bytes(repo_folder(hub_id)) - start, total), total)
            time.sleep(poll)
        errors.seek(0)
        lines = [line for line in errors.read().splitlines() if line.strip()]
    if child.returncode != 0:
        raise BackboneError(f"could not download {hub_id}: {lines[-1] if lines else 'the download failed'}")
    if on_progress is not None and total:
        on_progress(total, total)
    return cached_snapshot(hub_id, revision)


if __name__ == "__main__":
    fetch(sys.argv[1], sys.argv[2] or None)
