"""The registry lifecycle and background runs: real worker processes, SIGKILL, cancel, the queue."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from core import runs as jobs
from core.data import CorpusConfig, DataSpec
from core.paths import REPO_ROOT
from core.runs import IllegalMove, Registry, RunError, RunFolder, check_run_id
from core.runs.processes import launch
from core.train import TrainConfig, resolve, run_label
from core.train.checkpoint import DESCRIPTION, WEIGHTS
from tests.helpers import (
    LONG,
    active_run,
    cfg,
    need_smollm2,
    running_on_a_dead_process,
    submit,
    tail_log,
    wait_for,
    written_at,
)


def test_lifecycle_in_one_process(tiny_backbone, studio_home):
    reg = Registry(studio_home)
    run_id = reg.create(cfg(tiny_backbone))
    assert reg.get(run_id).status == "queued" and (reg.folder(run_id).path / RunFolder.CONFIG).exists()
    assert reg.claim(run_id) and not reg.claim(run_id)  # exactly one claimer
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.update_progress(run_id, 0.5, 1, 12.0)
    reg.add_evaluation(run_id, 1, {"step": 5, "loss": 1.0, "val_macro_f1": 0.3})
    reg.finish(run_id, "done", metrics={"test": {"accuracy": 0.5, "macro_f1": 0.4, "mcc": 0.1}})
    with pytest.raises(IllegalMove, match="is done and cannot become failed"):
        reg.finish(run_id, "failed", "late")  # a finished run keeps its first ending
    run = reg.get(run_id)
    assert run.status == "done" and run.progress == 1.0 and run.summary["accuracy"] == 0.5
    assert reg.evaluations(run_id) == [{"evaluation": 1, "step": 5, "loss": 1.0, "val_macro_f1": 0.3}]
    reg.set_deleted(run_id)
    assert reg.list() == [] and len(reg.list(include_deleted=True)) == 1
    reg.set_deleted(run_id, False)
    assert [r.id for r in reg.list()] == [run_id]
    unwanted = reg.create(cfg(tiny_backbone))
    reg.request_cancel(unwanted)
    assert not reg.claim(unwanted)  # a run whose cancel was asked for never starts, even before it is marked


def test_a_run_is_named_with_its_labeled_count_from_its_draw_to_its_end(tiny_backbone, studio_home):
    """Issue 61: the monitor named a running run without "(25 labeled)" and added it once the run was done."""
    reg = Registry(studio_home)
    run_id = reg.create(cfg(tiny_backbone))
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    assert "labeled)" not in reg.get(run_id).name  # not drawn yet
    reg.set_rows(run_id, {"labeled": 25, "unlabeled": 0, "val_rows": 10, "test_rows": 60})
    drawn = reg.get(run_id).name
    from core.compare import distinct_names  # what the monitor, Compare and Classify show: the same name
    assert distinct_names(reg.list())[run_id] == drawn
    reg.finish(run_id, "done", metrics={"labeled": 25, "test": {"accuracy": 0.5, "macro_f1": 0.4, "mcc": 0.1}})
    assert "(25 labeled)" in drawn and reg.get(run_id).name == drawn == distinct_names(reg.list())[run_id]


@pytest.mark.parametrize("bad", ["../etc", "20260101-120000-zzzzzz", "", "x/../../y", "20260101-120000-a1b2c3/.."])
def test_run_ids_are_validated(bad, studio_home):
    with pytest.raises(RunError, match="not a run id"):
        check_run_id(bad)
    with pytest.raises(RunError):
        Registry(studio_home).get(bad)


def test_unknown_run_id(studio_home):
    with pytest.raises(RunError, match="no run 20260101-120000-abcdef"):
        Registry(studio_home).get("20260101-120000-abcdef")


def test_background_run_finishes_with_metrics_and_log(tiny_backbone, studio_home):
    reg = Registry(studio_home)
    run_id = submit(reg, cfg(tiny_backbone))
    run = wait_for(lambda: (r := reg.get(run_id)).status in ("done", "failed") and r, what="run end")
    assert run.status == "done", tail_log(reg, run_id)
    assert run.metrics["test"]["accuracy"] > 0 and reg.evaluations(run_id)
    assert "evaluation" in tail_log(reg, run_id)


def zombie_children() -> list[int]:
    """This process's children that have ended but were never waited for."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        if f"\nPPid:\t{os.getpid()}\n" in text and "\nState:\tZ" in text:
            found.append(int(status.parent.name))
    return found


def test_a_worker_is_reaped_the_moment_it_ends(tmp_path):
    """The dashboard starts workers: a finished one stayed its zombie child until the server stopped."""
    pid = launch(tmp_path, ["json.tool", "--help"], tmp_path / "log")  # a module that ends at once
    status = Path(f"/proc/{pid}/status")

    def ended() -> bool:  # read from /proc, not by waiting for it, which would reap it here
        try:
            return "\nState:\tZ" in status.read_text()
        except OSError:
            return True
    wait_for(ended, timeout=60, what="the process to end")
    wait_for(lambda: not status.exists(), timeout=10, what="the process to be reaped")
    assert pid not in zombie_children() and "json.tool" in (tmp_path / "log").read_text()


def test_sigkill_mid_run_ends_interrupted_and_leaves_no_partial_files(tiny_backbone, studio_home):
    reg = Registry(studio_home)
    run_id = submit(reg, cfg(tiny_backbone, **LONG))
    run = wait_for(lambda: (r := active_run(reg, run_id)).status == "running" and r.evaluations >= 1 and r,
                   what="first epoch")
    os.kill(run.pid, signal.SIGKILL)
    wait_for(lambda: jobs.reconcile(reg) or reg.get(run_id).status == "interrupted", what="interrupted")
    assert reg.get(run_id).status == "interrupted"
    assert f" interrupted: {reg.get(run_id).message}" in tail_log(reg, run_id, 5).splitlines()[-1]
    folder = reg.folder(run_id).path
    assert not [p for p in folder.rglob("*") if p.name.startswith(".") or p.suffix in (".partial", ".tmp")]
    with sqlite3.connect(reg.path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_run_killed_mid_write_is_swept_of_its_temporary_files(tiny_backbone, studio_home):
    """The SIGKILL above lands mid-write only by chance; here the leftovers of such a kill are set out by hand."""
    reg = Registry(studio_home)
    run_id = running_on_a_dead_process(reg, cfg(tiny_backbone))
    checkpoint = reg.folder(run_id).path / RunFolder.CHECKPOINT
    checkpoint.mkdir()
    kept = [checkpoint / DESCRIPTION, checkpoint / WEIGHTS, reg.folder(run_id).path / RunFolder.CONFIG]
    for path in kept[:2]:
        path.write_text("whole")
    # named as `atomic_write_bytes` and `Classifier.save` name their temporary files
    leftovers = [checkpoint / f".{DESCRIPTION}.51w3u34w.tmp", checkpoint / f".{WEIGHTS}.partial"]
    for path in leftovers:
        path.write_text("half")
    assert jobs.reconcile(reg) == [run_id]
    assert reg.get(run_id).status == "interrupted"
    assert not any(p.exists() for p in leftovers) and all(p.exists() for p in kept)
    assert (checkpoint / DESCRIPTION).read_text() == "whole"


def test_a_process_stopped_by_a_cancel_before_it_could_say_so_ends_cancelled(tiny_backbone, studio_home):
    """A walk cancelled three runs at once: one was still starting, died before its handler was set, and read
    "interrupted", as if it had crashed."""
    reg = Registry(studio_home)
    run_id = running_on_a_dead_process(reg, cfg(tiny_backbone))
    reg.request_cancel(run_id)
    assert jobs.reconcile(reg) == [run_id]
    run = reg.get(run_id)
    assert (run.status, run.message) == ("cancelled", "cancelled while its process was starting")
    assert tail_log(reg, run_id, 5).splitlines()[-1].endswith(" cancelled: cancelled while its process was starting")


def test_cancel_running_and_queued_runs(tiny_backbone, studio_home):
    reg = Registry(studio_home)
    jobs.set_concurrency(reg, 1)
    first = submit(reg, cfg(tiny_backbone, **LONG))
    second = submit(reg, cfg(tiny_backbone, seed=1))
    assert reg.get(second).status == "queued"  # one slot, taken by the first
    wait_for(lambda: active_run(reg, first).status == "running", what="first running")
    assert jobs.cancel(reg, second) == "cancelled"
    assert jobs.cancel(reg, first, grace=60) == "cancelled"
    assert "cancelled" in reg.get(first).message
    # each log says how its run ended (issue 95 item 8: a cancelled run's log had not said so)
    wait_for(lambda: "cancelled" in tail_log(reg, first, 5).splitlines()[-1], what="the log's last line")
    assert tail_log(reg, second, 5).splitlines()[-1].endswith(" cancelled: cancelled before it started")
    with pytest.raises(RunError, match="already cancelled"):
        jobs.cancel(reg, first)


def test_queue_runs_in_order_with_concurrency_one(tiny_backbone, studio_home):
    reg = Registry(studio_home)
    jobs.set_concurrency(reg, 1)
    ids = [submit(reg, cfg(tiny_backbone, seed=s)) for s in range(3)]
    assert [reg.get(i).status for i in ids[1:]] == ["queued", "queued"]
    wait_for(lambda: all(reg.get(i).status == "done" for i in ids), timeout=240, what="all done")
    runs = [reg.get(i) for i in ids]
    assert runs[0].ended <= runs[1].started and runs[1].ended <= runs[2].started
    # one process took them one after another (no new process and imports between them), each with its own log
    assert len({r.pid for r in runs}) == 1
    logs = [tail_log(reg, i, 200) for i in ids]
    assert all(log.count("done: test accuracy") == 1 for log in logs)


def test_a_registry_from_before_the_ray_backend_gains_its_columns(tiny_backbone, studio_home):
    studio_home.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(studio_home / "studio.db") as db:  # the schema as it was, with one run in it
        db.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, created REAL NOT NULL, started REAL, ended REAL, "
                   "status TEXT NOT NULL, config TEXT NOT NULL, label TEXT NOT NULL, pid INTEGER, device TEXT, "
                   "heartbeat REAL, progress REAL NOT NULL DEFAULT 0, epoch INTEGER NOT NULL DEFAULT 0, "
                   "samples_per_s REAL, message TEXT, metrics TEXT, cancel_requested INTEGER NOT NULL DEFAULT 0, "
                   "deleted INTEGER NOT NULL DEFAULT 0)")
        config = cfg(tiny_backbone)
        db.execute("INSERT INTO runs (id, created, status, config, label) VALUES (?, 1, 'done', ?, ?)",
                   ("20260101-120000-a1b2c3", config.to_json(), run_label(config)))
    reg = Registry(studio_home)
    old = reg.get("20260101-120000-a1b2c3")
    assert old.backend == "local" and old.resources is None and old.config == config
    new = reg.get(reg.create(config, "ray", {"cpus": 2.0, "gpu_fraction": 1.0}))
    assert new.backend == "ray" and new.resources == {"cpus": 2.0, "gpu_fraction": 1.0}
    assert old.rows is None and old.phase is None  # the columns added since, empty for an old run
    reg.set_rows(new.id, {"labeled": 3, "unlabeled": 0, "val_rows": 2, "test_rows": 2})
    assert reg.get(new.id).rows["labeled"] == 3


def test_nothing_the_studio_starts_reaches_the_internet(monkeypatch, tmp_path):
    """Importing `core` sets nothing; every entry point prepares the environment, and a run's process gets it
    before it imports anything (as do Ray's nodes, from the same table)."""
    from core.environment import STUDIO, prepare
    from core.runs import processes
    from core.runs.ray.dispatch import runtime_env

    for name in STUDIO:
        monkeypatch.delenv(name, raising=False)
    code = "import os, core, core.runs, core.train; print(sorted(k for k in {names} if k in os.environ))"
    out = subprocess.run([sys.executable, "-c", code.format(names=sorted(STUDIO))], capture_output=True, text=True,
                         cwd=REPO_ROOT, env={k: v for k, v in os.environ.items() if k not in STUDIO}, check=True)
    assert out.stdout.strip() == "[]"  # no import side effect
    prepare()
    assert {k: os.environ[k] for k in STUDIO} == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                                                 "RAY_USAGE_STATS_ENABLED": "0", "MKL_CBWR": "AUTO,STRICT",
                                                 "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
                                                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                                                 "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
    assert runtime_env()["env_vars"].items() >= STUDIO.items()
    for name in STUDIO:  # a run's process started from a shell without them still gets them
        monkeypatch.delenv(name)
    started = {}
    monkeypatch.setattr(processes.subprocess, "Popen", lambda args, **kw: started.update(kw["env"]) or
                        type("Proc", (), {"pid": 1, "wait": lambda self: 0})())
    processes.launch(tmp_path, ["core.runs.worker"], tmp_path / "worker.log")
    assert {k: started[k] for k in STUDIO} == STUDIO


def test_every_training_ending_is_a_value():
    """One mapping from how `train` ended to a run status, shared by workers and Ray tasks."""
    from core.runs.execute import Ending, train_to_end
    from core.train import Cancelled, Diverged

    def raises(error: Exception):
        def work() -> dict:
            raise error
        return work

    assert train_to_end(lambda: {"test": {}}) == Ending("done", "finished", {"test": {}})
    assert train_to_end(raises(Cancelled("cancelled by request"))) == Ending("cancelled", "cancelled by request")
    assert train_to_end(raises(Diverged("loss is NaN"))) == Ending("diverged", "loss is NaN")
    failed = train_to_end(raises(OSError(28, "No space left on device")))
    assert failed.status == "failed" and failed.message == "OSError: [Errno 28] No space left on device"
    assert failed.result is None and "Traceback" in failed.trace and "No space left" in failed.trace


def test_encoding_is_a_phase_with_its_progress_and_time_left(studio_home, monkeypatch):
    from core.runs.execute import registry_events

    reg = Registry(studio_home)
    run_id = reg.create(resolve(TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))),
                                studio_home))
    clock = iter([100.0, 130.0, 160.0, 200.0, 200.0])  # one reading per event (two for progress)
    monkeypatch.setattr("core.runs.execute.time.monotonic", lambda: next(clock))
    on_event = registry_events(reg, run_id)
    on_event({"type": "features", "done": 0, "total": 4000})
    assert reg.get(run_id).message == "encoding texts: 0 of 4,000 (0%)"
    on_event({"type": "features", "done": 1000, "total": 4000})  # 1,000 texts in 30 s: 90 s to go
    assert reg.get(run_id).message == "encoding texts: 1,000 of 4,000 (25%), about 2 min left"
    on_event({"type": "features", "done": 4000, "total": 4000, "tokens": 300_000.0})
    assert reg.get(run_id).message == "encoding texts: 4,000 of 4,000 (100%)"
    from core.runs.encoding_speed import SPEEDS, encoder_key

    # 300,000 tokens in 60 s, kept for the next estimate of this run's encoder
    assert json.loads(reg.setting(SPEEDS)) == {encoder_key(reg.get(run_id).config): 5000.0}
    run = reg.get(run_id)
    assert (run.phase, run.progress) == ("encoding", 1.0)  # the progress column shows the encoding's own progress
    encoding_began = run.phase_started
    on_event({"type": "progress", "step": 1, "total_steps": 10})
    run = reg.get(run_id)
    assert (run.phase, run.progress) == ("training", 0.1) and run.phase_started >= encoding_began


def test_a_frozen_grids_estimate_uses_the_encoding_speed_measured_here(studio_home):
    from core.runs.encoding_speed import SPEEDS, encoder_key
    from core.runs.estimate import grid_seconds

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    head = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None), studio_home)  # as a grid gives them
    gan = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert"), studio_home)
    texts = ["x" * 400] * 10  # 100 tokens each by their characters, under the max length
    assert head.max_len >= 102 and encoder_key(head) == encoder_key(gan)  # one encoder, one speed
    reg.set_setting(SPEEDS, json.dumps({encoder_key(head): 1000}))
    slow = [grid_seconds(reg, [c], 1000, 100, 100, 6, texts).seconds for c in (head, gan)]
    reg.set_setting(SPEEDS, json.dumps({encoder_key(head): 10_000}))
    fast = [grid_seconds(reg, [c], 1000, 100, 100, 6, texts).seconds for c in (head, gan)]
    # labeled, validation (5/class as it labels) and test only; GAN-BERT: the pool too; 102 tokens a text
    assert slow[0] - fast[0] == pytest.approx((30 + 30 + 100) * 102 * (1 / 1000 - 1 / 10_000))
    assert slow[1] - fast[1] == pytest.approx((1000 + 30 + 100) * 102 * (1 / 1000 - 1 / 10_000))


def test_a_repeated_grid_prices_its_cached_test_split_apart_from_the_pool(studio_home):
    """After a first grid the test split is all in the feature store and the pool mostly not: one share for both
    priced the test split as mostly to encode again (a repeated SmolLM2 grid on L2R at 1.58x its time)."""
    from core.runs.encoding_speed import SPEEDS, encoder_key
    from core.runs.estimate import grid_seconds

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    head = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None), studio_home)
    reg.set_setting(SPEEDS, json.dumps({encoder_key(head): 1000}))
    test_texts = ["t" * 400] * 100
    texts = ["p" * 400] * 1000 + test_texts  # 102 tokens a text, as the pool's

    def cached(config, some):  # the test split all cached, a fifth of the rest
        return 1.0 if some is test_texts else 0.2
    apart = grid_seconds(reg, [head], 1000, 100, 100, 6, texts, test_texts=test_texts, cached=cached)
    together = grid_seconds(reg, [head], 1000, 100, 100, 6, texts, cached=lambda config, some: 0.2)
    # labeled and validation rows (30 + 30) at the pool's share; the 100 test texts at theirs
    assert together.seconds - apart.seconds == pytest.approx(100 * 0.8 * 102 / 1000)
    assert (apart.cached, apart.cached_test) == (0.2, 1.0)


def test_encoding_is_kept_per_encoder_in_tokens(studio_home):
    """One figure for every pass, scaled by the max length, was overwritten by each: after a grid of short
    questions an L2R estimate was 2.7x too fast, and a SmolLM2 pass set the speed MiniLM's grids read. A pass is
    kept in tokens/s for its encoder (backbone, features, precision, device, engine); a grid is priced by the
    tokens its texts hold. An encoder not measured here is priced from one that was, scaled by their work; an
    earlier studio's one figure (MiniLM's texts/s at 128 tokens) stands until then."""
    from core.runs.encoding_speed import (
        FALLBACK,
        LEGACY_SPEED,
        encoder_key,
        encoding_cost,
        measured,
        remember_encoding,
        tokens_per_second,
    )
    from core.runs.estimate import grid_seconds

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    minilm = TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="features-lr", max_len=256,
                         precision="fp32", encoder_engine="torch")
    smollm2, both = minilm.with_(backbone="smollm2-135m"), minilm.with_(backbone="smollm2-135m", features="both")
    assert encoding_cost(minilm) == 1.0 and encoding_cost(smollm2) == pytest.approx(7.5)
    assert encoding_cost(both) == pytest.approx(11.25 * 1.3)
    assert tokens_per_second(reg, minilm) == FALLBACK["fp32"]  # nothing measured: a laptop's figure
    reg.set_setting(LEGACY_SPEED, "50")  # an earlier studio's measured MiniLM speed: 50 texts/s at 128 tokens
    assert tokens_per_second(reg, minilm) == 50 * 128
    assert tokens_per_second(reg, smollm2) == pytest.approx(50 * 128 / 7.5)
    remember_encoding(reg, 1000, 20_000.0, 100.0, smollm2)  # 200 tokens/s on SmolLM2's layer 20
    remember_encoding(reg, 50, 1_000.0, 100.0, minilm)  # too few texts to tell a speed: not kept
    assert measured(reg) == {encoder_key(smollm2): 200.0}
    assert tokens_per_second(reg, smollm2) == 200.0  # its own
    assert tokens_per_second(reg, minilm) == pytest.approx(200.0 * 7.5)  # scaled from it, not the legacy figure
    remember_encoding(reg, 1000, 30_000.0, 10.0, minilm)
    assert tokens_per_second(reg, minilm) == 3000.0 and tokens_per_second(reg, smollm2) == 200.0  # each its own
    assert tokens_per_second(reg, both) == pytest.approx(statistics.median([200.0 * 7.5, 3000.0]) / (11.25 * 1.3))
    # a grid of long texts takes longer than one of short texts on the same encoder, by their tokens
    short, long = ["a short question?"] * 100, ["word " * 400] * 100
    base = grid_seconds(reg, [minilm], 1000, 100, 100, 6, ["x"] * 100).seconds
    took = {n: grid_seconds(reg, [minilm], 1000, 100, 100, 6, t).seconds - base for n, t in (("s", short), ("l", long))}
    assert took["l"] / took["s"] == pytest.approx((256 - 2.25) / (17 / 4 + 2 - 2.25))  # "x": 2.25 tokens
    reg.set_setting("encode_tokens_per_s", "{not json")  # a damaged setting: as if none were measured
    assert measured(reg) == {} and tokens_per_second(reg, minilm) == 50 * 128


def finished(reg: Registry, config: TrainConfig, seconds: float, encode: float = 0.0, labeled: int = 30,
             checkpointing: bool = False, startup: float = 0.0) -> str:
    """A run that ended done here `seconds` (of which `encode` encoding) after its start, which came `startup`
    after its claim (its worker process starting; 0: chained after another run), as the worker records it."""
    run_id = reg.create(config)
    assert reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.finish(run_id, "done", "finished", {"encode_seconds": encode, "labeled": labeled, "unlabeled": 970,
                                            "val_rows": 100, "test_rows": 100, "test": {},
                                            "gradient_checkpointing": checkpointing})
    with sqlite3.connect(reg.path) as db:
        db.execute("UPDATE runs SET claimed = ?, started = 1000, ended = ? WHERE id = ?",
                   (1000 - startup, 1000 + seconds, run_id))
    return run_id


def test_a_frozen_minilm_grid_is_told_smollm2s_gain_and_its_time_without_converting_it(studio_home):
    """Issue 78's decision: MiniLM stays the default, and the form says what SmolLM2's hidden states gained and what
    this grid would take on them. Estimating a SmolLM2 grid asked for its folder, which converts its GGUF file
    (some 25 s on the form) when no run has used it yet."""
    from core.backbone.packaged import CONVERTED_DIR, SMOLLM2
    from core.compare.advice import MEASURED, backbone_advice
    from core.runs.estimate import grid_seconds, roughly

    need_smollm2()
    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    minilm = TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="features-lr", max_len=128,
                         precision="fp32", encoder_engine="torch")
    grid = [minilm.with_(seed=s) for s in (0, 1)]
    texts = [f"text {i}" for i in range(50)]
    smollm2 = [c.with_(backbone=SMOLLM2, features="hidden") for c in grid]
    there = grid_seconds(reg, smollm2, 1000, 100, 100, 6, texts).seconds
    assert not (studio_home / CONVERTED_DIR / SMOLLM2).exists()
    here = grid_seconds(reg, grid, 1000, 100, 100, 6, texts).seconds
    said = backbone_advice(reg, grid, here, 1000, 100, 100, 6, texts)
    assert f"This grid on SmolLM2 would take {roughly(there)} here, against {roughly(here)} on MiniLM." in said
    assert there > here
    assert all(f"{g.difference:+.3f} on {g.corpus}" in said for g in MEASURED)
    tfidf = minilm.with_(method="tfidf-lr")
    assert backbone_advice(reg, [*grid, tfidf], here, 1000, 100, 100, 6) is not None  # TF-IDF reads no backbone
    for other in (smollm2, [minilm.with_(frozen=False, method="finetune")], [tfidf], []):  # on SmolLM2 already,
        assert backbone_advice(reg, other, here, 1000, 100, 100, 6) is None  # training MiniLM, no encoder, none


def test_a_grid_done_before_is_estimated_from_its_runs_times(studio_home):
    """The issue's grid: 12 runs estimated 'under a minute' took 447.7 s. Replayed: the same grid with other
    seeds is estimated from the runs' own times (less their encoding), within a factor of 1.5."""
    from core.backbone.token_count import tokens_per_text
    from core.runs.encoding_speed import FALLBACK
    from core.runs.estimate import grid_seconds, texts_to_encode
    from core.train.feature_store import feature_store, text_hashes, write_shard

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    grid = [resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method=m, seed=s), studio_home)
            for m in ("finetune", "ganbert", "features-lr") for s in range(4)]
    took = {"finetune": 20.0, "ganbert": 115.0, "features-lr": 8.0}
    for c in grid:  # the grid's first run started its worker process, 6 s from its claim
        finished(reg, c, took[c.method] + (30.0 if c.seed == 0 else 0.0), encode=30.0 if c.seed == 0 else 0.0,
                 startup=6.0 if c == grid[0] else 0.0)
    actual = 6.0 + sum(took[c.method] for c in grid)  # 578 s, the features cached by the first runs
    again = [c.with_(seed=c.seed + 4) for c in grid]
    texts = [f"text {i}" for i in range(1200)]
    store = feature_store(studio_home, grid[0].resolved_backbone(studio_home), grid[0].max_len,
                          grid[0].resolved_pooling, grid[0].precision == "bf16", grid[0].encoder_engine)
    write_shard(store, text_hashes(texts[:600]), np.zeros((600, 4), np.float32))  # half of them encoded
    half = grid_seconds(reg, again, 1000, 100, 100, 6, texts=texts)
    write_shard(store, text_hashes(texts[600:]), np.zeros((600, 4), np.float32))
    estimate = grid_seconds(reg, again, 1000, 100, 100, 6, texts=texts)
    assert (estimate.from_history, estimate.guessed) == (12, 0)
    assert estimate.seconds == pytest.approx(actual)  # the features are cached: no encoding counted
    # GAN-BERT reads the whole pool; each of 4 seeds validates on 30 of the split's 100, overlapping: 76 in all
    assert texts_to_encode(again, 1000, 100, 100, 6) == pytest.approx(1000 + 100 * (1 - 0.7 ** 4) + 100)
    speed = FALLBACK["bf16" if grid[0].precision == "bf16" else "fp32"] / tokens_per_text(texts, grid[0].max_len)
    assert half.seconds == pytest.approx(actual + 0.5 * texts_to_encode(again, 1000, 100, 100, 6) / speed)
    assert estimate.words() == "about 10 min (from runs finished on this machine)"
    # another amount of a method run here: its runs' times scaled by the method's model, still from history
    other = grid_seconds(reg, [grid[4].with_(per_class=20)], 1000, 100, 100, 6)
    assert other.from_history == 1 and other.seconds >= took["ganbert"] * 0.9
    # a method never run here: a stated rough guess
    guess = grid_seconds(reg, [grid[0].with_(method="tfidf-lr")], 1000, 100, 100, 6)
    assert guess.guessed == 1 and "rough guess" in guess.words()


def test_a_run_that_checkpointed_lends_its_time_without_the_slowdown(tmp_path, monkeypatch, studio_home):
    """A finished run's time is scaled by the method's model of both runs: one that recorded gradient
    checkpointing took longer for it, and a run that will not checkpoint is estimated without it."""
    from core.runs.estimate import RUN_OVERHEAD, STARTUP, grid_seconds
    from core.train import memory, method_for

    monkeypatch.setattr(memory, "free_bytes", lambda device: 1000 * 2 ** 30)  # the new run fits
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    ran = resolve(TrainConfig(data=data, method="finetune", per_class=5, fraction=None, max_len=512), studio_home)
    new = ran.with_(per_class=20)  # not the same settings: scaled, not taken as they are
    estimates = {}
    for checkpointed in (True, False):
        reg = Registry(tmp_path / str(checkpointed))
        finished(reg, ran, 600.0, checkpointing=checkpointed)
        estimates[checkpointed] = grid_seconds(reg, [new], 1000, 100, 100, 6)
        assert estimates[checkpointed].from_history == 1
    theirs = {c: method_for(ran).seconds(ran, 30, 970, 100, 100, c) + RUN_OVERHEAD for c in (True, False)}
    # no run here began a process: the worker's start is the laptop figure, once
    assert (estimates[True].seconds - STARTUP) / (estimates[False].seconds - STARTUP) == pytest.approx(
        theirs[False] / theirs[True])
    assert estimates[True].seconds < estimates[False].seconds


def test_a_grid_launched_again_queues_only_what_is_not_done_or_under_way(studio_home):
    from core.runs import Status, not_yet_run

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    grid = [resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, seed=s), studio_home)
            for s in range(4)]
    finished(reg, grid[0], 10.0)
    reg.create(grid[1])  # queued
    cancelled = reg.create(grid[2])
    reg.finish(cancelled, Status.CANCELLED, "cancelled")
    assert not_yet_run(reg, grid) == grid[2:]  # the cancelled run and the new seed
    reg.set_deleted(reg.list(statuses=(Status.DONE,))[0].id)
    assert not_yet_run(reg, grid) == [grid[0], *grid[2:]]  # a deleted run is gone from the studio


def test_a_runs_time_is_read_from_its_own_clock_where_it_kept_one(studio_home):
    """A run restored from the benches' records starts and ends within a millisecond of its restoring: the
    regime study's plan read twelve 500-step GAN-BERT runs on L2R as "under a minute"."""
    from core.runs.estimate import History, train_seconds

    reg = Registry(studio_home)
    config = resolve(TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2)),
                                 frozen=True, per_class=5, fraction=None, method="ganbert"), studio_home)
    run_id = reg.create(config)
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.finish(run_id, "done", "restored", {"seconds": 150.0, "encode_seconds": 6.0, "test": {}})
    assert train_seconds(reg.get(run_id)) == pytest.approx(144.0)
    assert History(reg.list()).alike(config.with_(seed=1)) == pytest.approx(144.0)
    older = finished(reg, config.with_(seed=2), 20.0, encode=5.0)  # before runs kept their clock: start to end
    assert train_seconds(reg.get(older)) == pytest.approx(15.0)


def test_time_left_follows_the_phase_and_the_history(studio_home):
    from core.runs.estimate import History, time_left

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    config = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert"), studio_home)
    finished(reg, config, 120.0)
    history = History(reg.list())
    run_id = reg.create(config.with_(seed=1))
    assert time_left(reg.get(run_id), history, 0.0) == 120.0  # queued: as long as the runs like it took
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")  # preparing: no phase yet, so the runs alike less what has passed
    assert time_left(reg.get(run_id), history, reg.get(run_id).claimed + 20) == pytest.approx(100.0)
    assert time_left(reg.get(run_id), history, reg.get(run_id).claimed + 130) is None  # past it: unknown, not 0
    reg.update_progress(run_id, 0.25, 0, phase="encoding")
    begun = reg.get(run_id).phase_started
    # a quarter encoded in 10 s: 30 s of encoding left, then the 120 s its runs took
    written_at(reg, run_id, begun + 10)
    assert time_left(reg.get(run_id), history, begun + 10) == pytest.approx(30 + 120)
    reg.update_progress(run_id, 0.05, 0)  # training began: early on, mostly history (pace's weight (0.05 × 3)²)
    pace = 1 * 0.95 / 0.05
    written_at(reg, run_id, reg.get(run_id).phase_started + 1)
    assert time_left(reg.get(run_id), history, reg.get(run_id).phase_started + 1) == pytest.approx(
        (1 - 0.15 ** 2) * 0.95 * 120 + 0.15 ** 2 * pace)
    reg.update_progress(run_id, 0.5, 0)  # then its own pace since training began, not since the run began
    written_at(reg, run_id, reg.get(run_id).phase_started + 40)
    assert time_left(reg.get(run_id), history, reg.get(run_id).phase_started + 40) == pytest.approx(40, rel=0.01)
    # between two writes it falls with the clock, where it had counted up (the pace held still, the time not)
    assert time_left(reg.get(run_id), history, reg.get(run_id).phase_started + 50) == pytest.approx(30, rel=0.01)


def test_a_runs_first_steps_move_its_time_left_little_from_the_estimate(studio_home):
    """A 12-s run showed 2 s left when 10 were: its first steps run faster than its evaluations and test pass. A
    walk's 100-s run read "3m 34s" at 2%: there its first steps ran slower."""
    from core.runs.estimate import History, time_left

    reg = Registry(studio_home)
    config = resolve(TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2)),
                                 frozen=True, per_class=5, fraction=None), studio_home)
    finished(reg, config, 12.0)
    run_id = reg.create(config.with_(seed=1))
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.update_progress(run_id, 0.02, 0)  # 2% of the steps in 2 s: its pace says 98 s left
    written_at(reg, run_id, reg.get(run_id).phase_started + 2)
    assert time_left(reg.get(run_id), History(reg.list()), reg.get(run_id).phase_started + 2) < 1.05 * 0.98 * 12
    reg.update_progress(run_id, 0.2, 0)  # a fifth of the steps in 0.5 s: its pace says 2 s left
    written_at(reg, run_id, reg.get(run_id).phase_started + 0.5)
    assert time_left(reg.get(run_id), History(reg.list()), reg.get(run_id).phase_started + 0.5) > 0.6 * 0.8 * 12
    reg.update_progress(run_id, 0.6, 0)  # past a third of its steps, its own pace
    written_at(reg, run_id, reg.get(run_id).phase_started + 6)
    assert time_left(reg.get(run_id), History(reg.list()), reg.get(run_id).phase_started + 6) == pytest.approx(4)


def test_a_runs_pace_is_its_time_left_after_some_minutes_whatever_its_share_of_steps(studio_home):
    """Issue 95 item 4: 10 of 150 steps in 12 minutes, and the monitor still read the launch estimate (1 h 12 min →
    1 h 10 min over 12 minutes) where the pace said about 2.3 h more."""
    from core.runs.estimate import PACE_TRUSTED, History, time_left

    reg = Registry(studio_home)
    config = resolve(TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2)),
                                 frozen=True, per_class=5, fraction=None), studio_home)
    finished(reg, config, 72 * 60.0)
    run_id = reg.create(config.with_(seed=1))
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.update_progress(run_id, 10 / 150, 0)
    began = reg.get(run_id).phase_started
    written_at(reg, run_id, began + 12 * 60)
    assert 12 * 60 > PACE_TRUSTED
    assert time_left(reg.get(run_id), History(reg.list()), began + 12 * 60) == pytest.approx(12 * 60 * 14, rel=0.01)


def test_time_left_while_encoding_counts_the_training_to_come_from_the_rows_drawn(studio_home):
    """With no run alike finished here, the monitor showed the encoding's time alone: a run at 'about 1 min'
    then trained for ten more."""
    from core.runs.estimate import ROWS, History, run_estimate, time_left
    from core.runs.execute import registry_events

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    config = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert"), studio_home)
    history = History(reg.list())
    run_id = reg.create(config)
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.update_progress(run_id, 0.25, 0, phase="encoding")
    begun = reg.get(run_id).phase_started
    written_at(reg, run_id, begun + 10)
    assert reg.get(run_id).rows is None and time_left(reg.get(run_id), history, begun + 10) is None  # not yet known
    rows = {"labeled": 30, "unlabeled": 900, "val_rows": 100, "test_rows": 200}
    registry_events(reg, run_id)({"type": "data", **rows, "fraction": 0.03})
    assert reg.get(run_id).rows == rows
    training, measured = run_estimate(history, config, tuple(rows[k] for k in ROWS))
    assert not measured and training > 0
    assert time_left(reg.get(run_id), history, begun + 10) == pytest.approx(30 + training)


def test_a_queued_runs_time_left_counts_its_wait_for_a_slot(studio_home):
    """Sixth in the queue, a run showed its own 13 s as its time left."""
    from core.runs.estimate import History, times_left

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    config = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert"), studio_home)
    finished(reg, config, 100.0)  # a run like these takes 100 s here
    running = reg.create(config.with_(seed=1))
    reg.claim(running)
    reg.mark_running(running, os.getpid(), "CPU")
    reg.update_progress(running, 0.5, 0)
    queued = [reg.create(config.with_(seed=s)) for s in (2, 3, 4)]
    began = reg.get(running)
    now = began.phase_started + 50  # half its steps in 50 s: 50 s to go, on the pace of the run that ended
    written_at(reg, running, now)
    assert began.phase_started - began.claimed < 1
    history = History(reg.list())
    one = times_left(reg.list(), history, now, slots=1)
    assert one[running] == pytest.approx(50) and [one[q] for q in queued] == pytest.approx([150, 250, 350], rel=0.01)
    two = times_left(reg.list(), history, now, slots=2)  # a free slot: the first queued run starts now
    assert [two[q] for q in queued] == pytest.approx([100, 150, 200], rel=0.01)
    # the machine now three times slower (a walk's was loaded by other work): the runs queued behind take longer
    written_at(reg, running, began.phase_started + 150)
    slow = times_left(reg.list(), history, began.phase_started + 150, slots=1)
    assert slow[running] == pytest.approx(150) and [slow[q] for q in queued] == pytest.approx([450, 750, 1050],
                                                                                              rel=0.01)
    # at its first steps a run's pace says little (5% in 15 s, 3x slow if it held): the queue behind keeps its times
    reg.update_progress(running, 0.05, 0)
    written_at(reg, running, began.phase_started + 15)
    early = times_left(reg.list(), history, began.phase_started + 15, slots=1)
    assert early[queued[0]] - early[running] == pytest.approx(100, rel=0.01)  # 114 before: the pace swung it
    reg.update_progress(running, 0.5, 0)
    written_at(reg, running, now)
    unknown = reg.create(config.with_(max_len=256, seed=5))  # nothing alike has finished: unknown, and so behind it
    later = reg.create(config.with_(seed=6))
    left = times_left(reg.list(), History(reg.list()), now, slots=1)
    assert left[unknown] is None and left[later] is None


def test_the_monitor_puts_what_runs_first_and_names_runs_apart(studio_home):
    from core.compare import monitor_frame

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    config = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert"), studio_home)
    done = finished(reg, config, 120.0)
    queued = reg.create(config.with_(max_len=256))
    running = reg.create(config.with_(seed=1))
    reg.claim(running)
    reg.mark_running(running, os.getpid(), "CPU")
    reg.update_progress(running, 0.4, 0, phase="encoding", message="encoding texts: 400 of 1,000 (40%)")
    table = monitor_frame(reg.list(), time.time(), 1)
    assert table["run_id"].tolist() == [running, queued, done]
    assert list(table.columns[:7]) == ["status", "phase", "progress", "time left", "test macro-F1", "seed", "run"]
    assert table.set_index("run_id")["seed"].to_dict() == {running: 1, queued: 0, done: 0}  # whole, before the name
    assert table.iloc[0][["phase", "progress"]].tolist() == ["encoding", 40]
    # `runs` says what the share counts: it went from 53% to 28% when encoding ended and training began
    assert (reg.get(running).summary["phase"], reg.get(done).summary["phase"]) == ("encoding", None)
    reg.request_cancel(running)  # the row said "running, encoding" for 13 s after Cancel, with no word of it
    assert monitor_frame(reg.list(), time.time(), 1).iloc[0]["phase"] == "stopping"
    names = dict(zip(table["run_id"], table["run"]))  # in the name: a column of its own sat a scroll away
    assert "(max length 256) @ " in names[queued] and "(max length 128) @ " in names[done]
    # another seed says it too: runs of its method differ in max length, and it is named as its group is
    assert names[running] == reg.get(running).name.replace(" @ ", " (max length 128) @ ")


def test_estimates_read_as_words():
    assert jobs.roughly(20) == "under a minute" and jobs.roughly(400) == "about 7 min"
    assert jobs.roughly(7500) == "about 2 h 05 min"


def test_a_busy_machine_is_said_to_make_runs_slower_than_estimated(studio_home):
    from core.runs.estimate import outside_work

    registry, now = Registry(studio_home), time.time()
    assert outside_work(registry, now, load=1.4, cores=2) is None  # a 2-core laptop with a browser open
    assert outside_work(registry, now, load=1.9, cores=2) == (
        "Other work keeps this machine busy (load 1.9 on 2 cores over the last minute): runs will take longer "
        "than estimated while it lasts.")
    run_id = registry.create(TrainConfig(method="tfidf-lr"))
    assert outside_work(registry, now, load=1.9, cores=2) is None  # the studio's own run: the queue counts it
    registry.claim(run_id)
    registry.mark_running(run_id, os.getpid(), "CPU")
    registry.finish(run_id, "done")
    assert outside_work(registry, time.time(), load=1.9, cores=2) is None  # its load lingers in the average
    assert outside_work(registry, time.time() + 61, load=1.9, cores=2) is not None


def test_a_runs_log_reads_as_sentences_not_progress_ticks():
    from core.runs.execute import log_line

    assert log_line({"type": "progress", "step": 3, "total_steps": 10}) is None
    assert log_line({"type": "features", "done": 64, "total": 4000}) is None
    assert log_line({"type": "features", "done": 0, "total": 4000}) == "encoding 4,000 texts"
    assert log_line({"type": "features", "done": 4000, "total": 4000}) == "encoding 4,000 texts: done"
    line = log_line({"type": "evaluation", "index": 2, "step": 20, "total_steps": 100, "losses": {"loss": 0.5},
                     "val": {"accuracy": 0.5, "macro_f1": 0.4, "mcc": 0.1}, "best": True})
    assert line == ("evaluation 2 at step 20/100: loss 0.5000; validation accuracy 0.500, macro-F1 0.400 "
                    "(best so far)")


def test_run_details_hold_the_config_metrics_duration_and_selection(tiny_backbone, studio_home):
    from core.compare import run_details

    reg = Registry(studio_home)
    run_id = submit(reg, cfg(tiny_backbone, steps=4, evaluations=2))  # a worker process, which writes the log
    wait_for(lambda: reg.get(run_id).status == "done", timeout=180, what="the run to finish")
    details = run_details(reg.get(run_id))
    assert details["status"] == "done" and details["config"]["steps"] == 4 and details["steps"] == 4
    assert set(details["test"]) == {"accuracy", "macro_f1", "mcc"} and details["duration"].endswith("s")
    assert details["selection"] in ("best", "last") and details["selection_reason"]
    log = reg.folder(run_id).log.read_text()
    assert "encoding" in log and "{'type'" not in log  # sentences, not event dictionaries


def test_a_file_with_the_bytes_of_one_runs_read_is_named_as_they_named_it(studio_home, tmp_path):
    """Uploaded after runs on the same file loaded by path, it was a second dataset: its grid ran again and its
    runs never pooled with theirs in Compare."""
    from core.data import store_upload
    from core.runs import as_runs_read_it
    from core.runs.known_files import digest

    rows = b'{"text": "one", "label": 0}\n{"text": "two", "label": 1}\n'
    (tmp_path / "mine").mkdir()
    train, test = tmp_path / "mine" / "train.jsonl", tmp_path / "mine" / "dev.jsonl"
    train.write_bytes(rows)
    test.write_bytes(rows + b'{"text": "three", "label": 0}\n')
    registry = Registry(studio_home)
    registry.create(TrainConfig(data=DataSpec(train=str(train), test=str(test)), method="tfidf-lr"))
    uploads = studio_home / "uploads"
    upload = DataSpec(train=str(store_upload(rows, "train.jsonl", uploads)),
                      test=str(store_upload(b'{"text": "new", "label": 1}\n', "dev.jsonl", uploads)))
    spec, notes = as_runs_read_it(registry, upload)
    assert (spec.train, spec.test) == (str(train), upload.test)  # the test file's bytes are new: kept as loaded
    assert notes == [f"train.jsonl has the same bytes as {train}, which runs here read: it is read from there, so "
                     "those runs count for this dataset."]
    assert as_runs_read_it(registry, DataSpec(train=str(train))) == (DataSpec(train=str(train)), [])  # itself
    train.write_bytes(rows + rows)  # changed since: no longer the upload's bytes, and read again to know it
    assert digest(registry, str(train)) != digest(registry, upload.train)
    assert as_runs_read_it(registry, upload) == (upload, [])


def test_a_worker_a_test_starts_is_stopped_when_the_test_ends(studio_home):
    """`python -m core runs` in a test had started a queued run's worker that trained on after the test, through the
    next tests and a benchmark."""
    from tests.conftest import stop_processes_of

    studio_home.mkdir(parents=True, exist_ok=True)
    # stopped at once, as a worker launched just before a test ends: CI once read its environ mid-exec, empty
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop_processes_of(studio_home)  # what the fixture does when a test ends
    assert child.wait(timeout=10) != 0


def test_runs_at_once_on_a_cpu_split_its_cores(studio_home, monkeypatch):
    """Two workers of all the cores each on 2 cores ran a third of their speed together: threads past the cores
    wait on each other."""
    from core.runs import local

    monkeypatch.setattr(local.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(local.os, "cpu_count", lambda: 8)
    assert [local.threads_per_run(n) for n in (1, 2, 3, 16)] == [8, 4, 2, 1]
    started = []
    monkeypatch.setattr(local, "launch", lambda home, args, log, threads=None: started.append(threads) or 4242)
    reg = Registry(studio_home)
    jobs.set_concurrency(reg, 2)
    configs = [TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2)), seed=s)
               for s in (0, 1)]
    jobs.enqueue(reg, configs)
    assert started == [4, 4]


def test_an_estimate_encodes_what_the_pool_limit_draws_and_times_the_process_start_here(studio_home):
    """A walk's pool-1,000 grid on L2R was estimated with all 11,421 pool texts encoded, and its 4 frozen runs
    each paid a process start the grid pays once."""
    from core.runs.estimate import History, grid_seconds, texts_to_encode

    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    gan = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert",
                              unlabeled_limit=1000), studio_home)
    pool, split, test = 11_421, 1_242, 1_867
    one = texts_to_encode([gan], pool, split, test, 5)
    assert one == pytest.approx(25 + 1000 + 25 + test)  # its labeled rows, its 1,000 and its validation rows
    # a second seed draws other rows, which overlap the first's as random draws do
    two = texts_to_encode([gan, gan.with_(seed=1)], pool, split, test, 5)
    assert two == pytest.approx(pool * (1 - (1 - 1025 / pool) ** 2) + split * (1 - (1 - 25 / split) ** 2) + test)
    # the control with the same seed reads the same draw; the head reads no unlabeled texts
    head = gan.with_(method="finetune", unlabeled_limit=None)
    assert texts_to_encode([gan, gan.with_(adversarial=False), head], pool, split, test, 5) == pytest.approx(one)
    assert texts_to_encode([gan.with_(unlabeled_limit=None)], pool, split, test, 5) == pytest.approx(
        pool + 25 + test)
    reg = Registry(studio_home)
    small, whole = (grid_seconds(reg, [gan.with_(unlabeled_limit=n)], pool, split, test, 5).seconds
                    for n in (1000, None))
    assert whole > 2 * small
    # the process start, timed from a run that began a worker process (the chained ones start within a second)
    finished(reg, head, 5.0, startup=3.0)
    finished(reg, head.with_(seed=1), 5.0)
    assert History(reg.list()).startup == pytest.approx(3.0)


def test_a_first_grid_shows_each_queued_runs_time_left_and_the_grids_total(studio_home):
    """A walk's first grid showed no time left for its queued runs, and the grid had no total: with no run like
    them ended here, each run keeps its share of the estimate the page showed at launch."""
    from core.compare import queue_words
    from core.runs.estimate import STARTUP, History, grid_seconds, roughly, times_left

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    grid = [resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method=m, seed=0), studio_home)
            for m in ("finetune", "features-lr", "tfidf-lr")]
    estimate = grid_seconds(reg, grid, 1000, None, 100, 6)
    assert sum(estimate.each.values()) == pytest.approx(estimate.seconds) and len(estimate.each) == 3
    assert estimate.each[grid[0].to_json()] > STARTUP  # the worker's start and the encoding go to the first run
    ids = [reg.create(c, estimate=estimate.each[c.to_json()]) for c in grid]  # as `enqueue` keeps them
    left = times_left(reg.list(), History(reg.list()), now=0.0, slots=1)
    # one at a time: each waits for the runs ahead of it
    assert [left[i] for i in ids] == pytest.approx(list(np.cumsum([estimate.each[c.to_json()] for c in grid])))
    assert queue_words(reg.list(), 0.0, 1) == f"3 run(s) to go: the last ends in {roughly(estimate.seconds)}."
    reg.create(grid[0].with_(seed=1))  # a run queued without an estimate (the CLI's): said, not guessed
    assert queue_words(reg.list(), 0.0, 1).endswith("or later: 1 of them have no estimate yet.")
    for run_id in ids:
        reg.finish(run_id, "cancelled", "cancelled")
    reg.finish(reg.list(statuses=("queued",))[0].id, "cancelled", "cancelled")
    assert queue_words(reg.list(), 0.0, 1) is None  # nothing going: no line


def test_the_queue_says_at_launch_what_the_form_said_when_runs_like_them_have_ended(studio_home):
    """A grid's form said "about 18 min" and the monitor "about 3 min" right after launch: the queue read the runs
    alike, which leave out the worker's start and the encoding the form counts. At launch the queue's total is the
    form's, whatever has ended here."""
    from core.compare import queue_words
    from core.runs.estimate import History, grid_seconds, roughly, times_left

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    grid = [resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method=m, seed=0), studio_home)
            for m in ("finetune", "ganbert")]
    for c in grid:  # runs like these ended here, on another store: the new grid still encodes its texts
        finished(reg, c.with_(seed=9), 20.0)
    estimate = grid_seconds(reg, grid, 2000, None, 500, 6)
    assert estimate.from_history == 2 and estimate.seconds > 40.0 + 10  # the runs' 2 × 20 s, the start, the encoding
    ids = [reg.create(c, estimate=estimate.each[c.to_json()]) for c in grid]
    left = times_left(reg.list(), History(reg.list()), now=0.0, slots=1)
    assert left[ids[-1]] == pytest.approx(estimate.seconds)
    assert queue_words(reg.list(), 0.0, 1) == f"2 run(s) to go: the last ends in {roughly(estimate.seconds)}."


def test_each_run_of_a_grid_carries_the_encoding_of_the_texts_it_adds(studio_home):
    """Issue 78's walk on L2R: a head run (its test and labeled texts) then GAN-BERT (the 11,396 pool texts too)
    on one feature store. The head run had been given the whole store's encoding, so once its own encoding pace
    took over, the queue read "about 2 min" under the form's "about 1 h 13 min". Each run now carries the texts it
    adds, in queue order, and the grid's total is unchanged."""
    from core.runs.estimate import grid_seconds, texts_to_encode

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    head, g1 = (resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method=m, seed=0), studio_home)
                for m in ("finetune", "ganbert"))
    g2 = g1.with_(generator="bow")
    grid = [head, g1, g2]
    alone = {c.to_json(): grid_seconds(reg, [c], 10_000, None, 1_000, 6).seconds for c in grid}
    estimate = grid_seconds(reg, grid, 10_000, None, 1_000, 6)
    share = [estimate.each[c.to_json()] for c in grid]
    encoding = {n: texts_to_encode(grid[:n], 10_000, None, 1_000, 6) for n in (1, 2, 3)}
    assert encoding[1] < 1_100 < 9_000 < encoding[2] == encoding[3]  # test + its draw; then the pool; then none
    assert share[0] == pytest.approx(alone[head.to_json()])  # the worker's start, its training, its own texts
    assert share[1] > 5 * share[0] and share[1] > share[2]  # G1 encodes the pool, G2 reads it
    assert sum(share) == pytest.approx(estimate.seconds)


def test_a_run_in_its_first_percent_of_encoding_reads_what_is_left_of_its_estimate(studio_home):
    """Issue 78's walk: GAN-BERT starting to encode L2R's pool with SmolLM2 had no pace yet, and the queue line
    read "2 run(s) to go; their time is not known yet" a few seconds after the form's "about 36 min"."""
    from core.runs.estimate import History, time_left

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    run_id = reg.create(resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert"),
                                studio_home),
                        estimate=600.0)
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.update_progress(run_id, 0.002, 0, phase="encoding", message="encoding texts: 20 of 11,421 (0%)")
    run = reg.get(run_id)
    assert time_left(run, History([]), run.claimed + 100.0) == pytest.approx(500.0)
    assert time_left(run, History([]), run.claimed + 700.0) is None  # past it: unknown, not "0m 00s"


def test_a_run_in_its_first_percent_of_training_reads_its_estimate(studio_home):
    """A walk's monitor raised (0.0 * None) on a training run under 1% of its steps, with no pace yet."""
    from core.runs.estimate import History, time_left

    reg = Registry(studio_home)
    data = DataSpec(builtin=CorpusConfig(train_per_class=5, test_per_class=2))
    config = resolve(TrainConfig(data=data, frozen=True, per_class=5, fraction=None, method="ganbert"), studio_home)
    finished(reg, config, 100.0)
    run_id = reg.create(config.with_(seed=1))
    reg.claim(run_id)
    reg.mark_running(run_id, os.getpid(), "CPU")
    reg.update_progress(run_id, 0.005, 0, phase="training", message="step 1")
    left = time_left(reg.get(run_id), History(reg.list()), time.time())
    assert left == pytest.approx(100.0 * (1 - 0.005))
