"""What runs on a Ray node: one task per run trains in a scratch run folder, reports through the hub
actor, and returns how it ended with the folder's files (or writes them to shared storage)."""

from __future__ import annotations

import socket
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from core.backbone.device import describe_device
from core.data import DataSpec
from core.paths import home_from_environment
from core.runs.execute import StopFlag, train_into, train_to_end
from core.runs.folder import RunFolder
from core.runs.lifecycle import Status
from core.train import TrainConfig

DATA_FIELDS = ("train", "test", "val", "unlabeled")


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

    node = socket.gethostname()
    # the task is the node's entry point: its studio home (stores, converted backbones) is the node's own
    home = home_from_environment(Path(tempfile.gettempdir()) / "gan-bert-studio-ray")
    hub.push.remote(run_id, {"type": "started", "node": node, "device": describe_device()})
    last_progress = [0.0]

    def on_event(event: dict) -> None:
        if event["type"] in ("progress", "features", "states") and time.monotonic() - last_progress[0] < 1.0:
            return
        last_progress[0] = time.monotonic()
        hub.push.remote(run_id, event)

    should_stop = StopFlag(lambda: ray.get(hub.is_cancelled.remote(run_id)))

    with tempfile.TemporaryDirectory(prefix=f"studio-{run_id}-") as scratch:
        folder = RunFolder(Path(scratch) / "run")

        def work() -> dict:
            config = TrainConfig.from_json(config_json)
            config = config.with_(data=localize(config.data, shipped, Path(scratch) / "data"))
            return train_into(config, folder, home, on_event, should_stop)

        ending = train_to_end(work)
        where = f" (on Ray node {node})" if ending.status == Status.FAILED else ""
        outcome = {"status": ending.status, "message": ending.message + where, "result": ending.result,
                   "trace": ending.trace, "files": {}, "stored": None, "warning": None}
        if folder.path.exists() and storage:
            uri = f"{storage.rstrip('/')}/{run_id}"
            try:
                store(folder.path, uri)
                outcome["stored"] = uri
            except Exception as e:  # pyarrow raises several kinds; the bytes still come back below
                outcome["warning"] = f"could not write to {storage} from node {node} ({e}); sent back instead"
        if folder.path.exists() and not outcome["stored"]:
            outcome["files"] = folder.files()
        return outcome


def store(folder: Path, uri: str) -> None:
    """Copy a run folder to storage (a folder or a pyarrow URI)."""
    from pyarrow import fs

    fs.copy_files(str(folder), uri.rstrip("/"), destination_filesystem=fs.FileSystem.from_uri(uri)[0])


