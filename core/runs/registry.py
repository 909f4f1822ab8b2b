"""The run registry: SQLite under the studio home, the one source of truth about runs.

Like MLflow's tracking store: one status column, deletion as a separate flag (undoable), every write
in a transaction. Every status change goes through the lifecycle's table of moves (`lifecycle.MOVES`),
and an illegal one is refused with an error. Per-epoch metrics live here, and only here.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.data import SEMEVAL_LABELS, labels_read
from core.errors import InputError
from core.paths import studio_home
from core.runs.folder import RunFolder
from core.runs.lifecycle import ACTIVE, FIRST, Status, check_move
from core.train import TrainConfig, method_for, run_label
from core.train.adaptation import AdaptConfig

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
    evaluations INTEGER NOT NULL DEFAULT 0,
    samples_per_s REAL,
    message TEXT,
    metrics TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0,
    backend TEXT NOT NULL DEFAULT 'local',
    resources TEXT
);
CREATE TABLE IF NOT EXISTS evaluations (
    run_id TEXT NOT NULL REFERENCES runs(id),
    evaluation INTEGER NOT NULL,
    metrics TEXT NOT NULL,
    PRIMARY KEY (run_id, evaluation)
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
"""
# Names that held evaluation indices when runs evaluated once an epoch; an older studio.db is renamed in
# place when it is opened, before the schema's tables are made.
RENAMES = (("ALTER TABLE epochs RENAME TO evaluations", "epochs"),
           ("ALTER TABLE evaluations RENAME COLUMN epoch TO evaluation", "evaluations.epoch"),
           ("ALTER TABLE runs RENAME COLUMN epoch TO evaluations", "runs.epoch"))
# Columns added since the first registry; an older studio.db gains them in place when it is opened.
MIGRATIONS = (("backend", "TEXT NOT NULL DEFAULT 'local'"), ("resources", "TEXT"), ("phase", "TEXT"),
              ("phase_started", "REAL"), ("claimed", "REAL"), ("rows", "TEXT"), ("kind", "TEXT NOT NULL DEFAULT 'train'"),
              ("estimate", "REAL"))
KINDS = {"train": TrainConfig, "adapt": AdaptConfig}  # what a registered job does: train a classifier, or adapt a
# backbone to a dataset's texts (`core.train.adaptation`); every earlier run trained


class RunError(InputError):
    """An unknown or malformed run id, or an action the run's status does not allow."""


@dataclass(frozen=True)
class Run:
    id: str
    created: float
    started: float | None
    ended: float | None
    status: str
    config: TrainConfig | AdaptConfig  # an AdaptConfig for an adaptation (`kind`)
    label: str
    pid: int | None
    device: str | None
    heartbeat: float | None
    progress: float
    evaluations: int  # evaluations so far
    samples_per_s: float | None
    message: str | None
    metrics: dict | None
    cancel_requested: bool
    deleted: bool
    backend: str = "local"  # local (an OS process here) | ray (a Ray task, relayed by the dispatcher)
    resources: dict | None = None  # what a Ray run asks for: {"cpus": 1.0, "gpu_fraction": 1.0}
    phase: str | None = None  # what a running run is doing: encoding | training; `progress` is that phase's
    phase_started: float | None = None
    claimed: float | None = None  # when a backend took it from the queue: its process starts then, before `started`
    rows: dict | None = None  # its data as drawn, before encoding: labeled, unlabeled, val_rows and test_rows
    kind: str = "train"  # train | adapt (`KINDS`)
    estimate: float | None = None  # seconds its grid's estimate gave it at launch (`estimate.Estimate.each`)

    @property
    def name(self) -> str:
        """The run's one name (`run_label`), with the labeled count once the run has drawn its rows (the monitor
        dropped it while the run went on and added it at the end); `label` keeps the name it was created with."""
        if self.kind == "adapt":
            return self.label
        return run_label(self.config, self.labeled)

    @property
    def labeled(self) -> int | None:
        """The texts it labeled: recorded at its end, or drawn once it started (None while queued)."""
        return (self.metrics or {}).get("labeled", (self.rows or {}).get("labeled"))

    @property
    def labels_read(self) -> int | None:
        """Every label the run read, validation included; for a run recorded before it was kept, its labeled and
        validation rows (None until the run has drawn them)."""
        result = self.metrics or {}
        if result.get("labels_read") is not None:
            return result["labels_read"]
        if result.get("labeled") is None or self.val_rows is None:
            return None
        return result["labeled"] + self.val_rows

    @property
    def val_rows(self) -> int | None:
        """The validation rows the run read. The first registries kept no count: a run of the built-in corpus set
        aside its share of every class, which its config says; a run of files, whatever they held then (None)."""
        result, rule, data = self.metrics or {}, self.config.validating, self.config.data
        if result.get("val_rows") is not None or rule.rule != "carve" or data.builtin is None:
            return result.get("val_rows")
        return len(SEMEVAL_LABELS) * int(round(rule.value * data.builtin.train_per_class))

    @property
    def labels_text(self) -> str:
        """'5/class + 5/class validation = 50 labels': what the run reads, beside its labeled amount."""
        result = self.metrics or {}
        return labels_read(self.config.labeled, self.config.validating, result.get("labeled"), self.val_rows,
                           method_for(self.config).reference)

    @property
    def summary(self) -> dict:
        """The flat row the CLI's `runs --json` prints and the pages tabulate."""
        test = (self.metrics or {}).get("test", {})
        return {"run_id": self.id, "status": self.status, "label": self.label, "name": self.name,
                "method": self.config.method,
                "generator": self.config.generator if "generator" in method_for(self.config).variants else None,
                "amount": self.config.amount, "fraction": self.config.fraction, "per_class": self.config.per_class,
                "validation": self.config.validation, "labels_read": self.labels_read, "labels": self.labels_text,
                "seed": self.config.seed,
                "frozen": self.config.frozen, "progress": self.progress,
                "phase": self.phase if self.status in ACTIVE else None,  # what `progress` counts: encoding, training
                "evaluations": self.evaluations,
                "epoch": self.evaluations,  # its name before evaluations were counted in steps, for older scripts
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
            for statement, old in RENAMES:
                if _exists(db, old):
                    db.execute(statement)
            db.executescript(SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            for name, kind in MIGRATIONS:
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

    def folder(self, run_id: str) -> RunFolder:
        return RunFolder(self.runs_dir / check_run_id(run_id))

    # ------------------------------------------------------------ create and read

    def create(self, config: TrainConfig | AdaptConfig, backend: str = "local", resources: dict | None = None,
               estimate: float | None = None) -> str:
        """A queued run of `config`, as resolved at launch (`core.train.resolution`), for `backend` (the queue's
        `enqueue` checks its name), with the seconds its grid's estimate gave it; an AdaptConfig queues an
        adaptation."""
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        kind = next(k for k, cls in KINDS.items() if isinstance(config, cls))
        folder = self.folder(run_id)
        folder.path.mkdir(parents=True)
        folder.write_config(config)
        label = config.label if kind == "adapt" else run_label(config)
        with self._connect() as db:
            db.execute("INSERT INTO runs (id, created, status, config, label, backend, resources, kind, estimate) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (run_id, time.time(), FIRST, config.to_json(), label, backend,
                        json.dumps(resources) if resources is not None else None, kind, estimate))
        return run_id

    def get(self, run_id: str) -> Run:
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (check_run_id(run_id),)).fetchone()
        if row is None:
            raise RunError(f"no run {run_id}")
        return _to_run(row)

    def list(self, include_deleted: bool = False, statuses: tuple[str, ...] | None = None, kind: str | None = "train"
             ) -> list[Run]:
        """The runs (by default the training runs; `kind` "adapt" the adaptations, None every job) in the order
        they were created."""
        query, args = "SELECT * FROM runs WHERE (deleted = 0 OR ?)", [int(include_deleted)]
        if kind is not None:
            query += " AND kind = ?"
            args.append(kind)
        if statuses:
            query += f" AND status IN ({','.join('?' * len(statuses))})"
            args += list(statuses)
        with self._connect() as db:
            return [_to_run(r) for r in db.execute(query + " ORDER BY created, id", args)]

    def evaluations(self, run_id: str) -> list[dict]:
        """A run's validation evaluations in order, with the losses since the one before and the step
        (runs from before step budgets evaluated once an epoch and have no step)."""
        with self._connect() as db:
            rows = db.execute("SELECT evaluation, metrics FROM evaluations WHERE run_id = ? ORDER BY evaluation",
                              (check_run_id(run_id),)).fetchall()
        return [{"evaluation": r["evaluation"], "step": None, **json.loads(r["metrics"])} for r in rows]

    # ------------------------------------------------------------ lifecycle

    def _move(self, db: sqlite3.Connection, run_id: str, new: Status, sets: str = "", args: tuple = ()) -> None:
        """Change a run's status inside `db`'s transaction, refusing a move the lifecycle does not allow."""
        row = db.execute("SELECT status FROM runs WHERE id = ?", (check_run_id(run_id),)).fetchone()
        if row is None:
            raise RunError(f"no run {run_id}")
        check_move(run_id, row["status"], new)
        db.execute(f"UPDATE runs SET status = ?{', ' + sets if sets else ''} WHERE id = ?", (new, *args, run_id))

    def claim(self, run_id: str, pid: int | None = None) -> bool:
        """queued → starting, for exactly one caller (the queue may be pumped from many processes), and never
        for a run whose cancel was requested; a caller that will run it itself (the Ray dispatcher) gives its
        pid in the same transaction."""
        check_move(run_id, Status.QUEUED, Status.STARTING)  # the one move made without reading the status first
        with self._connect() as db:
            now = time.time()
            cur = db.execute("UPDATE runs SET status = ?, heartbeat = ?, claimed = ?, pid = COALESCE(?, pid) "
                             "WHERE id = ? AND status = ? AND cancel_requested = 0",
                             (Status.STARTING, now, now, pid, run_id, Status.QUEUED))
            return cur.rowcount == 1

    def set_config(self, run_id: str, config: TrainConfig) -> None:
        """Store a run's config again as its worker starts it (resolved then when an older version queued it
        resolved less), in the registry and the run folder alike; an ended run keeps what it ran with."""
        with self._connect() as db:
            row = db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None or row["status"] not in ACTIVE:
                raise RunError(f"run {run_id} has ended: its config is what it ran with")
            db.execute("UPDATE runs SET config = ?, label = ? WHERE id = ?", (config.to_json(), run_label(config), run_id))
        self.folder(run_id).write_config(config)

    def set_pid(self, run_id: str, pid: int) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET pid = ? WHERE id = ?", (pid, run_id))

    def mark_running(self, run_id: str, pid: int, device: str) -> None:
        now = time.time()
        with self._connect() as db:
            self._move(db, run_id, Status.RUNNING, "pid = ?, device = ?, started = ?, heartbeat = ?",
                       (pid, device, now, now))

    def update_progress(self, run_id: str, progress: float, evaluations: int, samples_per_s: float | None = None,
                        message: str | None = None, phase: str = "training") -> None:
        """The progress of the run's current phase (encoding, then training); a new phase starts its clock."""
        now = time.time()
        with self._connect() as db:
            db.execute("UPDATE runs SET progress = ?, evaluations = ?, samples_per_s = COALESCE(?, samples_per_s), "
                       "message = COALESCE(?, message), heartbeat = ?, "
                       "phase_started = CASE WHEN phase IS ? THEN phase_started ELSE ? END, phase = ? WHERE id = ?",
                       (progress, evaluations, samples_per_s, message, now, phase, now, phase, run_id))

    def set_rows(self, run_id: str, rows: dict) -> None:
        """The run's data as it drew them, so its time left counts its training while it still encodes."""
        with self._connect() as db:
            db.execute("UPDATE runs SET rows = ? WHERE id = ?", (json.dumps(rows), run_id))

    def set_message(self, run_id: str, message: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET message = ?, heartbeat = ? WHERE id = ?", (message, time.time(), run_id))

    def add_evaluation(self, run_id: str, index: int, metrics: dict) -> None:
        """Store one evaluation."""
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO evaluations (run_id, evaluation, metrics) VALUES (?, ?, ?)",
                       (run_id, index, json.dumps(metrics)))

    def finish(self, run_id: str, status: str, message: str | None = None, metrics: dict | None = None) -> None:
        """Record the end of a run; ending a run that has already ended is an IllegalMove."""
        with self._connect() as db:
            self._move(db, run_id, Status(status),
                       "message = COALESCE(?, message), metrics = COALESCE(?, metrics), ended = ?, "
                       "progress = CASE WHEN ? = ? THEN 1 ELSE progress END",
                       (message, json.dumps(metrics) if metrics is not None else None, time.time(), status,
                        Status.DONE))

    def interrupt(self, run_id: str, message: str, status: Status = Status.INTERRUPTED) -> None:
        """A run whose process is gone: swept of the temporary files a kill mid-write left (before the
        status changes, so an interrupted run never shows leftovers), then marked interrupted (or cancelled,
        when its process was stopped as asked before it could say so itself)."""
        with self._connect() as db:
            self.folder(run_id).remove_leftovers()
            self._move(db, run_id, status, "ended = ?, message = ?", (time.time(), message))

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


def _exists(db: sqlite3.Connection, name: str) -> bool:
    """Whether a table ('epochs') or a table's column ('runs.epoch') is in the database."""
    table, _, column = name.partition(".")
    if not column:
        found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        return found is not None
    return column in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _to_run(row: sqlite3.Row) -> Run:
    return Run(id=row["id"], created=row["created"], started=row["started"], ended=row["ended"],
               status=row["status"], config=KINDS[row["kind"]].from_json(row["config"]), label=row["label"],
               pid=row["pid"], device=row["device"], heartbeat=row["heartbeat"], progress=row["progress"],
               evaluations=row["evaluations"], samples_per_s=row["samples_per_s"], message=row["message"],
               metrics=json.loads(row["metrics"]) if row["metrics"] else None,
               cancel_requested=bool(row["cancel_requested"]), deleted=bool(row["deleted"]),
               backend=row["backend"], resources=json.loads(row["resources"]) if row["resources"] else None,
               phase=row["phase"], phase_started=row["phase_started"], claimed=row["claimed"],
               rows=json.loads(row["rows"]) if row["rows"] else None, kind=row["kind"], estimate=row["estimate"])
