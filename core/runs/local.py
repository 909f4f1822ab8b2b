"""The local backend: each run is a worker process on this machine (`python -m core.runs.worker RUN_ID`),
at most `concurrency` at once. Workers run in their own session, so they outlive page reloads and app
restarts; cancel is SIGTERM (the loop stops at its next batch), then SIGKILL after a grace period."""

from __future__ import annotations

import os
import signal

import torch

from core.runs.backends import end_if_gone, process_alive, wait_for_end
from core.runs.lifecycle import ACTIVE, IllegalMove, Status
from core.runs.processes import is_process, launch, signal_group
from core.runs.queue import CONCURRENCY, stored_concurrency
from core.runs.registry import Registry, Run, RunError


def default_concurrency() -> int:
    """One run per GPU, or one on the CPU (two CPU runs would only share the same cores)."""
    return max(1, torch.cuda.device_count())


def threads_per_run(slots: int) -> int | None:
    """On a CPU, the cores split between the runs that may run at once; None (each its own default) on a GPU.
    Two masked-LM adaptations of 2 threads each on 2 cores ran 14 steps a minute together, where one alone ran 45:
    threads that outnumber the cores wait on each other."""
    if torch.cuda.is_available():
        return None
    return max(1, (os.cpu_count() or 1) // slots)


def concurrency(registry: Registry) -> int:
    """The runs that may run here at once: the setting, else the default. A stored value that is not a whole number of
    at least 1 (a registry edited by hand) is not used: 'abc' had crashed every command, and 0 stalled the queue
    without a word; `concurrency_problem` says what was found."""
    return stored_concurrency(registry) or default_concurrency()


def set_concurrency(registry: Registry, n: int) -> None:
    if n < 1:
        raise RunError(f"concurrency must be at least 1, got {n}")
    registry.set_setting(CONCURRENCY, str(n))


class LocalBackend:
    name = "local"

    def submit(self, registry: Registry, queued: list[Run]) -> list[str]:
        """Start queued runs (oldest first) while slots are free."""
        busy = len([r for r in registry.list(include_deleted=True, statuses=(Status.STARTING, Status.RUNNING),
                                             kind=None)
                    if r.backend == self.name])
        slots, started = concurrency(registry), []
        for run in queued:
            if busy >= slots:
                break
            if registry.claim(run.id):
                folder = registry.folder(run.id)
                registry.set_pid(run.id, launch(registry.home, ["core.runs.worker", run.id], folder.log,
                                                threads_per_run(slots)))
                started.append(run.id)
                busy += 1
        return started

    def cancel(self, registry: Registry, run: Run, grace: float) -> None:
        """SIGTERM to the run's worker, SIGKILL after `grace`; only ever to the process recorded for the run
        (`is_process`): a pid reused by another process is never signalled, and the run ends as gone. A run that has
        ended by now is not signalled: its worker may have taken on the next run (the worker also judges a late
        signal, `execute.StopFlag`)."""
        if registry.get(run.id).status not in ACTIVE:
            return
        if not is_process(run.pid, run.pid_token):
            end_if_gone(registry, registry.get(run.id), self)
            return
        signal_group(run.pid, signal.SIGTERM)
        if not wait_for_end(registry, run.id, grace, self):
            if not is_process(run.pid, run.pid_token):
                return
            signal_group(run.pid, signal.SIGKILL)
            try:
                registry.finish(run.id, Status.CANCELLED, f"cancelled (forced after {grace:.0f} s)", say=True)
            except IllegalMove:  # someone saw the killed process first and marked it interrupted
                pass

    def alive(self, run: Run) -> bool:
        return process_alive(run)
