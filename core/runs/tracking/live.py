"""A run logged to MLflow as it trains, where `STUDIO_MLFLOW_URI` or the Train page's setting names a store: its
params and tags when it starts, each evaluation's curves as they come, and at its end the whole export (a finished
run) or how it ended. A store that fails stops the logging with a line in the run's log; the run trains on."""

from __future__ import annotations

import logging

from core.runs.lifecycle import Status
from core.runs.registry import Registry
from core.runs.run import Run
from core.runs.tracking import record
from core.runs.tracking.store import client_for, export_run, log_points, one_line, open_run

log = logging.getLogger("studio.worker")
ENDED = {Status.CANCELLED: "KILLED"}  # MLflow's word for how a run ended, where it is not FAILED or FINISHED


class LiveLog:
    def __init__(self, registry: Registry, run: Run, uri: str):
        self.registry, self.run_id, self.uri = registry, run.id, uri
        self.client = client_for(uri)
        self.mlflow_id, _ = open_run(self.client, uri, registry, run)
        self.sent = 0  # the evaluations whose points are in the store: each is sent once, as it comes
        log.info("logging to MLflow: %s, run %s", uri, self.mlflow_id)

    @classmethod
    def start(cls, registry: Registry, run: Run, uri: str) -> LiveLog | None:
        """The live log of a training run to `uri`, or None: not a training run, MLflow not installed (the warning
        says how to install it), or the store failing."""
        if run.kind != "train":
            return None
        try:
            return cls(registry, run, uri)
        except Exception as e:  # noqa: BLE001 - the store's failure is not the run's
            log.warning("not logged to MLflow (%s): %s", uri, one_line(e))
            return None

    def on_event(self, event: dict) -> None:
        """After the registry has stored an evaluation, the points of the evaluations not sent yet: every curve had
        been sent again at each evaluation, with a query a curve to find what the store held."""
        if event["type"] != "evaluation" or self.client is None:
            return
        self.guarded(self.send_new)

    def send_new(self) -> None:
        """Read inside the guard: a registry that fails to answer stops the log, not the run."""
        evaluations = self.registry.evaluations(self.run_id)
        log_points(self.client, self.mlflow_id, record.curves(evaluations[self.sent:]))
        self.sent = len(evaluations)

    def end(self) -> None:
        """A finished run exported whole into its MLflow run; another ending marked on it."""
        if self.client is None:
            return
        run = self.registry.get(self.run_id)
        if run.status == Status.DONE:
            self.guarded(lambda: export_run(self.client, self.uri, self.registry, run))
        else:
            self.guarded(lambda: self.client.set_terminated(self.mlflow_id, ENDED.get(run.status, "FAILED")))

    def guarded(self, work) -> None:
        try:
            work()
        except Exception as e:  # noqa: BLE001 - the store's failure is not the run's
            log.warning("MLflow logging stopped (%s): %s", self.uri, one_line(e))
            self.client = None

