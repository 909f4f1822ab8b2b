"""Executing one registered run to its end, shared by every place runs execute: the CLI's foreground
`train`, the local worker process and a Ray task.

Training is wrapped so that a run always ends done, failed (with its traceback in its log), cancelled
or diverged; only a killed process leaves it running, and the queue's `reconcile` then marks it
interrupted.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.backbone.device import describe_device
from core.runs.encoding_speed import remember_encoding
from core.runs.estimate import ROWS, roughly
from core.runs.folder import RunFolder
from core.runs.lifecycle import IllegalMove, Status
from core.runs.registry import Registry, Run
from core.train import Cancelled, Diverged, TrainConfig, is_resolved, resolve, train
from core.train.adaptation import RECORD, AdaptConfig, adapted_folder

log = logging.getLogger("studio.worker")
LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


@contextmanager
def logging_into(folder: RunFolder) -> Iterator[None]:
    """A run trained in this process (`core train` in the foreground, the benches) writes its log lines, and
    a failure's traceback, into its folder's log, as a worker's run does through its stderr: without it such
    a run's card read "(no log yet)" once it had finished."""
    handler = logging.FileHandler(folder.log, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        handler.close()


class StopFlag:
    """Set by a cancel request, or by SIGTERM unless the signal was meant for an earlier run of this process
    (`stale()`): a second `core cancel` of a run reached its worker after that run had ended and the worker had taken
    on the next one, which the signal then cancelled. `requested()` asks the registry (or, on Ray, the hub) and is
    called at most every 2 s, since training polls this every batch, and at once after a signal."""

    def __init__(self, requested: Callable[[], bool], stale: Callable[[], bool] = lambda: False):
        self.requested, self.stale = requested, stale
        self.signalled, self.poked, self.checked = False, False, 0.0

    def handle(self, signum, frame) -> None:
        self.poked = True  # judged by the loop's next poll, outside the handler: it reads the registry

    def __call__(self) -> bool:
        if self.poked and not self.signalled:
            self.poked = False
            self.signalled = self.requested() or not self.stale()
        if not self.signalled and time.monotonic() - self.checked > 2.0:
            self.checked = time.monotonic()
            self.signalled = self.requested()
        return self.signalled


def registry_events(registry: Registry, run_id: str) -> Callable[[dict], None]:
    """Training events → registry rows: progress, evaluations, status messages."""
    last, evaluations = [0.0], [0]  # last progress write; evaluations so far, kept with each progress write
    encoding_since = [0.0]  # when the current encoding pass began

    def on_event(event: dict) -> None:
        kind = event["type"]
        if kind == "progress" and time.monotonic() - last[0] > 1.0:
            last[0] = time.monotonic()
            registry.update_progress(run_id, event["step"] / event["total_steps"], evaluations[0],
                                     event.get("samples_per_s"))
        elif kind == "evaluation":
            evaluations[0] = event["index"]
            val = {f"val_{k}": event["val"][k] for k in ("accuracy", "macro_f1", "mcc")} if event["val"] else {}
            if event.get("val_fake_prob") is not None:
                val["val_fake_prob"] = event["val_fake_prob"]
            registry.add_evaluation(run_id, event["index"], {"step": event["step"], **event["losses"], **val,
                                                             "best": event["best"]})
            scored = f": val macro-F1 {val['val_macro_f1']:.3f}" if val else " (no validation)"
            registry.update_progress(run_id, event["step"] / event["total_steps"], event["index"],
                                     event.get("samples_per_s"), f"step {event['step']}/{event['total_steps']}{scored}")
        elif kind in ("features", "states"):  # a pass over texts once per text: frozen features, or states
            now, done, total = time.monotonic(), event["done"], event["total"]
            if done == 0:
                encoding_since[0] = now
            if kind == "features" and done == total and done:
                # read now: a run an older version queued has its max length from its start
                remember_encoding(registry, total, event.get("tokens", 0.0), now - encoding_since[0],
                                  registry.get(run_id).config)
            if done == 0 or done == total or now - last[0] > 1.0:
                last[0] = now
                left = (total - done) * (now - encoding_since[0]) / done if done else None
                what = "encoding texts" if kind == "features" else "storing the frozen layers' states"
                registry.update_progress(run_id, done / max(total, 1), 0, phase="encoding",
                                         message=f"{what}: {done:,} of {total:,} ({done / max(total, 1):.0%})"
                                         + (f", {roughly(left)} left" if left else ""))
        elif kind == "data":
            registry.set_rows(run_id, {k: event[k] for k in ROWS})
        elif kind == "status":
            registry.set_message(run_id, event["message"])
        if line := log_line(event):
            log.info("%s", line)
    return on_event


def log_line(event: dict) -> str | None:
    """A run's log in words: what it is doing and how it went, not every progress tick (the registry keeps
    those); encoding appears when it starts and when it ends."""
    kind = event["type"]
    if kind == "status":
        return event["message"]
    if kind == "data":
        source = f" (from {event['val_source']})" if event.get("val_source", "none") != "none" else ""
        return (f"data: {event['labeled']:,} labeled, {event['unlabeled']:,} unlabeled, {event['val_rows']:,} "
                f"validation{source} and {event['test_rows']:,} test rows")
    if kind == "features" and event["done"] in (0, event["total"]):
        return f"encoding {event['total']:,} texts" + (": done" if event["done"] else "")
    if kind == "states" and event["done"] in (0, event["total"]):
        return f"storing the frozen layers' states of {event['total']:,} texts" + (": done" if event["done"] else "")
    if kind == "evaluation":
        losses = ", ".join(f"{k} {v:.4f}" for k, v in event["losses"].items())
        if not event["val"]:
            return f"evaluation {event['index']} at step {event['step']}/{event['total_steps']}: {losses}"
        return (f"evaluation {event['index']} at step {event['step']}/{event['total_steps']}: {losses}; validation "
                f"accuracy {event['val']['accuracy']:.3f}, macro-F1 {event['val']['macro_f1']:.3f}"
                + (" (best so far)" if event["best"] else ""))
    return None


@dataclass(frozen=True)
class Ending:
    """How a training ended: done, cancelled, diverged or failed (with the traceback for the run's log)."""

    status: str
    message: str
    result: dict | None = None
    trace: str | None = None


def train_to_end(work: Callable[[], dict]) -> Ending:
    """Run `work` (a call of `train`) and say how it ended; every ending is returned, none raised, so a
    run always ends recorded, here or on a Ray node."""
    try:
        return Ending(Status.DONE, "finished", work())
    except Cancelled as e:
        return Ending(Status.CANCELLED, str(e))
    except Diverged as e:
        return Ending(Status.DIVERGED, str(e))
    except Exception as e:  # any failure ends the run failed
        return Ending(Status.FAILED, f"{type(e).__name__}: {e}", trace=traceback.format_exc())


def train_into(config: TrainConfig, folder: RunFolder, home: Path, on_event: Callable[[dict], None],
               should_stop: Callable[[], bool]) -> dict:
    """Train with a run folder as the outputs, and keep the result beside them."""
    result = train(config, folder, home, on_event, should_stop)
    folder.write_result(result)
    return result


def adapt_into(config: AdaptConfig, folder: RunFolder, home: Path, on_event: Callable[[dict], None],
               should_stop: Callable[[], bool]) -> dict:
    """Adapt a backbone to a dataset's texts (`core.train.pretrain`): the backbone goes under the studio home, the
    job's result (where it is, what it cost, its masked-LM loss before and after) beside its log."""
    from core.train.pretrain import adapt  # torch: only the worker of an adaptation needs it

    out = adapted_folder(config, home)
    if (out / RECORD).is_file():  # made meanwhile by another job of the same texts and settings: not made twice
        on_event({"type": "status", "message": f"{out.name} exists already: its backbone is used as it is"})
        record = json.loads((out / RECORD).read_text())
    else:
        record = adapt(config, out, home, on_event, should_stop)
    result = {"backbone": str(out), **{k: record[k] for k in ("cpu_seconds", "seconds", "steps", "texts", "precision",
                                                               "mlm_loss_before", "mlm_loss_after")}}
    folder.write_result(result)
    return result


def config_to_train(registry: Registry, run: Run) -> TrainConfig:
    """The run's config as stored; a run an older version queued, which resolved less at launch (such as the
    learning rate left to the method), is resolved as it starts and stored so, so its record says what it
    ran and `train` takes it."""
    if is_resolved(run.config):
        return run.config
    config = resolve(run.config, registry.home)
    registry.set_config(run.id, config)
    return config


@contextmanager
def failed_on_error(registry: Registry, run_id: str):
    """A foreground run that an error stops before it could record its end (the registry's disk full, say) is
    marked failed, where it can be: it never lingers as a run to be started again."""
    try:
        yield
    except BaseException as e:
        try:
            registry.finish(run_id, Status.FAILED, f"stopped before it could finish: {type(e).__name__}: {e}"[:500])
        except Exception:  # noqa: BLE001 - it ended already, or the registry cannot be written either
            pass
        raise


HEARTBEAT = 30.0  # seconds between a running run's heartbeats (`backend.STALE` counts them missed)


@contextmanager
def beating(registry: Registry, run_id: str, every: float):
    """A thread that refreshes the run's heartbeat while the block runs, whatever the run is doing (a long
    encode or test pass sends no progress for minutes): a stale heartbeat then means the process is hung or gone.
    A beat that cannot be written (a full disk) is skipped; the next one tries again."""
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every):
            try:
                registry.beat(run_id)
            except Exception:  # noqa: BLE001 - a missed beat is not the run's failure
                pass
    thread = threading.Thread(target=beat, name=f"heartbeat-{run_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


LATE_SIGNAL = 30.0  # seconds after a run of this process was cancelled in which a SIGTERM may still be its cancel's


def cancelled_here(registry: Registry, run_id: str) -> bool:
    """Whether this process ran another run that was cancelled as asked in the last `LATE_SIGNAL` seconds: a SIGTERM
    now is that cancel's, late. Any other SIGTERM (a user's, the system's) stops the run as before."""
    recent = time.time() - LATE_SIGNAL
    return any(r.pid == os.getpid() and r.id != run_id and r.cancel_requested and (r.ended or 0) > recent
               for r in registry.list(include_deleted=True, statuses=(Status.CANCELLED,), kind=None))


def execute_run(registry: Registry, run_id: str, extra: Callable[[dict], None] = lambda e: None) -> str:
    """Run a registered (and claimed) config to its end and record how it ended; returns the final status.
    A run cancelled before it could start is left as it is."""
    run = registry.get(run_id)
    stop = StopFlag(lambda: registry.get(run_id).cancel_requested, lambda: cancelled_here(registry, run_id))
    if threading.current_thread() is threading.main_thread():  # signals can only be set there
        signal.signal(signal.SIGTERM, stop.handle)
    try:
        registry.mark_running(run_id, os.getpid(), describe_device())
    except IllegalMove as e:
        log.info("not started: %s", e)
        return registry.get(run_id).status
    recorder = Recorder(registry, run)
    recorder.started()

    def on_event(event: dict) -> None:
        recorder(event)
        extra(event)

    folder = registry.folder(run_id)
    with beating(registry, run_id, HEARTBEAT):
        if run.kind == "adapt":
            ending = train_to_end(lambda: adapt_into(run.config, folder, registry.home, on_event, stop))
        else:
            ending = train_to_end(lambda: train_into(config_to_train(registry, run), folder, registry.home, on_event,
                                                     stop))
    if ending.trace:
        log.error("%s", ending.trace)  # into the run's log
    try:
        registry.finish(run_id, ending.status, ending.message, ending.result)
        log.info("%s", ending_line(ending))  # the log's last word, as the card's: how the run ended
    except IllegalMove as e:  # a cancel of a run that was just starting ended it first
        log.info("%s", e)
    recorder.ended()
    return registry.get(run_id).status


class Recorder:
    """Where a run's events go: the registry's rows, and once it runs, its live MLflow log where a store is named.
    The worker records its run through one, and the Ray dispatcher each of its tasks."""

    def __init__(self, registry: Registry, run: Run):
        self.registry, self.run = registry, run
        self.to_registry = registry_events(registry, run.id)
        self.live = None

    def started(self) -> None:
        self.live = live_log(self.registry, self.registry.get(self.run.id))

    def __call__(self, event: dict) -> None:
        self.to_registry(event)
        if self.live:
            self.live.on_event(event)

    def ended(self) -> None:
        if self.live:
            self.live.end()


def live_log(registry: Registry, run: Run):
    """The run's MLflow log as it trains, where a store is named (`core.runs.tracking.live`); else None, with
    MLflow never imported."""
    from core.runs.tracking.store import live_uri

    if not (uri := live_uri(registry)):
        return None
    from core.runs.tracking.live import LiveLog

    return LiveLog.start(registry, run, uri)


def ending_line(ending: Ending) -> str:
    """A run's last log line: its test scores when done, else why it ended."""
    test = (ending.result or {}).get("test")
    if ending.status == Status.DONE and (ending.result or {}).get("backbone"):
        return (f"done: the adapted backbone is {ending.result['backbone']} ({ending.result['cpu_seconds'] / 60:.1f} "
                f"CPU minutes; masked-LM loss {ending.result['mlm_loss_before']:.3f} → "
                f"{ending.result['mlm_loss_after']:.3f})")
    if ending.status == Status.DONE and test:
        return f"done: test accuracy {test['accuracy']:.3f}, macro-F1 {test['macro_f1']:.3f} ({test['n']:,} texts)"
    return f"{ending.status}: {ending.message}"
