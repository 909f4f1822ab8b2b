"""The data files this studio's runs already read, found by their bytes: a run's config names its files by path,
so one file uploaded (stored under the studio home) and loaded by path was two datasets, whose runs never
pooled in Compare and whose grid ran again from scratch. A dataset being loaded takes the path the runs used
for a file with the same bytes, and says so."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from core.data import DataSpec
from core.runs.registry import Registry

CHUNK = 1 << 20


def digest(registry: Registry, path: str) -> str | None:
    """The file's SHA-1, kept in the registry's settings beside its size and modification time, so a large
    file is read once until it changes; None for a folder or a missing file."""
    file = Path(path)
    if not file.is_file():
        return None
    stat = file.stat()
    stamp, key = f"{stat.st_size}:{stat.st_mtime_ns}", f"digest:{file}"
    kept = registry.setting(key)
    if kept and kept.rsplit(":", 1)[0] == stamp:
        return kept.rsplit(":", 1)[1]
    sha = hashlib.sha1()
    with file.open("rb") as f:
        while chunk := f.read(CHUNK):
            sha.update(chunk)
    registry.set_setting(key, f"{stamp}:{sha.hexdigest()}")
    return sha.hexdigest()


def as_runs_read_it(registry: Registry, spec: DataSpec) -> tuple[DataSpec, list[str]]:
    """`spec` with each file that has the same bytes as one a run here read named by that run's path, and a
    line for each such file. Runs deleted from the pages count too: Undo brings them back."""
    paths = spec.paths
    if not paths:
        return spec, []
    used = dict.fromkeys(p for run in registry.list(include_deleted=True) for p in run.config.data.paths.values())
    known: dict[str, str] = {}
    for path in used:  # the oldest run's path first, when two paths hold the same bytes
        if d := digest(registry, path):
            known.setdefault(d, path)
    swapped, notes = {}, []
    for role, path in paths.items():
        same = known.get(digest(registry, path) or "")
        if same and Path(same).resolve() != Path(path).resolve():
            swapped[role] = same
            notes.append(f"{Path(path).name} has the same bytes as {same}, which runs here read: it is read from "
                         "there, so those runs count for this dataset.")
    return replace(spec, **swapped), notes
