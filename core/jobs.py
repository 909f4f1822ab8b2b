"""Background runs: a queue over OS processes, bounded concurrency, cancel, dead-process detection.

There is no daemon. Every look at the runs (`pump`) reconciles dead processes and starts queued runs
while slots are free; a finishing worker pumps too, so the queue moves on with nobody watching.
Workers run in their own session, so they outlive page reloads and app restarts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from core.config import TrainConfig
from core.paths import REPO_ROOT
from core.ray_runs import DISPATCH_SLACK, DISPATCHER_LOG, dispatcher_running
from core.runs import ACTIVE, LOG, Registry, RunError, check_run_id


def default_concurrency() -> int:
    """One run per GPU, or one on the CPU (two CPU runs would only share the same cores)."""
    import torch

    return max(1, torch.cuda.device_count())


def concurrency(registry: Registry) -> int:
    return int(registry.setting("max_concurrent") or default_concurrency())


def set_concurrency(registry: Registry, n: int) -> None:
    if n < 1:
        raise RunError(f"concurrency must be at least 1, got {n}")
    registry.set_setting("max_concurrent", str(n))


def submit(registry: Registry, config: TrainConfig, start: bool = True, backend: str = "local",
           resources: dict | None = None) -> str:
    """Queue a run and start it if a slot is free (local) or hand it to the Ray dispatcher (ray);
    returns its id at once."""
    run_id = registry.create(config, backend, resources)
    if start:
        pump(registry)
    return run_id


def launch(registry: Registry, args: list[str], log_path: Path) -> int:
    """Start `python -m ARGS` in its own session (so it outlives the app), logging to `log_path`."""
    env = {**os.environ, "STUDIO_HOME": str(registry.home), "PYTHONPATH": str(REPO_ROOT)}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", *args], cwd=REPO_ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return proc.pid


def spawn(registry: Registry, run_id: str) -> int:
    """Start `python -m core.worker RUN_ID` detached, logging to the run's train.log."""
    pid = launch(registry, ["core.worker", run_id], registry.run_dir(run_id) / LOG)
    registry.set_pid(run_id, pid)
    return pid


def ensure_dispatcher(registry: Registry) -> None:
    """Start the Ray dispatcher unless one runs (a second one started in a race exits at once)."""
    if not dispatcher_running(registry):
        launch(registry, ["core.ray_runs"], registry.home / DISPATCHER_LOG)


def pump(registry: Registry) -> list[str]:
    """Reconcile dead runs, then start queued local runs (oldest first) while slots are free, and make
    sure a Ray dispatcher is up when Ray runs wait (Ray, not this queue, schedules those)."""
    registry.reconcile()
    active = registry.list(include_deleted=True, statuses=("starting", "running"))
    busy = sum(run.backend == "local" for run in active)
    slots = concurrency(registry)
    started = []
    queued = registry.list(statuses=("queued",))
    if any(run.backend == "ray" for run in queued):
        ensure_dispatcher(registry)
    for run in queued:
        if run.backend != "local":
            continue
        if busy >= slots:
            break
        if registry.claim(run.id):
            spawn(registry, run.id)
            started.append(run.id)
            busy += 1
    return started


def cancel(registry: Registry, run_id: str, grace: float = 15.0) -> str:
    """Queued: cancelled at once. Running: SIGTERM (the loop stops at the next batch), then SIGKILL
    after `grace` seconds. Returns the final status."""
    run = registry.get(run_id)
    if run.status not in ACTIVE:
        raise RunError(f"run {run_id} is already {run.status}")
    registry.request_cancel(run_id)
    if run.status == "queued" or run.pid is None:
        registry.finish(run_id, "cancelled", "cancelled before it started")
        return registry.get(run_id).status
    if run.backend == "ray":  # the dispatcher relays the request and forces it after its own grace
        _wait_for_end(registry, run_id, grace + DISPATCH_SLACK)
        return registry.get(run_id).status
    _signal(run.pid, signal.SIGTERM)
    if not _wait_for_end(registry, run_id, grace):
        _signal(run.pid, signal.SIGKILL)
        registry.finish(run_id, "cancelled", f"cancelled (forced after {grace:.0f} s)")
    pump(registry)
    return registry.get(run_id).status


def _wait_for_end(registry: Registry, run_id: str, seconds: float) -> bool:
    """Poll (reconciling dead processes) until the run has ended; False if it still runs after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        registry.reconcile()
        if registry.get(run_id).status not in ACTIVE:
            return True
        time.sleep(0.2)
    return False


def _signal(pid: int, sig: int) -> None:
    """Signal the worker's whole process group (it is a session leader), ignoring a process already gone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def tail_log(registry: Registry, run_id: str, lines: int = 40) -> str:
    path: Path = registry.run_dir(check_run_id(run_id)) / LOG
    if not path.exists():
        return ""
    with open(path, "rb") as f:
        return "".join(deque((ln.decode("utf-8", "replace") for ln in f), maxlen=lines))
