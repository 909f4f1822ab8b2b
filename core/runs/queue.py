"""Background runs: the queue over the backends (local processes, Ray), cancel, and dead-process detection.

There is no daemon. Every look at the runs (`pump`) reconciles dead processes and lets each backend take
on its queued runs; a finishing worker pumps too, so the queue moves on with nobody watching.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from core.runs.backends import NAMES, backend, end_if_gone
from core.runs.lifecycle import ACTIVE, Status
from core.runs.registry import Registry, RunError
from core.train import TrainConfig
from core.train.adaptation import AdaptConfig

CONCURRENCY = "max_concurrent"  # the registry's setting of the local runs at once (`local.concurrency`)


def stored_concurrency(registry: Registry) -> int | None:
    """The local runs at once the registry holds, or None where it holds none or no whole number of at least 1."""
    raw = registry.setting(CONCURRENCY)
    return int(raw) if raw is not None and re.fullmatch(r"[0-9]{1,6}", raw.strip()) and int(raw) >= 1 else None


def concurrency_problem(registry: Registry) -> str | None:
    """What is wrong with the stored concurrency, in one line, or None: a registry edited by hand is not trusted."""
    raw = registry.setting(CONCURRENCY)
    if raw is None or stored_concurrency(registry) is not None:
        return None
    return (f"the registry's {CONCURRENCY} setting is {raw[:40]!r}, not a whole number of at least 1, so the default "
            "is used (one run at once on a CPU, one per GPU); `python -m core sweep --concurrency N` sets it")


def reconcile(registry: Registry) -> list[str]:
    """Mark runs whose process is gone as interrupted (their folders swept of half-written files); returns
    their ids. Cheap: call it on every look."""
    gone = []
    for run in registry.list(include_deleted=True, statuses=(Status.STARTING, Status.RUNNING), kind=None):
        if end_if_gone(registry, run, backend(run.backend)):
            gone.append(run.id)
    return gone


def pump(registry: Registry) -> list[str]:
    """Reconcile dead runs, then let each backend with queued runs take them on (oldest first)."""
    reconcile(registry)
    queued = registry.list(statuses=(Status.QUEUED,), kind=None)
    return [run_id for name in dict.fromkeys(r.backend for r in queued)
            for run_id in backend(name).submit(registry, [r for r in queued if r.backend == name])]


def enqueue(registry: Registry, configs: list[TrainConfig | AdaptConfig], where: str = "local",
            resources: dict | None = None, estimates: Mapping[str, float] | None = None) -> list[str]:
    """Queue runs on a backend (by name) and start what can start; returns their ids at once. `estimates`: each
    run's seconds by its config's JSON (`Estimate.each`), its time left until a run like it has ended here."""
    if where not in NAMES:
        raise RunError(f"backend must be one of {', '.join(NAMES)}, got {where!r}")
    if where != "local" and any(isinstance(c, AdaptConfig) for c in configs):
        raise RunError("an adaptation runs on this machine's local backend; Ray runs training runs only")
    run_ids = [registry.create(c, where, resources, (estimates or {}).get(c.to_json())) for c in configs]
    pump(registry)
    return run_ids


def not_yet_run(registry: Registry, configs: list[TrainConfig | AdaptConfig]) -> list[TrainConfig | AdaptConfig]:
    """The configs with no run of the same settings and seed done or under way here: a grid launched again
    queues what is missing (a cancelled or failed run, a new seed), never a copy of a finished run, which is
    the same draw and not another seed. The second click of a double click finds its grid queued."""
    have = {same(r.config) for r in registry.list(kind=None) if r.status == Status.DONE or r.status in ACTIVE}
    return [c for c in configs if same(c) not in have]


def adapting(registry: Registry, config: AdaptConfig) -> list:
    """The queued or running jobs that make the backbone `config` would make (its folder), oldest first."""
    return [j for j in registry.list(kind="adapt", statuses=ACTIVE) if j.config.folder_name == config.folder_name]


def same(config: TrainConfig | AdaptConfig) -> str:
    """What makes two jobs one: a run's whole config; an adaptation's backbone folder, named by its base, settings
    and texts, however its data was named (the Train page names a corpus by its folder, the CLI by its file)."""
    return f"adapt:{config.folder_name}" if isinstance(config, AdaptConfig) else config.to_json()


def cancel(registry: Registry, run_id: str, grace: float = 15.0) -> str:
    """Queued: cancelled at once. Running: the backend stops it (asking first, forcing after `grace`
    seconds). Returns the final status."""
    run = registry.get(run_id)
    if run.status not in ACTIVE:
        raise RunError(f"run {run_id} is already {run.status}")
    return cancel_all(registry, [run_id], grace)[run_id]


def cancel_all(registry: Registry, run_ids: list[str], grace: float = 15.0) -> dict[str, str]:
    """Cancel a selection as one: every cancel is requested before any run is stopped, and the queue is pumped
    only after, so a queued run of the selection never starts in a slot that another one freed. Runs that
    have already ended are left as they are. Returns each run's final status."""
    active = [run for run in map(registry.get, run_ids) if run.status in ACTIVE]
    for run in active:
        registry.request_cancel(run.id)
    for run in active:
        if run.status == Status.QUEUED or run.pid is None:
            registry.finish(run.id, Status.CANCELLED, "cancelled before it started", say=True)
        else:
            backend(run.backend).cancel(registry, run, grace)
    pump(registry)
    return {run_id: registry.get(run_id).status for run_id in run_ids}
