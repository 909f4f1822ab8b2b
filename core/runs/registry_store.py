"""The registry's SQLite file: its schema, the numbered migrations an older file gets once when it is opened (its
`user_version` says which it has had), WAL mode, and the errors a user can act on (a damaged file, a full disk)."""

from __future__ import annotations

import errno
import json
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from core.errors import InputError
from core.train.macro import macro_f1, split_tables

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




def renamed(db: sqlite3.Connection) -> None:
    """Evaluations were named epochs when runs evaluated once an epoch."""
    for statement, old in (("ALTER TABLE epochs RENAME TO evaluations", "epochs"),
                           ("ALTER TABLE evaluations RENAME COLUMN epoch TO evaluation", "evaluations.epoch"),
                           ("ALTER TABLE runs RENAME COLUMN epoch TO evaluations", "runs.epoch")):
        if exists(db, old):
            db.execute(statement)


ADDED = (("backend", "TEXT NOT NULL DEFAULT 'local'"), ("resources", "TEXT"), ("phase", "TEXT"),
         ("phase_started", "REAL"), ("claimed", "REAL"), ("rows", "TEXT"), ("kind", "TEXT NOT NULL DEFAULT 'train'"),
         ("estimate", "REAL"), ("pid_token", "TEXT"), ("progressed", "REAL"), ("tables", "TEXT"))


def added_columns(db: sqlite3.Connection) -> None:
    """The columns added to `runs` since the first registry."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    for name, kind in ADDED:
        if name not in columns:
            db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")


def rescored(db: sqlite3.Connection) -> None:
    """A test macro-F1 written before it was fixed to the test set's classes, recomputed from the run's confusion
    matrix; and the per-class tables of a run stored before they were kept apart, moved to `tables`. A row whose
    metrics cannot be read is left as it is, for the lists to report."""
    for run_id, text in db.execute("SELECT id, metrics FROM runs WHERE metrics IS NOT NULL AND tables IS NULL "
                                   "AND metrics LIKE '%confusion%'").fetchall():
        try:
            metrics = json.loads(text)
        except ValueError:
            continue
        test = metrics.get("test") if isinstance(metrics, dict) else None
        if not isinstance(test, dict):
            continue
        if isinstance(test.get("confusion"), list) and test["confusion"]:
            try:
                metrics = {**metrics, "test": {**test, "macro_f1": macro_f1(test["confusion"])}}
            except (ValueError, TypeError):
                pass  # a matrix that does not score keeps its figure; its tables still leave the lists' rows
        metrics, tables = split_tables(metrics)
        db.execute("UPDATE runs SET metrics = ?, tables = ? WHERE id = ?",
                   (json.dumps(metrics), json.dumps(tables) if tables is not None else None, run_id))


# Each method's own settings when they left the shared config (written out: a migration reads what was, not what is).
OWN_SETTINGS = {"finetune": ("finetune_preset",), "adapter": ("adapter_kind", "reduction_factor"),
                "lora": ("lora_rank", "lora_alpha"),
                "ganbert": ("generator", "gan_preset", "adversarial", "noise", "noise_dim", "batches_without_labels"),
                "setfit": ("lr_c", "setfit_features", "setfit_iterations"), "tfidf-lr": ("lr_c",),
                "features-lr": ("lr_c",)}


def train_configs(db: sqlite3.Connection) -> Iterator[tuple[str, dict]]:
    """Each training run's id and stored config, for a migration to rewrite; a row whose config is no JSON object
    is passed over, left as it is."""
    for run_id, text in db.execute("SELECT id, config FROM runs WHERE kind = 'train'").fetchall():
        try:
            config = json.loads(text)
        except (ValueError, TypeError):
            continue
        if isinstance(config, dict):
            yield run_id, config


def put_config(db: sqlite3.Connection, run_id: str, config: dict) -> None:
    db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config, sort_keys=True), run_id))


def own_settings(db: sqlite3.Connection) -> None:
    """A training run's config held every method's settings; it keeps its own method's. A row whose config cannot
    be read, or names a method not in the table, is left as it is."""
    every = {name for names in OWN_SETTINGS.values() for name in names}
    for run_id, config in train_configs(db):
        if config.get("method") in OWN_SETTINGS:
            foreign = every - set(OWN_SETTINGS[config["method"]])
            put_config(db, run_id, {k: v for k, v in config.items() if k not in foreign})


BUILTIN_CLASSES = 6  # the built-in corpus's, when the first registries carved validation out of it


def carved(config: dict) -> int | None:
    """The validation rows a run of the first registries set aside: a share of every class of the built-in corpus
    (`carve:F`, or before the rule was stored, `val_fraction`, 0.1 unless it says); None for a run of files, whose
    count was never kept."""
    rule = str(config.get("validation") or f"carve:{config.get('val_fraction', 0.1)}")
    data = config.get("data")
    builtin = data.get("builtin") if isinstance(data, dict) else None
    if not rule.startswith("carve:") or not isinstance(builtin, dict) or "train_per_class" not in builtin:
        return None
    try:
        return BUILTIN_CLASSES * int(round(float(rule.removeprefix("carve:")) * builtin["train_per_class"]))
    except (TypeError, ValueError, OverflowError):
        return None


def counted(metrics: dict, rows: dict, config: dict) -> dict:
    """A run's record with its validation rows and labels read where it lacks them and they can be told: as drawn,
    or as the first registries carved them; the labeled ones beside them."""
    out = dict(metrics)
    val_rows = out.get("val_rows", rows.get("val_rows"))
    val_rows = carved(config) if val_rows is None else val_rows
    if val_rows is None or isinstance(val_rows, bool) or not isinstance(val_rows, int):
        return out
    out["val_rows"] = val_rows
    labeled = out.get("labeled")
    if out.get("labels_read") is None and isinstance(labeled, int) and not isinstance(labeled, bool):
        out["labels_read"] = labeled + val_rows
    return out


def counted_labels(db: sqlite3.Connection) -> None:
    """Every label a run read, validation included, written into the record of a run that ended before it was kept
    (`counted`): each read of such a run had worked them out again. A run that ended without a record (failed,
    interrupted) keeps none, as it kept none; a row that cannot be read, or holds odd values, is left as it is, for
    the lists to report."""
    for run_id, config_text, metrics_text, rows_text in db.execute(
            "SELECT id, config, metrics, rows FROM runs WHERE kind = 'train' AND metrics IS NOT NULL").fetchall():
        try:
            config, metrics, rows = json.loads(config_text), json.loads(metrics_text), json.loads(rows_text or "{}")
        except (ValueError, TypeError):
            continue
        if isinstance(config, dict) and isinstance(metrics, dict) and isinstance(rows, dict) \
                and (new := counted(metrics, rows, config)) != metrics:
            db.execute("UPDATE runs SET metrics = ? WHERE id = ?", (json.dumps(new), run_id))


DEFAULT_NAME = "minilm-l6"  # what a config that named no backbone ran, by the name the studio gives it now
SPEEDS_KEY = "encode_tokens_per_s"  # `core.runs.encoding_speed`'s setting: {"backbone|pooling|…": tokens/s}
FORM_KEY, PICK = "train_form", "tr_backbone_pick"  # `core.runs.workspace`'s kept Train form, and its backbone's key


def named_backbones(db: sqlite3.Connection) -> None:
    """A training run that named no backbone ran MiniLM, and its config says so by name: a later default can no
    longer re-read it as another backbone. The encoding speeds kept for it are keyed by that name too, and a kept
    Train form that had picked it ("") picks it by name. A row or setting that cannot be read is left as it is."""
    for run_id, config in train_configs(db):
        if config.get("backbone") in (None, ""):
            put_config(db, run_id, config | {"backbone": DEFAULT_NAME})
    if not exists(db, "settings"):
        return
    speeds, form = setting(db, SPEEDS_KEY), setting(db, FORM_KEY)
    if isinstance(speeds, dict) and (named := named_speeds(speeds)) != speeds:
        put_setting(db, SPEEDS_KEY, named)
    if isinstance(form, dict) and form.get(PICK) == "":
        put_setting(db, FORM_KEY, form | {PICK: DEFAULT_NAME})


def setting(db: sqlite3.Connection, key: str) -> object:
    """A setting's JSON value, or None where it is missing or cannot be read."""
    row = db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    try:
        return json.loads(row[0]) if row else None
    except (ValueError, TypeError):
        return None


def put_setting(db: sqlite3.Connection, key: str, value: object) -> None:
    db.execute("UPDATE settings SET value = ? WHERE key = ?", (json.dumps(value, sort_keys=True), key))


def named_speeds(speeds: dict) -> dict:
    """Encoding speeds keyed as migration 7 keys them: a pass on no named backbone ("|mean|…") by MiniLM's name."""
    return {(DEFAULT_NAME + k if str(k).startswith("|") else k): v for k, v in speeds.items()}


@dataclass(frozen=True)
class Migration:
    number: int
    says: str  # what an older registry gains, as told when it is migrated; "" for a number that changes nothing
    apply: Callable[[sqlite3.Connection], None]


def unchanged(db: sqlite3.Connection) -> None:
    """Nothing: a number once given out stays taken, so a home that had it stays at its version."""


# Each runs once, in order, on a registry whose `user_version` is below its number; a fresh one starts at the last.
# A registry written before the numbering (version 0) may already hold some of what 1 and 2 make: they check. A
# number is never reused: 3 converted process tokens to psutil's start time before they were kept as they were, and
# homes were written at its version.
MIGRATIONS = (
    Migration(1, "evaluations named by index, not epoch", renamed),
    Migration(2, "the columns added to runs since the first registry", added_columns),
    Migration(3, "", unchanged),
    Migration(4, "test macro-F1 rescored over the test set's classes; per-class tables kept apart", rescored),
    Migration(5, "each run's config keeps its own method's settings, not every method's", own_settings),
    Migration(6, "each finished run's labels read, validation included, kept in its record", counted_labels),
    Migration(7, "a run that named no backbone names the one it ran: minilm-l6", named_backbones),
)
VERSION = MIGRATIONS[-1].number


class NewerRegistry(RegistryError):
    """A registry written by a newer studio, whose rows this one may misread."""


def version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def set_up(path: Path) -> list[str]:
    """The schema, or an older file's migrations, in one IMMEDIATE transaction (four processes opening a fresh home
    at once had each seen a column missing, and one in five tries failed on another's `ALTER TABLE`). Returns what
    the migrations that ran say: nothing at all once the file is at `VERSION`."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        wal(db)
        if (found := version(db)) == VERSION:  # the common case, read without a write lock
            return []
        if found > VERSION:  # said before the lock, which a read-only file would refuse
            raise NewerRegistry(f"the registry at {path} was written by a newer studio (version {found}; this one "
                                f"reads up to {VERSION}): update the studio, or point STUDIO_HOME elsewhere")
        db.execute("BEGIN IMMEDIATE")
        found = version(db)
        if found > VERSION:
            raise NewerRegistry(f"the registry at {path} was written by a newer studio (version {found}; this one "
                                f"reads up to {VERSION}): update the studio, or point STUDIO_HOME elsewhere")
        fresh = found == 0 and not exists(db, "runs") and not exists(db, "epochs")
        done = []
        if fresh:
            for statement in filter(str.strip, SCHEMA.split(";")):
                db.execute(statement)
            added_columns(db)
        else:
            for migration in MIGRATIONS:
                if migration.number > found:
                    migration.apply(db)
                    if migration.says:
                        done.append(f"{migration.number}: {migration.says}")
            for statement in filter(str.strip, SCHEMA.split(";")):  # tables and indices an older file lacks
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {VERSION}")
        db.execute("COMMIT")
        return done
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    finally:
        db.close()
