"""The places a run can execute, by name: the one table of backends. The CLI's parser reads the names
without importing any backend, and the queue imports a backend when it has a run for it, so the local
path never loads the Ray one."""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.runs.backend import Backend

WHERE = {"local": "core.runs.local:LocalBackend", "ray": "core.runs.ray.backend:RayBackend"}
NAMES = tuple(WHERE)


@cache
def backend(name: str) -> Backend:
    module, cls = WHERE[name].split(":")
    return getattr(importlib.import_module(module), cls)()
