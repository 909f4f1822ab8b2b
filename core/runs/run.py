"""A run as the registry stores it: its id's form, the kinds of job, the `Run` record read from a row, and the
errors of a run that is unknown, in the wrong state, or cannot be read."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass

from core.data import labels_read
from core.errors import InputError
from core.runs.lifecycle import ACTIVE
from core.train import TrainConfig, method_for, run_label
from core.train.adaptation import AdaptConfig

RUN_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")
KINDS = {"train": TrainConfig, "adapt": AdaptConfig}  # what a registered job does: train a classifier, or adapt a
# backbone to a dataset's texts (`core.train.adaptation`); every earlier run trained


class RunError(InputError):
    """An unknown or malformed run id, or an action the run's status does not allow."""


class UnreadableRun(RunError):
    """A registry row whose stored config or metrics cannot be read: damaged by hand, or written by a newer
    studio. The other runs stay listed; this one is reported by id and reason (`Registry.unreadable`)."""


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
    pid_token: str | None = None  # its process's identity when the pid was recorded (`processes.process_token`)
    progressed: float | None = None  # when its progress was last written: its pace is measured to then

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
        """Every label the run read, validation included: recorded at its end (written into the records of runs that
        ended before, by the registry's migration 6), or, while it runs, its labeled and validation rows as drawn
        (None until it has drawn them)."""
        result = self.metrics or {}
        if result.get("labels_read") is not None:
            return result["labels_read"]
        if self.labeled is None or self.val_rows is None:
            return None
        return self.labeled + self.val_rows

    @property
    def val_rows(self) -> int | None:
        """The validation rows the run read: recorded at its end, or drawn once it started (a run of the first
        registries had its count written in by migration 6, where its config tells it)."""
        return (self.metrics or {}).get("val_rows", (self.rows or {}).get("val_rows"))

    @property
    def labels_text(self) -> str:
        """'5/class + 5/class validation = 50 labels': what the run reads, beside its labeled amount (its counts once it
        has drawn its rows)."""
        return labels_read(self.config.labeled, self.config.validating, self.labeled, self.val_rows,
                           method_for(self.config).reference)

    @property
    def summary(self) -> dict:
        """The flat row the CLI's `runs --json` prints and the pages tabulate."""
        test = (self.metrics or {}).get("test", {})
        return {"run_id": self.id, "status": self.status, "label": self.label, "name": self.name,
                "method": self.config.method,
                "generator": self.config.params.generator if "generator" in method_for(self.config).variants else None,
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
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):  # `match` let a trailing newline through
        raise RunError(f"not a run id: {run_id!r} (run ids look like 20260101-120000-a1b2c3)")
    return run_id


def to_run(row: sqlite3.Row) -> Run:
    """A row as a Run; `UnreadableRun` naming the part that cannot be read (a config edited by hand, one written by
    a newer studio, metrics cut short)."""
    part = "config"
    try:
        if row["kind"] not in KINDS:
            raise ValueError(f"a job of kind {row['kind']!r}, which this studio does not know (a newer one's?)")
        config = KINDS[row["kind"]].from_json(row["config"])
        part = "metrics"
        metrics = json.loads(row["metrics"]) if row["metrics"] else None
        part = "data as drawn"
        rows = json.loads(row["rows"]) if row["rows"] else None
        part = "resources"
        resources = json.loads(row["resources"]) if row["resources"] else None
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise UnreadableRun(f"run {row['id']}: its stored {part} cannot be read ({type(e).__name__}: "
                            f"{str(e)[:160]})") from None
    return Run(id=row["id"], created=row["created"], started=row["started"], ended=row["ended"],
               status=row["status"], config=config, label=row["label"],
               pid=row["pid"], device=row["device"], heartbeat=row["heartbeat"], progress=row["progress"],
               evaluations=row["evaluations"], samples_per_s=row["samples_per_s"], message=row["message"],
               metrics=metrics, cancel_requested=bool(row["cancel_requested"]), deleted=bool(row["deleted"]),
               backend=row["backend"], resources=resources, phase=row["phase"], phase_started=row["phase_started"],
               claimed=row["claimed"], rows=rows, kind=row["kind"], estimate=row["estimate"],
               pid_token=row["pid_token"], progressed=row["progressed"] if "progressed" in row.keys() else None)


def readable(row: sqlite3.Row) -> Run | None:
    try:
        return to_run(row)
    except UnreadableRun:
        return None
