"""The Ray backend: each run is one Ray task, scheduled by Ray over a cluster's CPUs and GPUs.

The queue hands Ray runs to one dispatcher process per studio home (`python -m core.runs.ray.dispatch`,
started here when Ray runs wait, one at a time through a file lock), which is the Ray driver: see
`ray.dispatch` for what it relays and `ray.task` for what runs on a node. The dispatcher's pid is each Ray
run's pid, so a dead dispatcher means interrupted runs. Ray is optional: `ray` is imported only where a
Ray call is made.
"""

from __future__ import annotations

import fcntl
import importlib.util
import socket
from typing import IO

from core.errors import InputError
from core.paths import atomic_write_text
from core.runs.backends import process_alive, wait_for_end
from core.runs.processes import launch, runs_module
from core.runs.registry import Registry, Run
from core.train import TrainConfig

RAY_HINT = "Ray is not installed; enable the Ray backend with: .venv/bin/pip install -r requirements-ray.txt"
LOCK, PID, DISPATCHER_LOG = "ray-dispatcher.lock", "ray-dispatcher.pid", "ray-dispatcher.log"
CANCEL_GRACE = 15.0  # seconds between the polite cancel request and ray.cancel(force=True)
DISPATCH_SLACK = 10.0  # how much longer than the grace a cancel waits for the dispatcher


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


def task_options(config: TrainConfig, resources: dict | None, cluster_gpus: float) -> dict:
    """Ray's resource request: a GPU (or its fraction) when the run would use CUDA, else CPUs only."""
    resources = resources or {}
    wants_gpu = config.device == "cuda" or (config.device == "auto" and cluster_gpus > 0)
    gpus = (resources.get("gpu_fraction", 1.0) if config.frozen else 1.0) if wants_gpu else 0.0
    return {"num_cpus": resources.get("cpus", 1.0), "num_gpus": gpus}


def lock_file(registry: Registry) -> IO[str]:
    """Open the dispatcher lock; `fcntl.flock` on it is held for a dispatcher's lifetime."""
    return open(registry.home / LOCK, "a")


def try_lock(f: IO[str]) -> bool:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def dispatcher_running(registry: Registry) -> bool:
    """A dispatcher holds the lock, or one was launched and is still starting: it loads torch before it can
    take the lock, and counting only the lock started a new dispatcher on every look in those seconds."""
    with lock_file(registry) as f:
        if not try_lock(f):
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    launched = registry.home / PID
    return launched.exists() and runs_module(int(launched.read_text() or 0), "core.runs.ray.dispatch")


class RayBackend:
    name = "ray"

    def submit(self, registry: Registry, queued: list[Run]) -> list[str]:
        """Make sure a dispatcher runs (Ray, not this queue, decides what runs when); it claims the runs."""
        if queued and not dispatcher_running(registry):
            pid = launch(registry.home, ["core.runs.ray.dispatch"], registry.home / DISPATCHER_LOG)
            atomic_write_text(registry.home / PID, str(pid))
        return []

    def cancel(self, registry: Registry, run: Run, grace: float) -> None:
        """The dispatcher relays the request and forces it after its own grace; wait for that."""
        wait_for_end(registry, run.id, grace + DISPATCH_SLACK, self)

    def alive(self, run: Run) -> bool:
        return process_alive(run)
