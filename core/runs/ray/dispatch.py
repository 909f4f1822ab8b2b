"""The Ray dispatcher, on the user's machine: submits every queued Ray run as a task and relays what the
tasks report through the hub actor: progress and per-epoch metrics go into the local registry as they
happen, cancel requests go the other way. A finished task's checkpoint, predictions and result land in
the local run folder (sent back as bytes, or copied from the shared storage the user named), so the
registry stays the one source of truth.

If the dispatcher dies, `reconcile` marks its runs interrupted, and Ray, which ties a task to the driver
that owns it, stops them.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.environment import STUDIO
from core.errors import InputError
from core.paths import REPO_ROOT, home_from_environment, replace_durably
from core.runs.execute import Ending, Recorder, config_to_train, ending_line
from core.runs.lifecycle import ACTIVE, IllegalMove, Status
from core.runs.ray.backend import CANCEL_GRACE, RayBackend, check_address, lock_file, task_options, try_lock
from core.runs.ray.task import Hub, execute_remote, ship_data
from core.runs.registry import Registry

log = logging.getLogger("studio.ray")


def fetch(uri: str, run_dir: Path) -> None:
    """Copy a stored run folder into the local run folder; each file appears whole (copied beside it,
    then renamed into place)."""
    from pyarrow import fs

    incoming = run_dir / ".incoming"
    shutil.rmtree(incoming, ignore_errors=True)
    fs.copy_files(uri.rstrip("/"), str(incoming), source_filesystem=fs.FileSystem.from_uri(uri)[0])
    for f in sorted(p for p in incoming.rglob("*") if p.is_file()):
        target = run_dir / f.relative_to(incoming)
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_durably(f, target)
    shutil.rmtree(incoming, ignore_errors=True)


@dataclass
class Flight:
    """A run handed to Ray: its task and where its cancellation stands."""

    ref: object
    started: bool = False
    cancel_sent: float | None = None
    forced: bool = False


def end(registry: Registry, run_id: str, status: str, message: str, metrics: dict | None = None) -> None:
    """Record a run's ending, unless it has ended already (cancelled while Ray was still starting it)."""
    try:
        registry.finish(run_id, status, message, metrics)
    except IllegalMove as e:
        log.info("%s", e)


def land(registry: Registry, run_id: str, outcome: dict) -> None:
    """Write a finished task's files into the run folder (atomically, checkpoint first), then record it."""
    folder = registry.folder(run_id)
    if outcome["stored"]:
        fetch(outcome["stored"], folder.path)
        folder.append_log(f"results stored at {outcome['stored']} and copied here")
    folder.receive(outcome["files"])
    for note in (outcome["warning"], outcome["trace"]):
        if note:
            folder.append_log(note)
    folder.append_log(ending_line(Ending(outcome["status"], outcome["message"], outcome["result"])))
    end(registry, run_id, outcome["status"], outcome["message"], outcome["result"])


def record_ending(registry: Registry, run_id: str, flight: Flight, get: Callable[[object], dict]) -> None:
    """Record how a task ended, including the ways Ray itself reports: cancelled before it ran, forced
    out by a cancel, or lost with its worker or node."""
    from ray import exceptions as rex

    try:
        outcome = get(flight.ref)
    except rex.TaskCancelledError:
        end(registry, run_id, Status.CANCELLED, "cancelled before Ray started it")
    except (rex.WorkerCrashedError, rex.NodeDiedError, rex.OwnerDiedError, rex.ObjectLostError) as e:
        if flight.forced:
            end(registry, run_id, Status.CANCELLED, f"cancelled (forced after {CANCEL_GRACE:.0f} s)")
        else:
            end(registry, run_id, Status.INTERRUPTED, f"the Ray worker running it was lost: {type(e).__name__}")
    except rex.RayError as e:  # the task could not even start: a missing package on the node, for example
        text = str(e).strip()
        message = text.splitlines()[-1] if text else type(e).__name__
        registry.folder(run_id).append_log(text)
        end(registry, run_id, Status.FAILED, f"Ray could not run it: {message}")
    else:
        try:
            land(registry, run_id, outcome)
        except (OSError, ValueError) as e:
            end(registry, run_id, Status.FAILED, f"could not store what the run returned: {e}")


def runtime_env() -> dict:
    """Ship the `core` package to every node and keep the nodes off the model hub."""
    return {"py_modules": [str(REPO_ROOT / "core")],
            "env_vars": {**STUDIO, "TOKENIZERS_PARALLELISM": "false"}}


def dispatch(registry: Registry, poll: float = 0.5, idle_exit: float = 10.0) -> None:
    """Submit queued Ray runs, relay their events and cancels, record their endings; return after
    `idle_exit` seconds with nothing to do."""
    address = registry.setting("ray_address") or None  # None: RAY_ADDRESS, the latest local cluster, or a new one
    try:
        import ray

        check_address(address)
        ray.init(address=address, runtime_env=runtime_env(), log_to_driver=False, logging_level=logging.WARNING)
    except Exception as e:  # Ray missing, a wrong address or a dead cluster: say so on every waiting run
        where = address or os.environ.get("RAY_ADDRESS") or "a local instance"
        for run in registry.list(statuses=(Status.QUEUED,)):
            if run.backend == "ray":
                end(registry, run.id, Status.FAILED, f"could not connect to Ray ({where}): {type(e).__name__}: {e}")
        raise
    log.info("connected to Ray: %s", ray.cluster_resources())
    hub = ray.remote(Hub).options(num_cpus=0).remote()
    task = ray.remote(execute_remote)
    flights: dict[str, Flight] = {}
    recorders: dict[str, Recorder] = {}  # each submitted run's events: its rows, and once started its MLflow log
    shipped: dict[str, object] = {}
    idle_since = time.monotonic()

    def relay() -> None:
        for run_id, event in ray.get(hub.drain.remote()):
            if run_id not in flights:
                continue
            if event["type"] == "started":
                flights[run_id].started = True
                try:
                    registry.mark_running(run_id, os.getpid(), f"Ray node {event['node']}: {event['device']}")
                except IllegalMove as e:  # cancelled as it started; the task hears of it through the hub
                    log.info("%s", e)
                registry.folder(run_id).append_log(f"started on Ray node {event['node']} ({event['device']})")
                recorders[run_id].started()
            else:
                recorders[run_id](event)
                if event["type"] in ("evaluation", "status"):
                    registry.folder(run_id).append_log(str({k: v for k, v in event.items() if k != "val"}))

    while True:
        for run in registry.list(statuses=(Status.QUEUED,)):
            if run.backend != "ray" or not registry.claim(run.id, os.getpid()):
                continue
            try:
                config = config_to_train(registry, run)
                key = repr(config.data)
                if key not in shipped:
                    shipped[key] = ray.put(ship_data(config.data))
            except OSError as e:  # the data file went away after the run was queued
                end(registry, run.id, Status.FAILED, f"could not read the run's data: {e}")
                continue
            except InputError as e:  # an older version's run that no longer resolves (its backbone is gone)
                end(registry, run.id, Status.FAILED, str(e))
                continue
            options = task_options(config, run.resources, ray.cluster_resources().get("GPU", 0))
            flights[run.id] = Flight(task.options(name=run.label, max_retries=0, **options)
                                     .remote(run.id, config.to_json(), hub, shipped[key],
                                             registry.setting("ray_storage") or None))
            recorders[run.id] = Recorder(registry, run)
            asked = f"{options['num_cpus']:g} CPU" + (f", {options['num_gpus']:g} GPU" if options["num_gpus"] else "")
            registry.set_message(run.id, f"waiting for Ray resources ({asked})")
            registry.folder(run.id).append_log(f"submitted to Ray, asking for {asked}")

        relay()
        wanted = {r.id for r in registry.list(include_deleted=True, statuses=ACTIVE) if r.cancel_requested}
        for run_id, flight in flights.items():
            if run_id in wanted and flight.cancel_sent is None:
                flight.cancel_sent = time.monotonic()
                hub.cancel.remote(run_id)
                if not flight.started:
                    ray.cancel(flight.ref)
            elif flight.cancel_sent and not flight.forced and time.monotonic() - flight.cancel_sent > CANCEL_GRACE:
                flight.forced = True
                ray.cancel(flight.ref, force=True)

        if flights:
            done, _ = ray.wait([f.ref for f in flights.values()], num_returns=len(flights), timeout=0)
            if done:
                relay()  # the last epochs before the endings
            for run_id in [rid for rid, f in flights.items() if f.ref in done]:
                record_ending(registry, run_id, flights.pop(run_id), ray.get)
                recorders.pop(run_id).ended()
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > idle_exit:
            break
        time.sleep(poll)
    ray.shutdown()


def main() -> int:
    registry = Registry(home_from_environment())  # the entry point: its launcher set STUDIO_HOME
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    with lock_file(registry) as lock:
        if not try_lock(lock):
            return 0  # another dispatcher serves this studio home
        try:
            dispatch(registry)
        except Exception:
            log.error("%s", traceback.format_exc())
            for run in registry.list(include_deleted=True, statuses=ACTIVE):
                if run.backend == "ray" and run.pid == os.getpid():
                    end(registry, run.id, Status.FAILED, "the Ray dispatcher failed; see ray-dispatcher.log")
            raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    # runs queued while this dispatcher was winding down get a new one
    RayBackend().submit(registry, [r for r in registry.list(statuses=(Status.QUEUED,)) if r.backend == "ray"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
