"""Where runs execute: the one table of backends by name, the interface each implements (local worker processes,
a Ray cluster), and the rules they share for telling a run's process alive or gone.

The queue (`core.runs.queue`) talks to a backend only through `Backend`, and the local worker and the Ray dispatcher
know nothing of each other. The CLI's parser reads `NAMES` without importing any backend, and the queue imports a
backend when it has a run for it, so the local path never loads the Ray one."""

from __future__ import annotations

import importlib
import time
from functools import cache
from typing import Protocol

from core.runs.lifecycle import ACTIVE, IllegalMove, Status
from core.runs.processes import is_process, process_token
from core.runs.registry import Registry, Run

WHERE = {"local": "core.runs.local:LocalBackend", "ray": "core.runs.ray.backend:RayBackend"}
NAMES = tuple(WHERE)

GONE = "the training process ended without recording a result"
STOPPED = "cancelled while its process was starting"
STUCK_START = 60.0  # seconds a run may sit in `starting` without a process before it counts as gone
# seconds without a heartbeat after which a local run counts as gone though a process holds its pid, where /proc
# cannot prove that process is the run's own (no start-time token): twenty beats of `execute.HEARTBEAT` missed
STALE = 600.0


class Backend(Protocol):
    name: str

    def submit(self, registry: Registry, queued: list[Run]) -> list[str]:
        """Take on what it can of the runs queued for it (oldest first); returns the ids it started."""
        ...

    def cancel(self, registry: Registry, run: Run, grace: float) -> None:
        """Make a run whose cancel was requested end, forcing it after `grace` seconds."""
        ...

    def alive(self, run: Run) -> bool:
        """Whether the process that runs (or starts) `run` still exists."""
        ...


def process_alive(run: Run) -> bool:
    """The rule both backends share: a run lives while the process recorded for it does (`is_process`: its pid,
    still the same process, not one that got the pid later). A process proven to be the run's own (its start-time
    token) lives whatever its heartbeat says: a clock jump or a suspend had aged a live worker's heartbeat past
    `STALE`, its run was marked interrupted, a second worker took its slot, and its result was never recorded.
    Where the token cannot prove it, a local run also needs a fresh heartbeat. A run `starting` with no pid yet has
    a minute to get one."""
    if run.pid is None:
        return run.status != Status.STARTING or time.time() - (run.heartbeat or 0) <= STUCK_START
    if not is_process(run.pid, run.pid_token):
        return False
    if run.pid_token is not None and process_token(run.pid) == run.pid_token:
        return True
    return not (run.backend == "local" and run.status == Status.RUNNING
                and time.time() - (run.heartbeat or 0) > STALE)


def end_if_gone(registry: Registry, run: Run, backend: Backend) -> bool:
    """Mark an active run interrupted (cancelled, when a cancel was asked) when its process is gone; True when
    the run has ended either way."""
    if run.status not in ACTIVE:
        return True
    if backend.alive(run):
        return False
    try:  # a cancel stops a process that may still be starting, before its own handler can record it
        registry.interrupt(run.id, *((STOPPED, Status.CANCELLED) if run.cancel_requested else (GONE,)))
    except IllegalMove:  # it recorded its own ending in the meantime
        pass
    return True


def wait_for_end(registry: Registry, run_id: str, seconds: float, backend: Backend) -> bool:
    """Poll until the run has ended (or its process is gone); False if it still runs after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if end_if_gone(registry, registry.get(run_id), backend):
            return True
        time.sleep(0.2)
    return False


@cache
def backend(name: str) -> Backend:
    module, cls = WHERE[name].split(":")
    return getattr(importlib.import_module(module), cls)()
