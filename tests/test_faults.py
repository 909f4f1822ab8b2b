"""Faults: killed processes, app restarts, a long queue, an unwritable run directory; and bad input."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

import pytest

from core import runs as jobs
from core.cli import main
from core.data import DataError, load_frame, store_upload
from core.paths import REPO_ROOT
from core.train import classify
from core.runs import Registry, execute_run
from tests.helpers import LONG, active_run, cfg, submit, wait_for


def test_sigkill_one_run_while_another_goes_on(tiny_backbone, studio_home):
    reg = Registry()
    jobs.set_concurrency(reg, 2)
    victim = submit(reg, cfg(tiny_backbone, **LONG))
    other = submit(reg, cfg(tiny_backbone, seed=1, epochs=3))
    run = wait_for(lambda: (r := active_run(reg, victim)).status == "running" and r.evaluations >= 1 and r, what="victim epoch 1")
    os.kill(run.pid, signal.SIGKILL)
    wait_for(lambda: jobs.reconcile(reg) or reg.get(victim).status == "interrupted", what="interrupted")
    wait_for(lambda: reg.get(other).status == "done", what="the other run to finish")
    result = reg.get(other).metrics  # trained to its budget, and every test text scored
    assert result["steps"] == result["budget_steps"]
    assert sum(map(sum, result["test"]["confusion"])) == result["test_rows"] == len(reg.folder(other).predictions())


def test_app_restart_loses_nothing_and_the_queue_goes_on(tiny_backbone, studio_home):
    """Runs queued and running while the dashboard process dies and comes back."""
    def start_app() -> subprocess.Popen:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                 "--server.headless", "true"], cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env={**os.environ, "STUDIO_HOME": str(studio_home)})

    app = start_app()
    reg = Registry()
    jobs.set_concurrency(reg, 1)
    # the first run lasts seconds (a 2-epoch run is 'running' for less than a poll) and then ends on its own
    ids = [submit(reg, cfg(tiny_backbone, epochs=1000, patience=1000))]
    ids += [submit(reg, cfg(tiny_backbone, seed=s, epochs=2)) for s in (1, 2)]
    wait_for(lambda: active_run(reg, ids[0]).status == "running", what="first run running")
    app.send_signal(signal.SIGKILL)
    app.wait()
    assert [reg.get(i).status for i in ids[1:]] == ["queued", "queued"]
    app = start_app()
    try:
        wait_for(lambda: all(reg.get(i).status == "done" for i in ids), timeout=240, what="queue drained")
    finally:
        app.terminate()
        app.wait()
    assert len(reg.list()) == 3


def test_twenty_queued_runs_finish_in_order(tiny_backbone, studio_home):
    reg = Registry()
    jobs.set_concurrency(reg, 1)
    ids = [reg.create(cfg(tiny_backbone, seed=s, epochs=1)) for s in range(20)]
    jobs.pump(reg)
    wait_for(lambda: all(reg.get(i).status == "done" for i in ids), timeout=900, what="20 runs done")
    runs = [reg.get(i) for i in ids]
    assert all(a.ended <= b.started for a, b in zip(runs, runs[1:]))  # one at a time, in queue order


def test_unwritable_run_directory_fails_the_run_clearly(tiny_backbone, studio_home, monkeypatch):
    def denied(tensors, filename, *a, **k):
        raise PermissionError(13, "Permission denied", filename)
    monkeypatch.setattr("core.train.store.save_file", denied)
    reg = Registry()
    run_id = reg.create(cfg(tiny_backbone))
    reg.claim(run_id)
    assert execute_run(reg, run_id) == "failed"
    message = reg.get(run_id).message
    assert "could not write the checkpoint to" in message and "Permission denied" in message
    assert not list(reg.folder(run_id).path.rglob("*.partial"))


# ---------------------------------------------------------------- bad input

def test_text_of_a_million_characters_loads_and_classifies(tiny_backbone, studio_home, tmp_path):
    raw = ('{"text": "' + "word " * 200_000 + '", "label": 0}\n{"text": "short", "label": 1}\n').encode()
    frame, _ = load_frame(raw, "long.jsonl")
    assert len(frame["text"].iloc[0]) == 1_000_000
    reg = Registry()
    run_id = reg.create(cfg(tiny_backbone))
    reg.claim(run_id)
    execute_run(reg, run_id)
    pred = classify(reg.folder(run_id).load_model(), [frame["text"].iloc[0]])[0]
    assert pred.label and sum(pred.probabilities.values()) == pytest.approx(1.0, abs=1e-5)


def test_upload_over_the_limit_is_refused_and_not_stored(studio_home):
    folder = studio_home / "uploads"
    with pytest.raises(DataError, match="over the 0 MB limit"):
        store_upload(b'{"text": "a", "label": 0}\n' * 100, "big.jsonl", folder, max_bytes=1000)
    assert not folder.exists() or not any(folder.iterdir())


def test_bad_upload_is_not_stored(studio_home):
    folder = studio_home / "uploads"
    with pytest.raises(DataError, match="malformed JSON on line 1"):
        store_upload(b"{nope\n", "bad.jsonl", folder)
    assert not folder.exists() or not any(folder.iterdir())


@pytest.mark.parametrize("content, name, message", [
    (b"", "empty.csv", "is empty"),
    (b"\x00\x01\x02binary", "b.csv", "binary file"),
    ("text,label\ncafé,0\n".encode("latin-1"), "latin.csv", "not UTF-8 text"),
    (b"body,label\na,0\n", "nocol.csv", "no text column 'text'"),
    (b"text,label\na,0\nb,0\n", "one.csv", "only one class"),
    (b'{"text": "a", "label": 0, "model": "human"}\n{"text": "b", "label": 7, "model": "x"}\n', "u.jsonl",
     "unknown label(s) in 1 row(s): '7' (1 row)"),
    (b'{"text": "", "label": 0}\n', "e.jsonl", "empty or missing text"),
])
def test_cli_data_check_refuses_bad_files_with_exit_2(content, name, message, tmp_path, capsys):
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["data", "check", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_no_code_path_unpickles():
    """Uploads, caches and checkpoints are read as data only: no pickle, no torch.load, no eval."""
    banned = re.compile(r"import pickle|pickle\.loads?\(|torch\.load\(|(?<![.\w])eval\(|(?<![.\w])exec\(|allow_pickle=True"
                        r"|import joblib|joblib\.load\(|from_pretrained\(.*SetFit|SetFitModel\.from_pretrained")
    offenders = [str(p) for p in list((REPO_ROOT / "core").rglob("*.py")) + list((REPO_ROOT / "pages").glob("*.py"))
                 if banned.search(p.read_text())]
    assert offenders == []


def test_server_listens_on_localhost_by_default():
    config = (REPO_ROOT / ".streamlit" / "config.toml").read_text()
    assert re.search(r'^address = "127\.0\.0\.1"$', config, re.M)
