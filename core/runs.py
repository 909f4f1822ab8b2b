"""The run registry: SQLite under the studio home, the one source of truth about runs.

Like MLflow's tracking store: one status column, deletion as a separate flag (undoable), every write
in a transaction. Unlike MLflow, a run whose process died is noticed: `reconcile` checks process ids.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.config import TrainConfig
from core.errors import InputError
from core.paths import atomic_write_text, remove_write_leftovers, studio_home

STATUSES = ("queued", "starting", "running", "done", "failed", "cancelled", "diverged", "interrupted")
ACTIVE = ("queued", "starting", "running")
FINISHED = ("done", "failed", "cancelled", "diverged", "interrupted")
RUN_ID = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    label TEXT NOT NULL,
    pid INTEGER,
    device TEXT,
    heartbeat REAL,
    progress REAL NOT NULL DEFAULT 0,
    epoch INTEGER NOT NULL DEFAULT 0,
    samples_per_s REAL,
    message TEXT,
    metrics TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0,
    backend TEXT NOT NULL DEFAULT 'local',
    resources TEXT
);
CREATE TABLE IF NOT EXISTS epochs (
    run_id TEXT NOT NULL REFERENCES runs(id),
    epoch INTEGER NOT NULL,
    metrics TEXT NOT NULL,
    PRIMARY KEY (run_id, epoch)
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
"""
LOG = "train.log"  # each run folder's log, written by its worker (or the Ray dispatcher)
MIGRATIONS = (("backend", "TEXT NOT NULL DEFAULT 'local'"), ("resources", "TEXT"))
BACKENDS = ("local", "ray")


class RunError(InputError):
    """An unknown or malformed run id, or an action the run's status does not allow."""


@dataclass(frozen=True)
class Run:
    id: str
    created: float
    started: float | None
    ended: float | None
    status: str
    config: TrainConfig
    label: str
    pid: int | None
    device: str | None
    heartbeat: float | None
    progress: float
    epoch: int
    samples_per_s: float | None
    message: str | None
    metrics: dict | None
    cancel_requested: bool
    deleted: bool
    backend: str = "local"  # local (an OS process here) | ray (a Ray task, relayed by the dispatcher)
    resources: dict | None = None  # what a Ray run asks for: {"cpus": 1.0, "gpu_fraction": 1.0}

    @property
    def summary(self) -> dict:
        """The flat row the CLI's `runs --json` prints and the pages tabulate."""
        test = (self.metrics or {}).get("test", {})
        return {"run_id": self.id, "status": self.status, "label": self.label, "method": self.config.method,
                "generator": self.config.generator if self.config.method == "ganbert" else None,
                "fraction": self.config.fraction, "per_class": self.config.per_class, "seed": self.config.seed,
                "frozen": self.config.frozen, "progress": self.progress, "epoch": self.epoch,
                "accuracy": test.get("accuracy"), "macro_f1": test.get("macro_f1"), "mcc": test.get("mcc"),
                "message": self.message, "created": self.created, "backend": self.backend}


def check_run_id(run_id: str) -> str:
    """Run ids are generated, never paths: anything else (such as `../x`) is refused."""
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise RunError(f"not a run id: {run_id!r} (run ids look like 20260101-120000-a1b2c3)")
    return run_id


class Registry:
    def __init__(self, home: Path | None = None):
        self.home = home or studio_home()
        self.path = self.home / "studio.db"
        self.runs_dir = self.home / "runs"
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        try:  # WAL lets readers (the dashboard) and the writing worker proceed together; it persists
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            for name, kind in MIGRATIONS:  # registries made before a column existed gain it in place
                if name not in columns:
                    db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
        finally:
            db.close()

    @contextmanager
    def _connect(self):
        """One transaction: commit on success, roll back and re-raise on any error."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / check_run_id(run_id)

    # ------------------------------------------------------------ create and read

    def create(self, config: TrainConfig, backend: str = "local", resources: dict | None = None) -> str:
        if backend not in BACKENDS:
            raise RunError(f"backend must be local or ray, got {backend!r}")
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        folder = self.run_dir(run_id)
        folder.mkdir(parents=True)
        atomic_write_text(folder / "config.json", json.dumps(json.loads(config.to_json()), indent=2))
        with self._connect() as db:
            db.execute("INSERT INTO runs (id, created, status, config, label, backend, resources) "
                       "VALUES (?, ?, 'queued', ?, ?, ?, ?)",
                       (run_id, time.time(), config.to_json(), config.label(), backend,
                        json.dumps(resources) if resources is not None else None))
        return run_id

    def get(self, run_id: str) -> Run:
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (check_run_id(run_id),)).fetchone()
        if row is None:
            raise RunError(f"no run {run_id}")
        return _to_run(row)

    def list(self, include_deleted: bool = False, statuses: tuple[str, ...] | None = None) -> list[Run]:
        query, args = "SELECT * FROM runs WHERE (deleted = 0 OR ?)", [int(include_deleted)]
        if statuses:
            query += f" AND status IN ({','.join('?' * len(statuses))})"
            args += list(statuses)
        with self._connect() as db:
            return [_to_run(r) for r in db.execute(query + " ORDER BY created, id", args)]

    def epochs(self, run_id: str) -> list[dict]:
        with self._connect() as db:
            rows = db.execute("SELECT epoch, metrics FROM epochs WHERE run_id = ? ORDER BY epoch",
                              (check_run_id(run_id),)).fetchall()
        return [{"epoch": r["epoch"], **json.loads(r["metrics"])} for r in rows]

    # ------------------------------------------------------------ lifecycle

    def claim(self, run_id: str, pid: int | None = None) -> bool:
        """queued → starting, for exactly one caller (the queue may be pumped from many processes); a
        caller that will run it itself (the Ray dispatcher) gives its pid in the same transaction."""
        with self._connect() as db:
            cur = db.execute("UPDATE runs SET status = 'starting', heartbeat = ?, pid = COALESCE(?, pid) "
                             "WHERE id = ? AND status = 'queued'", (time.time(), pid, run_id))
            return cur.rowcount == 1

    def set_pid(self, run_id: str, pid: int) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET pid = ? WHERE id = ?", (pid, run_id))

    def mark_running(self, run_id: str, pid: int, device: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET status = 'running', pid = ?, device = ?, started = ?, heartbeat = ? "
                       "WHERE id = ? AND status IN ('starting', 'queued')", (pid, device, time.time(), time.time(), run_id))

    def update_progress(self, run_id: str, progress: float, epoch: int, samples_per_s: float | None = None,
                        message: str | None = None) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET progress = ?, epoch = ?, samples_per_s = COALESCE(?, samples_per_s), "
                       "message = COALESCE(?, message), heartbeat = ? WHERE id = ?",
                       (progress, epoch, samples_per_s, message, time.time(), run_id))

    def set_message(self, run_id: str, message: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET message = ?, heartbeat = ? WHERE id = ?", (message, time.time(), run_id))

    def add_epoch(self, run_id: str, epoch: int, metrics: dict) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO epochs (run_id, epoch, metrics) VALUES (?, ?, ?)",
                       (run_id, epoch, json.dumps(metrics)))

    def finish(self, run_id: str, status: str, message: str | None = None, metrics: dict | None = None) -> None:
        """Record the end of a run; an already finished run keeps its first ending."""
        assert status in FINISHED, status
        with self._connect() as db:
            db.execute("UPDATE runs SET status = ?, message = COALESCE(?, message), metrics = COALESCE(?, metrics), "
                       "ended = ?, progress = CASE WHEN ? = 'done' THEN 1 ELSE progress END "
                       "WHERE id = ? AND status IN ('queued', 'starting', 'running')",
                       (status, message, json.dumps(metrics) if metrics is not None else None, time.time(), status,
                        run_id))

    def request_cancel(self, run_id: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET cancel_requested = 1 WHERE id = ?", (check_run_id(run_id),))

    def set_deleted(self, run_id: str, deleted: bool = True) -> None:
        run = self.get(run_id)
        if deleted and run.status in ACTIVE:
            raise RunError(f"run {run_id} is {run.status}; cancel it before deleting it")
        with self._connect() as db:
            db.execute("UPDATE runs SET deleted = ? WHERE id = ?", (int(deleted), run_id))

    def setting(self, key: str, default: str | None = None) -> str | None:
        with self._connect() as db:
            row = db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row["value"] if row else default

    def set_setting(self, key: str, value: str) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, value))

    def reconcile(self) -> list[str]:
        """Mark runs whose process is gone as interrupted, and clear the temporary files a kill mid-write left
        in their folders; returns their ids. Cheap: call it on every look."""
        gone = []
        with self._connect() as db:
            for row in db.execute("SELECT id, pid, status, heartbeat FROM runs WHERE status IN ('starting', 'running')"):
                stuck_start = row["status"] == "starting" and row["pid"] is None and time.time() - (row["heartbeat"] or 0) > 60
                if stuck_start or (row["pid"] is not None and not pid_alive(row["pid"])):
                    gone.append(row["id"])
            for run_id in gone:  # swept before the status changes, so an interrupted run never shows leftovers
                remove_write_leftovers(self.run_dir(run_id))
                db.execute("UPDATE runs SET status = 'interrupted', ended = ?, message = ? WHERE id = ?",
                           (time.time(), "the training process ended without recording a result", run_id))
        return gone


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (reaped here when it is our own child)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    except OSError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        try:
            return "\nState:\tZ" not in status.read_text()
        except OSError:
            return False
    return True


def _to_run(row: sqlite3.Row) -> Run:
    return Run(id=row["id"], created=row["created"], started=row["started"], ended=row["ended"],
               status=row["status"], config=TrainConfig.from_json(row["config"]), label=row["label"],
               pid=row["pid"], device=row["device"], heartbeat=row["heartbeat"], progress=row["progress"],
               epoch=row["epoch"], samples_per_s=row["samples_per_s"], message=row["message"],
               metrics=json.loads(row["metrics"]) if row["metrics"] else None,
               cancel_requested=bool(row["cancel_requested"]), deleted=bool(row["deleted"]),
               backend=row["backend"], resources=json.loads(row["resources"]) if row["resources"] else None)
