"""Runs: the SQLite registry, the run folder, the status lifecycle, the queue and its backends (local
processes, Ray) with the code that executes a run, and time estimates. Reads `core.train`."""

from core.runs.estimate import grid_seconds, roughly
from core.runs.execute import execute_run
from core.runs.folder import RunFolder
from core.runs.lifecycle import ACTIVE, FINISHED, MOVES, IllegalMove, Status
from core.runs.local import concurrency, set_concurrency
from core.runs.queue import BACKENDS, cancel, cancel_all, enqueue, pump, reconcile
from core.runs.ray_backend import RAY_HINT, ray_available, ray_resources, use_address, use_storage
from core.runs.registry import Registry, Run, RunError, check_run_id
from core.runs.workspace import Workspace, recall, remember

__all__ = [
    "grid_seconds", "roughly", "execute_run", "RunFolder", "ACTIVE", "FINISHED", "MOVES", "IllegalMove", "Status",
    "concurrency", "set_concurrency", "BACKENDS", "cancel", "cancel_all", "enqueue", "pump", "reconcile", "RAY_HINT",
    "ray_available", "ray_resources", "use_address", "use_storage", "Registry", "Run", "RunError", "check_run_id",
    "Workspace", "recall", "remember",
]
