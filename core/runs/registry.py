"""The run registry: SQLite under the studio home, the one source of truth about runs.

Like MLflow's tracking store: one status column, deletion as a separate flag (undoable), every write
in a transaction. Every status change goes through the lifecycle's table of moves (`lifecycle.MOVES`),
and an illegal one is refused with an error. Per-epoch metrics live here, and only here.
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

from core.runs.folder import RunFolder
from core.runs.lifecycle import ACTIVE, FIRST, Status, check_move
from core.runs.processes import process_token
from core.runs.registry_store import UNLISTED, FullDisk, RegistryError, explained, set_up
from core.runs.run import KINDS, Run, RunError, UnreadableRun, check_run_id, readable, to_run
from core.train import TrainConfig, run_label
from core.train.adaptation import AdaptConfig
from core.train.macro import split_tables

log = logging.getLogger(__name__)

__all__ = ["Registry", "RegistryError", "Run", "RunError", "UnreadableRun", "check_run_id"]


class Registry:
    def __init__(self, home: Path):
        """The registry of the studio `home` (its entry point found it: `core.paths.home_from_environment`),
        upgraded once, here, where an older studio wrote it."""
        self.home = home
        self.path = self.home / "studio.db"
        self.runs_dir = self.home / "runs"
        self.read_only = False  # the disk full when it opened: finished runs are read, nothing is written
        self.migrated: list[str] = []
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            self.migrated = set_up(self.path)  # what an older registry gained, once: said here, never again
        except (sqlite3.Error, OSError) as e:
            plain = explained(e, self.path)
            if not isinstance(plain, FullDisk) or not self.path.is_file():
                raise plain or e
            self.read_only, self.full = True, plain
        for step in self.migrated:
            log.warning("the registry at %s was upgraded, migration %s", self.path, step)
        with self._connect(write=False) as db:  # what a run's row is read with: every column but `UNLISTED`
            self.listed = ", ".join(c[1] for c in db.execute("PRAGMA table_info(runs)") if c[1] not in UNLISTED)

    @contextmanager
    def _connect(self, write: bool = True):
        """One transaction: commit on success, roll back and re-raise on any error. A read takes no write lock,
        so the lists and pages keep working where the disk is full; a damaged file or a full disk is said so
        (`explained`)."""
        if self.read_only and write:
            raise self.full
        try:
            # on a full disk, as the file stands: WAL mode's shared-memory file cannot be made, and nothing writes
            db = sqlite3.connect(f"{self.path.as_uri()}?mode=ro&immutable=1", uri=True, isolation_level=None) \
                if self.read_only else sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as e:
            raise explained(e, self.path) or e
        db.row_factory = sqlite3.Row
        try:
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            yield db
            db.execute("COMMIT")
        except BaseException as e:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if isinstance(e, (sqlite3.Error, OSError)) and (plain := explained(e, self.path)) is not None:
                raise plain from None
            raise
        finally:
            db.close()

    def folder(self, run_id: str) -> RunFolder:
        return RunFolder(self.runs_dir / check_run_id(run_id))

    # ------------------------------------------------------------ create and read

    def create(self, config: TrainConfig | AdaptConfig, backend: str = "local", resources: dict | None = None,
               estimate: float | None = None, run_by: int | None = None) -> str:
        """A queued run of `config`, as resolved at launch (`core.train.resolution`), for `backend` (the queue's
        `enqueue` checks its name), with the seconds its grid's estimate gave it; an AdaptConfig queues an
        adaptation. `run_by` (a pid): created already claimed by that process, a foreground CLI run, so no queue
        can start it in the background, whatever happens to the process that asked for it."""
        kind = next(k for k, cls in KINDS.items() if isinstance(config, cls))
        for _ in range(8):  # an id already taken (two runs made in one second drew the same 3 bytes) draws again
            run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
            folder = self.folder(run_id)
            try:
                folder.path.mkdir(parents=True)
                break
            except FileExistsError:
                continue
            except OSError as e:
                raise explained(e, self.path) or e
        else:
            raise RegistryError(f"no free run id under {self.runs_dir} after 8 draws")
        try:
            folder.write_config(config)
        except OSError as e:
            raise explained(e, self.path) or e
        label = config.label if kind == "adapt" else run_label(config)
        now = time.time()
        status = FIRST if run_by is None else Status.STARTING
        with self._connect() as db:
            db.execute("INSERT INTO runs (id, created, status, config, label, backend, resources, kind, estimate, "
                       "pid, pid_token, claimed, heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (run_id, now, status, config.to_json(), label, backend,
                        json.dumps(resources) if resources is not None else None, kind, estimate, run_by,
                        run_by and process_token(run_by), run_by and now, run_by and now))
        return run_id

    def get(self, run_id: str) -> Run:
        with self._connect(write=False) as db:
            row = db.execute(f"SELECT {self.listed} FROM runs WHERE id = ?", (check_run_id(run_id),)).fetchone()
        if row is None:
            raise RunError(f"no run {run_id}")
        return to_run(row)

    def tables(self, run_id: str) -> dict:
        """A finished run's per-class test tables (classes, confusion matrix, per-class scores), read when a page
        draws them; a registry a full disk kept from its migration holds an older run's in its metrics. {} where it
        has none."""
        with self._connect(write=False) as db:
            row = db.execute("SELECT tables, metrics FROM runs WHERE id = ?", (check_run_id(run_id),)).fetchone()
        if row is None:
            raise RunError(f"no run {run_id}")
        try:
            kept = json.loads(row["tables"]) if row["tables"] else split_tables(
                json.loads(row["metrics"]) if row["metrics"] else None)[1]
        except ValueError:
            return {}
        return kept if isinstance(kept, dict) else {}

    def list(self, include_deleted: bool = False, statuses: tuple[str, ...] | None = None, kind: str | None = "train"
             ) -> list[Run]:
        """The runs (by default the training runs; `kind` "adapt" the adaptations, None every job) in the order
        they were created."""
        query, args = f"SELECT {self.listed} FROM runs WHERE (deleted = 0 OR ?)", [int(include_deleted)]
        if kind is not None:
            query += " AND kind = ?"
            args.append(kind)
        if statuses:
            query += f" AND status IN ({','.join('?' * len(statuses))})"
            args += list(statuses)
        with self._connect(write=False) as db:
            rows = db.execute(query + " ORDER BY created, id", args).fetchall()
        return [run for run in map(readable, rows) if run is not None]

    def unreadable(self) -> list[tuple[str, str]]:
        """(run id, reason) for every row `list` leaves out because it cannot be read."""
        with self._connect(write=False) as db:
            rows = db.execute(f"SELECT {self.listed} FROM runs WHERE deleted = 0 ORDER BY created, id").fetchall()
        found = []
        for row in rows:
            try:
                to_run(row)
            except UnreadableRun as e:
                found.append((str(row["id"]), str(e)))
        return found

    def stored_texts(self) -> list[str]:
        """Every run's stored config (deleted and unreadable ones too) and every setting, as text: what names a
        file the studio must keep (`uploads.clean_uploads`)."""
        with self._connect(write=False) as db:
            return ([str(r[0]) for r in db.execute("SELECT config FROM runs")]
                    + [str(r[0]) for r in db.execute("SELECT value FROM settings")])

    def evaluations(self, run_id: str) -> list[dict]:
        """A run's validation evaluations in order, with the losses since the one before and the step
        (runs from before step budgets evaluated once an epoch and have no step)."""
        with self._connect(write=False) as db:
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
            cur = db.execute("UPDATE runs SET status = ?, heartbeat = ?, claimed = ?, pid = COALESCE(?, pid), "
                             "pid_token = CASE WHEN ? IS NULL THEN pid_token ELSE ? END "
                             "WHERE id = ? AND status = ? AND cancel_requested = 0",
                             (Status.STARTING, now, now, pid, pid, pid and process_token(pid), run_id, Status.QUEUED))
            return cur.rowcount == 1

    def set_config(self, run_id: str, config: TrainConfig) -> None:
        """Store a run's config again as its worker starts it (resolved then when an older version queued it
        resolved less), in the registry and the run folder alike; an ended run keeps what it ran with."""
        with self._connect() as db:
            row = db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None or row["status"] not in ACTIVE:
                raise RunError(f"run {run_id} has ended: its config is what it ran with")
            db.execute("UPDATE runs SET config = ?, label = ? WHERE id = ?",
                       (config.to_json(), run_label(config), run_id))
        self.folder(run_id).write_config(config)

    def set_pid(self, run_id: str, pid: int) -> None:
        """The process that runs `run_id`, with its identity (`process_token`): a pid alone is reused."""
        with self._connect() as db:
            db.execute("UPDATE runs SET pid = ?, pid_token = ? WHERE id = ?", (pid, process_token(pid), run_id))

    def mark_running(self, run_id: str, pid: int, device: str) -> None:
        now = time.time()
        with self._connect() as db:
            self._move(db, run_id, Status.RUNNING, "pid = ?, pid_token = ?, device = ?, started = ?, heartbeat = ?",
                       (pid, process_token(pid), device, now, now))

    def update_progress(self, run_id: str, progress: float, evaluations: int, samples_per_s: float | None = None,
                        message: str | None = None, phase: str = "training") -> None:
        """The progress of the run's current phase (encoding, then training); a new phase starts its clock."""
        now = time.time()
        with self._connect() as db:
            db.execute("UPDATE runs SET progress = ?, evaluations = ?, samples_per_s = COALESCE(?, samples_per_s), "
                       "message = COALESCE(?, message), heartbeat = ?, progressed = ?, "
                       "phase_started = CASE WHEN phase IS ? THEN phase_started ELSE ? END, phase = ? WHERE id = ?",
                       (progress, evaluations, samples_per_s, message, now, now, phase, now, phase, run_id))

    def beat(self, run_id: str) -> None:
        """A running run's heartbeat (`execute.beating`)."""
        with self._connect() as db:
            db.execute("UPDATE runs SET heartbeat = ? WHERE id = ?", (time.time(), run_id))

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

    def finish(self, run_id: str, status: str, message: str | None = None, metrics: dict | None = None,
               say: bool = False) -> None:
        """Record the end of a run; ending a run that has already ended is an IllegalMove. With `say`, the run's log
        ends with it too: an ending its worker never logged (cancelled before it started, or forced)."""
        metrics, tables = split_tables(metrics)  # the per-class tables apart: every list reads the metrics
        with self._connect() as db:
            self._move(db, run_id, Status(status),
                       "message = COALESCE(?, message), metrics = COALESCE(?, metrics), ended = ?, "
                       "progress = CASE WHEN ? = ? THEN 1 ELSE progress END, tables = COALESCE(?, tables)",
                       (message, json.dumps(metrics) if metrics is not None else None, time.time(), status,
                        Status.DONE, json.dumps(tables) if tables is not None else None))
        if say:
            self.log_ending(run_id, status, message)

    def interrupt(self, run_id: str, message: str, status: Status = Status.INTERRUPTED) -> None:
        """A run whose process is gone: swept of the temporary files a kill mid-write left (before the
        status changes, so an interrupted run never shows leftovers), then marked interrupted (or cancelled,
        when its process was stopped as asked before it could say so itself)."""
        with self._connect() as db:
            self.folder(run_id).remove_leftovers()
            self._move(db, run_id, status, "ended = ?, message = ?", (time.time(), message))
        self.log_ending(run_id, status, message)  # its process, gone, never said how it ended

    def log_ending(self, run_id: str, status: str, message: str | None) -> None:
        """The run's log ends with how it ended; the registry holds the ending already, so a log that cannot be
        written (a full disk, a folder made read-only) loses only this line."""
        try:
            self.folder(run_id).append_log(f"{status}: {message}")
        except OSError as e:
            log.warning("run %s: its log could not say it ended %s (%s)", run_id, status, e)

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
        with self._connect(write=False) as db:
            row = db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row["value"] if row else default

    def set_setting(self, key: str, value: str) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, value))
