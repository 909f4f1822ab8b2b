"""The registry's SQLite file: its schema and the migrations an older file gets when opened, WAL mode, and the
errors a user can act on (a damaged file, a full disk)."""

from __future__ import annotations

import errno
import shutil
import sqlite3
import time
from pathlib import Path

from core.errors import InputError

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
              ("estimate", "REAL"), ("pid_token", "TEXT"), ("progressed", "REAL"), ("tables", "TEXT"))
UNLISTED = ("tables",)  # read on demand (`Registry.tables`), never by a list of runs: 5,000 classes' had taken 587 MB
class RegistryError(InputError):
    """The registry cannot be read or written: its file is damaged, or the disk is full."""


def explained(error: BaseException, path: Path) -> RegistryError | None:
    """A SQLite or OS error in words a user can act on (the disk is full, the file is damaged), or None for any
    other, which stays the internal failure it is."""
    text = str(error).lower()
    # SQLite says a full disk as "disk I/O error" where it cannot even grow its journal (a 3 MB tmpfs, filled): the
    # free space tells it from a damaged file, which a user would have moved aside for nothing
    if (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "disk is full" in text or (
            "disk i/o error" in text and disk_full(path)):
        return FullDisk(f"the disk is full: the registry at {path} cannot record this; free some space "
                        "(finished runs are listed and read as before)")
    if isinstance(error, sqlite3.DatabaseError) and any(
            word in text for word in ("not a database", "malformed", "corrupt", "disk i/o error")):
        return RegistryError(f"the registry at {path} is damaged ({error}); move it aside to start a new one: the "
                             "runs' folders beside it keep their configs, logs, results and checkpoints")
    return None


class FullDisk(RegistryError):
    """The registry cannot write for want of space; it is still read (`Registry.read_only`)."""


FULL = 1 << 20  # bytes free under which a disk counts as full


def disk_full(path: Path) -> bool:
    """Whether the filesystem that holds `path` has (nearly) no space left."""
    try:
        return shutil.disk_usage(path.parent).free < FULL
    except OSError:
        return False


def wal(db: sqlite3.Connection, seconds: float = 30.0) -> None:
    """WAL mode, which lets readers (the dashboard) and the writing worker proceed together; it persists. The
    switch takes the file to itself and SQLite's busy timeout does not wait for it, so processes opening a fresh
    home together retry it (four at once had failed with 'database is locked')."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def exists(db: sqlite3.Connection, name: str) -> bool:
    """Whether a table ('epochs') or a table's column ('runs.epoch') is in the database."""
    table, _, column = name.partition(".")
    if not column:
        found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        return found is not None
    return column in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}




def set_up(path: Path) -> None:
    """The schema, and an older file's renames and added columns, in one IMMEDIATE transaction: four
    processes opening a fresh home at once had each seen a column missing, and one in five tries failed on
    another's `ALTER TABLE` (duplicate column name: phase)."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        wal(db)
        db.execute("BEGIN IMMEDIATE")
        for statement, old in RENAMES:
            if exists(db, old):
                db.execute(statement)
        for statement in filter(str.strip, SCHEMA.split(";")):
            db.execute(statement)
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        for name, kind in MIGRATIONS:
            if name not in columns:
                db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    finally:
        db.close()
