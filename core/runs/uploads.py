"""Uploaded files under the studio home (`uploads/<content hash>/<name>`, written by `core.data.store_upload`):
how much they hold, and removing the ones no run or workspace names, past an age. A run reads its files again
when it starts and when a page shows its test texts, so a file any run names stays, whatever its age."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from core.runs.registry import Registry

UPLOADS = "uploads"


@dataclass(frozen=True)
class Cleaned:
    removed: int  # uploads (content folders) removed
    freed: int  # bytes
    in_use: int  # uploads kept because a run, the workspace or a labeling session names them
    recent: int  # uploads kept because they are younger than the age asked for

    def words(self) -> str:
        return (f"removed {self.removed} upload(s), {self.freed / 2**20:.1f} MB; kept {self.in_use} that runs, the "
                f"workspace or labeling sessions name and {self.recent} newer than the age asked for")


def uploads_folder(registry: Registry) -> Path:
    return registry.home / UPLOADS


def stored_uploads(registry: Registry) -> tuple[int, int]:
    """(files, bytes) under the uploads folder."""
    files = [p for p in uploads_folder(registry).rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def clean_uploads(registry: Registry, older_than_days: float = 30.0, dry_run: bool = False,
                  named_elsewhere: tuple[str, ...] = ()) -> Cleaned:
    """Remove each upload older than `older_than_days` that no run (deleted ones too: they can come back, and
    unreadable rows are searched as text), no remembered workspace and nothing in `named_elsewhere` (the labeling
    sessions' settings, `core.label.session.named_files`) names."""
    folder = uploads_folder(registry)
    named = "\n".join([*registry.stored_texts(), *named_elsewhere])
    cutoff = time.time() - older_than_days * 86400
    removed = freed = in_use = recent = 0
    for upload in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        files = [p for p in upload.rglob("*") if p.is_file()]
        if any(str(p) in named for p in files) or upload.name in named:
            in_use += 1
        elif max((p.stat().st_mtime for p in files), default=upload.stat().st_mtime) > cutoff:
            recent += 1
        else:
            freed += sum(p.stat().st_size for p in files)
            removed += 1
            if not dry_run:
                shutil.rmtree(upload, ignore_errors=True)
    return Cleaned(removed, freed, in_use, recent)
