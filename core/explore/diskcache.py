"""A content-keyed disk cache of data frames (Parquet), for exploration views.

Keys hash the data fingerprint and the view's options, so a changed file or option never hits a
stale entry. Parquet rather than pickle: the cache folder may be shared, and reading it runs no code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from core.paths import cache_parquet


def cache_key(name: str, **parts: object) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str)
    return f"{name}-{hashlib.sha1(blob.encode()).hexdigest()[:20]}"


def load_or_compute(folder: Path | None, key: str, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The cached frame under `key`, or `compute()` stored there; no folder means no caching, and a full disk none
    either (a cache is a saving, not a result: explore had ended in a traceback there)."""
    if folder is None:
        return compute()
    path = folder / f"{key}.parquet"
    if path.exists():
        try:
            return pd.read_parquet(path)
        except Exception:  # a foreign or damaged file: recompute and overwrite it
            path.unlink(missing_ok=True)
    frame = compute()
    cache_parquet(path, frame)
    return frame
