"""An exported model's backbone held once on disk: a local artifact store's copies of the same file, hard-linked to
one copy kept by content. Every exported model of a run reading a backbone carried a whole copy of its folder (three
SmolLM2 models took 1.9 GB); each model still holds every file it needs, so it loads anywhere as before."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

SHARED = ".shared-files"  # beside the experiments' folders in the artifact root: one link per content


def digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def share(folder: Path, root: Path) -> int:
    """Each file under `folder` replaced by a hard link to the one copy of its content under `root / SHARED` (made
    from it when none is there yet); then the copies no model links to any more are deleted. The bytes saved."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no artifact folder {folder} to share")
    store = root / SHARED
    store.mkdir(parents=True, exist_ok=True)
    saved = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        kept = store / digest(path)
        if not kept.exists():
            os.link(path, kept)
            continue
        if os.path.samefile(kept, path):
            continue
        tmp = path.with_name(f".{path.name}.link")
        os.link(kept, tmp)
        os.replace(tmp, path)  # the copy goes, the content stays: the same file, once
        saved += kept.stat().st_size
    for kept in store.iterdir():
        if kept.is_file() and kept.stat().st_nlink == 1:  # no model holds it any more
            kept.unlink(missing_ok=True)
    return saved


def local_folder(uri: str) -> Path | None:
    """A `file:` URI's folder; None for any other store (nothing shared there)."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme in ("file", "") and parsed.path else None
