"""Background runs on Ray: each run is one Ray task, scheduled by Ray over the cluster's CPUs and GPUs.

One dispatcher process on the user's machine (`python -m core.ray_runs`, started by `jobs.pump` when
Ray runs wait, one at a time through a file lock) connects to the cluster, submits every queued Ray run
as a task and relays what the tasks report through a small actor, the hub: progress and per-epoch
metrics go into the local registry as they happen, cancel requests go the other way. A finished task
returns its checkpoint, predictions and result as bytes, or, when the user names a storage path (a
shared folder or a URI such as s3://bucket/studio), writes them there and the dispatcher copies them
back; either way they land in the local run directory and the registry stays the one source of truth.

The dispatcher's process id is each Ray run's pid: if it dies, `Registry.reconcile` marks its runs
interrupted, and Ray, which ties a task to the driver that owns it, stops them. Ray is optional: this
module imports it only inside functions.
"""

from __future__ import annotations

import fcntl
import importlib.util
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from core.config import TrainConfig
from core.data import DataSpec
from core.errors import InputError
from core.paths import REPO_ROOT, atomic_write_bytes
from core.runs import ACTIVE, LOG, Registry

log = logging.getLogger("studio.ray")

RAY_HINT = "Ray is not installed; enable the Ray backend with: .venv/bin/pip install -r requirements-ray.txt"
LOCK, DISPATCHER_LOG = "ray-dispatcher.lock", "ray-dispatcher.log"
CANCEL_GRACE = 15.0  # seconds between the polite cancel request and ray.cancel(force=True)
DISPATCH_SLACK = 10.0  # how much longer than the grace `jobs.cancel` waits for the dispatcher
DATA_FIELDS = ("train", "test", "val", "unlabeled")


def ray_available() -> bool:
    return importlib.util.find_spec("ray") is not None


def ray_resources(config: TrainConfig, cpus: float = 1.0, gpu_fraction: float = 1.0) -> dict:
    """What one Ray run asks for, checked: whole GPUs unless the encoder is frozen (then a head is small
    enough to share one)."""
    if not ray_available():
        raise InputError(RAY_HINT)
    if cpus <= 0:
        raise InputError(f"CPUs per Ray run must be more than 0, got {cpus:g}")
    if not 0 < gpu_fraction <= 1:
        raise InputError(f"the GPU fraction per Ray run must be in (0, 1], got {gpu_fraction:g}")
    if gpu_fraction < 1 and not config.frozen:
        raise InputError("fractional GPUs are for frozen-feature runs; a trained encoder needs a whole GPU")
    return {"cpus": float(cpus), "gpu_fraction": float(gpu_fraction)}


def check_address(address: str | None, timeout: float = 5.0) -> None:
    """Fail fast on a cluster address nothing answers at: `ray.init` would wait minutes before giving up.
    Ray Client addresses (`ray://`) and None (RAY_ADDRESS, a local Ray) are left to Ray."""
    if not address or address.startswith("ray://") or address == "auto":
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"a Ray address looks like HOST:PORT (e.g. 10.0.0.5:6379), got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise InputError(f"no Ray cluster answers at {address}: {e.strerror or e}") from None


def use_address(registry: Registry, address: str) -> None:
    """Check a cluster address and remember it for the dispatcher; empty means Ray's own default."""
    address = address.strip()
    check_address(address)
    registry.set_setting("ray_address", address)


def use_storage(registry: Registry, storage: str) -> None:
    """Check and remember where Ray runs write their results (empty: send them back as bytes). Any
    pyarrow file system URI works (s3://, gs://, hdfs://) or an absolute folder that nodes share."""
    storage = storage.strip()
    if storage:
        from pyarrow import fs

        try:
            fs.FileSystem.from_uri(storage)
        except Exception as e:  # pyarrow raises several kinds for a bad URI
            raise InputError(f"not a storage path or URI: {storage!r} ({e}); give an absolute folder "
                             "or a URI such as s3://bucket/studio") from None
    registry.set_setting("ray_storage", storage)


def store(folder: Path, uri: str) -> None:
    """Copy a run folder to storage (a folder or a pyarrow URI)."""
    from pyarrow import fs

    fs.copy_files(str(folder), uri.rstrip("/"), destination_filesystem=fs.FileSystem.from_uri(uri)[0])


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
        os.replace(f, target)
    shutil.rmtree(incoming, ignore_errors=True)


def task_options(config: TrainConfig, resources: dict | None, cluster_gpus: float) -> dict:
    """Ray's resource request: a GPU (or its fraction) when the run would use CUDA, else CPUs only."""
    resources = resources or {}
    wants_gpu = config.device == "cuda" or (config.device == "auto" and cluster_gpus > 0)
    gpus = (resources.get("gpu_fraction", 1.0) if config.frozen else 1.0) if wants_gpu else 0.0
    return {"num_cpus": resources.get("cpus", 1.0), "num_gpus": gpus}


# ---------------------------------------------------------------- what runs on the cluster

class Hub:
    """The mailbox between the dispatcher and its tasks (a Ray actor): events up, cancel requests down."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []
        self.cancelled: set[str] = set()

    def push(self, run_id: str, event: dict) -> None:
        self.events.append((run_id, event))

    def drain(self) -> list[tuple[str, dict]]:
        events, self.events = self.events, []
        return events

    def cancel(self, run_id: str) -> None:
        self.cancelled.add(run_id)

    def is_cancelled(self, run_id: str) -> bool:
        return run_id in self.cancelled


def ship_data(spec: DataSpec) -> dict[str, dict]:
    """The bytes of every data file a run reads, so that nodes without the user's files can train."""
    shipped = {}
    for name in DATA_FIELDS:
        path = getattr(spec, name)
        if path:
            p = Path(path)
            files = sorted(f for f in p.iterdir() if f.is_file()) if p.is_dir() else [p]
            shipped[name] = {"path": path, "dir": p.is_dir(), "files": {f.name: f.read_bytes() for f in files}}
    return shipped


def localize(spec: DataSpec, shipped: dict[str, dict], folder: Path) -> DataSpec:
    """Point the spec at local copies of the shipped files where the original paths do not exist."""
    changes = {}
    for name, item in shipped.items():
        if Path(item["path"]).exists():
            continue
        target = folder / name
        target.mkdir(parents=True, exist_ok=True)
        for filename, data in item["files"].items():
            (target / filename).write_bytes(data)
        changes[name] = str(target if item["dir"] else target / next(iter(item["files"])))
    return replace(spec, **changes) if changes else spec


def execute_remote(run_id: str, config_json: str, hub, shipped: dict[str, dict], storage: str | None = None
                   ) -> dict:
    """The Ray task: train in a scratch folder on whatever node Ray chose, report through the hub, and
    return how it ended with the run folder's files. Every ending is returned, never raised. `shipped`
    arrives resolved (Ray fetches a top-level object-store argument to the node once)."""
    import ray

    from core.backbone import describe_device
    from core.training import train
    from core.worker import StopFlag, train_to_end

    node = socket.gethostname()
    os.environ.setdefault("STUDIO_HOME", str(Path(tempfile.gettempdir()) / "gan-bert-studio-ray"))
    hub.push.remote(run_id, {"type": "started", "node": node, "device": describe_device()})
    last_progress = [0.0]

    def on_event(event: dict) -> None:
        if event["type"] in ("progress", "features") and time.monotonic() - last_progress[0] < 1.0:
            return
        last_progress[0] = time.monotonic()
        hub.push.remote(run_id, event)

    should_stop = StopFlag(lambda: ray.get(hub.is_cancelled.remote(run_id)))

    with tempfile.TemporaryDirectory(prefix=f"studio-{run_id}-") as scratch:
        def work() -> dict:
            config = TrainConfig.from_json(config_json)
            config = config.with_(data=localize(config.data, shipped, Path(scratch) / "data"))
            return train(config, Path(scratch) / "run", on_event, should_stop)

        ending = train_to_end(work)
        where = f" (on Ray node {node})" if ending.status == "failed" else ""
        outcome = {"status": ending.status, "message": ending.message + where, "result": ending.result,
                   "trace": ending.trace, "files": {}, "stored": None, "warning": None}
        run_dir = Path(scratch) / "run"
        if run_dir.exists() and storage:
            uri = f"{storage.rstrip('/')}/{run_id}"
            try:
                store(run_dir, uri)
                outcome["stored"] = uri
            except Exception as e:  # pyarrow raises several kinds; the bytes still come back below
                outcome["warning"] = f"could not write to {storage} from node {node} ({e}); sent back instead"
        if run_dir.exists() and not outcome["stored"]:
            outcome["files"] = {str(f.relative_to(run_dir)): f.read_bytes()
                                for f in sorted(run_dir.rglob("*")) if f.is_file()}
        return outcome


# ---------------------------------------------------------------- the dispatcher, on the user's machine

@dataclass
class Flight:
    """A run handed to Ray: its task and where its cancellation stands."""

    ref: object
    started: bool = False
    cancel_sent: float | None = None
    forced: bool = False


def append_log(registry: Registry, run_id: str, line: str) -> None:
    with open(registry.run_dir(run_id) / LOG, "a", encoding="utf-8") as f:
        f.write(time.strftime("%Y-%m-%d %H:%M:%S ") + line.rstrip("\n") + "\n")


def land(registry: Registry, run_id: str, outcome: dict) -> None:
    """Write a finished task's files into the run folder (atomically, checkpoint first), then record it."""
    run_dir = registry.run_dir(run_id)
    if outcome["stored"]:
        fetch(outcome["stored"], run_dir)
        append_log(registry, run_id, f"results stored at {outcome['stored']} and copied here")
    for rel, data in outcome["files"].items():
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            raise ValueError(f"refusing a returned file outside the run folder: {rel}")
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(run_dir / rel, data)
    for note in (outcome["warning"], outcome["trace"]):
        if note:
            append_log(registry, run_id, note)
    append_log(registry, run_id, f"{outcome['status']}: {outcome['message']}")
    registry.finish(run_id, outcome["status"], outcome["message"], outcome["result"])


def settle(registry: Registry, run_id: str, flight: Flight, get: Callable[[object], dict]) -> None:
    """Record how a task ended, including the ways Ray itself reports: cancelled before it ran, forced
    out by a cancel, or lost with its worker or node."""
    from ray import exceptions as rex

    try:
        outcome = get(flight.ref)
    except rex.TaskCancelledError:
        registry.finish(run_id, "cancelled", "cancelled before Ray started it")
    except (rex.WorkerCrashedError, rex.NodeDiedError, rex.OwnerDiedError, rex.ObjectLostError) as e:
        if flight.forced:
            registry.finish(run_id, "cancelled", f"cancelled (forced after {CANCEL_GRACE:.0f} s)")
        else:
            registry.finish(run_id, "interrupted", f"the Ray worker running it was lost: {type(e).__name__}")
    except rex.RayError as e:  # the task could not even start: a missing package on the node, for example
        text = str(e).strip()
        message = text.splitlines()[-1] if text else type(e).__name__
        append_log(registry, run_id, text)
        registry.finish(run_id, "failed", f"Ray could not run it: {message}")
    else:
        try:
            land(registry, run_id, outcome)
        except (OSError, ValueError) as e:
            registry.finish(run_id, "failed", f"could not store what the run returned: {e}")


def runtime_env() -> dict:
    """Ship the `core` package to every node and keep the nodes off the model hub."""
    return {"py_modules": [str(REPO_ROOT / "core")],
            "env_vars": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}}


def dispatch(registry: Registry, poll: float = 0.5, idle_exit: float = 10.0) -> None:
    """Submit queued Ray runs, relay their events and cancels, record their endings; return after
    `idle_exit` seconds with nothing to do."""
    from core.worker import registry_events

    address = registry.setting("ray_address") or None  # None: RAY_ADDRESS, the latest local cluster, or a new one
    try:
        import ray

        check_address(address)
        ray.init(address=address, runtime_env=runtime_env(), log_to_driver=False, logging_level=logging.WARNING)
    except Exception as e:  # Ray missing, a wrong address or a dead cluster: say so on every waiting run
        where = address or os.environ.get("RAY_ADDRESS") or "a local instance"
        for run in registry.list(statuses=("queued",)):
            if run.backend == "ray":
                registry.finish(run.id, "failed", f"could not connect to Ray ({where}): {type(e).__name__}: {e}")
        raise
    log.info("connected to Ray: %s", ray.cluster_resources())
    hub = ray.remote(Hub).options(num_cpus=0).remote()
    task = ray.remote(execute_remote)
    flights: dict[str, Flight] = {}
    relays: dict[str, Callable[[dict], None]] = {}
    shipped: dict[str, object] = {}
    idle_since = time.monotonic()

    def relay() -> None:
        for run_id, event in ray.get(hub.drain.remote()):
            if run_id not in flights:
                continue
            if event["type"] == "started":
                flights[run_id].started = True
                registry.mark_running(run_id, os.getpid(), f"Ray node {event['node']}: {event['device']}")
                append_log(registry, run_id, f"started on Ray node {event['node']} ({event['device']})")
            else:
                relays[run_id](event)
                if event["type"] in ("epoch", "status"):
                    append_log(registry, run_id, str({k: v for k, v in event.items() if k != "val"}))

    while True:
        for run in registry.list(statuses=("queued",)):
            if run.backend != "ray" or not registry.claim(run.id, os.getpid()):
                continue
            options = task_options(run.config, run.resources, ray.cluster_resources().get("GPU", 0))
            key = repr(run.config.data)
            try:
                if key not in shipped:
                    shipped[key] = ray.put(ship_data(run.config.data))
            except OSError as e:  # the data file went away after the run was queued
                registry.finish(run.id, "failed", f"could not read the run's data: {e}")
                continue
            flights[run.id] = Flight(task.options(name=run.label, max_retries=0, **options)
                                     .remote(run.id, run.config.to_json(), hub, shipped[key],
                                             registry.setting("ray_storage") or None))
            relays[run.id] = registry_events(registry, run.id)
            asked = f"{options['num_cpus']:g} CPU" + (f", {options['num_gpus']:g} GPU" if options["num_gpus"] else "")
            registry.set_message(run.id, f"waiting for Ray resources ({asked})")
            append_log(registry, run.id, f"submitted to Ray, asking for {asked}")

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
                settle(registry, run_id, flights.pop(run_id), ray.get)
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > idle_exit:
            break
        time.sleep(poll)
    ray.shutdown()


def lock_file(registry: Registry):
    """Open the dispatcher lock; `fcntl.flock` on it is held for a dispatcher's lifetime."""
    return open(registry.home / LOCK, "a")


def try_lock(f) -> bool:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def dispatcher_running(registry: Registry) -> bool:
    with lock_file(registry) as f:
        if not try_lock(f):
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def main() -> int:
    from core.jobs import pump

    registry = Registry()
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
                    registry.finish(run.id, "failed", "the Ray dispatcher failed; see ray-dispatcher.log")
            raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    pump(registry)  # runs queued while this dispatcher was winding down get a new one
    return 0


if __name__ == "__main__":
    sys.exit(main())
