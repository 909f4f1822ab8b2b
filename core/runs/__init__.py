"""Runs: the SQLite registry, the run folder, the status lifecycle, the queue and its backends (local
processes here; Ray in `core.runs.ray`) with the code that executes a run, and time estimates. Reads
`core.train`."""

from core.lazy import exports

# name -> the module that defines it: imported on first use, so that the statuses and the backends' names
# (`core.runs.lifecycle`, `core.runs.backends`) read without torch
_EXPORTS = {
    "grid_seconds": "core.runs.estimate",
    "outside_work": "core.runs.estimate",
    "roughly": "core.runs.estimate",
    "execute_run": "core.runs.execute",
    "failed_on_error": "core.runs.execute",
    "logging_into": "core.runs.execute",
    "as_runs_read_it": "core.runs.known_files",
    "RunFolder": "core.runs.folder",
    "ACTIVE": "core.runs.lifecycle",
    "FINISHED": "core.runs.lifecycle",
    "MOVES": "core.runs.lifecycle",
    "IllegalMove": "core.runs.lifecycle",
    "Status": "core.runs.lifecycle",
    "concurrency": "core.runs.local",
    "set_concurrency": "core.runs.local",
    "adapting": "core.runs.queue",
    "cancel": "core.runs.queue",
    "cancel_all": "core.runs.queue",
    "enqueue": "core.runs.queue",
    "not_yet_run": "core.runs.queue",
    "pump": "core.runs.queue",
    "reconcile": "core.runs.queue",
    "RAY_HINT": "core.runs.ray.backend",
    "ray_available": "core.runs.ray.backend",
    "ray_resources": "core.runs.ray.backend",
    "use_address": "core.runs.ray.backend",
    "use_storage": "core.runs.ray.backend",
    "Registry": "core.runs.registry",
    "Run": "core.runs.run",
    "RunError": "core.runs.run",
    "UnreadableRun": "core.runs.run",
    "check_run_id": "core.runs.run",
    "RegistryError": "core.runs.registry_store",
    "Cleaned": "core.runs.uploads",
    "clean_uploads": "core.runs.uploads",
    "stored_uploads": "core.runs.uploads",
    "Workspace": "core.runs.workspace",
    "recall": "core.runs.workspace",
    "recall_form": "core.runs.workspace",
    "remember": "core.runs.workspace",
    "remember_form": "core.runs.workspace",
}


__getattr__ = exports("core.runs", _EXPORTS)

__all__ = list(_EXPORTS)
