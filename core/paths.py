"""The studio home (runtime state) and atomic file writes."""

from __future__ import annotations

import errno
import io
import os
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def home_from_environment(default: Path = REPO_ROOT / "cache") -> Path:
    """`default` (`cache/` beside the code) unless `STUDIO_HOME` says otherwise, created if missing. Read by the entry
    points alone (the CLI, the app, a worker, a bench), which pass the home down: nothing below them reads the
    environment for it."""
    home = Path(os.environ.get("STUDIO_HOME") or default)
    home.mkdir(parents=True, exist_ok=True)
    return home


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, rename, then fsync the folder: readers never see half
    a file, and a crash after the call cannot lose the rename (it lives in the folder's entry, not the file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # a file like any other the user writes, not mkstemp's private 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_folder(path.parent)


def replace_durably(source: Path, target: Path) -> None:
    """`os.replace`, then the folder synced (`sync_folder`)."""
    os.replace(source, target)
    sync_folder(Path(target).parent)


def sync_folder(folder: Path) -> None:
    """fsync a folder, so the renames in it survive a crash; a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_write_leftovers(folder: Path) -> None:
    """Delete the temporary files that a process killed mid-write left in `folder` (the `.name.*.tmp` of
    `atomic_write_bytes`, a checkpoint's `.name.partial`); the files they were to replace are still whole."""
    for p in list(folder.rglob(".*")):  # listed first: nothing is deleted from under the walk
        if p.is_file() and p.suffix in (".tmp", ".partial"):
            p.unlink(missing_ok=True)


STALE_PARTIAL = 600.0  # s: a store's shard is written in well under a minute; a partial this old was killed mid-write


def remove_stale_partials(folder: Path, older_than: float = STALE_PARTIAL) -> None:
    """Delete the half-written shards (`*.partial`) a process killed mid-write left in a store's folder, where other
    processes may be writing theirs now: only those untouched for `older_than` seconds."""
    now = time.time()
    for p in list(folder.glob("*.partial")) + list(folder.glob(".*.partial")) if folder.is_dir() else []:
        try:
            if p.is_file() and now - p.stat().st_mtime > older_than:
                p.unlink(missing_ok=True)
        except OSError:
            continue


def atomic_write_parquet(path: Path, frame) -> None:
    """A data frame as Parquet (our caches and predictions: data only, never pickle), atomically."""
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


def cache_parquet(path: Path, frame) -> None:
    """A cache's frame written atomically, or not at all on a full disk: a cache saves time and holds no result, so
    a full studio home (explore, the data check, the built-in corpus) computes on instead of ending in a traceback."""
    try:
        atomic_write_parquet(path, frame)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
