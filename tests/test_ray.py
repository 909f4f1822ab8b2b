"""The Ray backend on a real local Ray cluster bound to loopback: a sweep of tiny runs through the CLI,
metrics and checkpoints back in the local registry, and a cancel mid-run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from core import runs as jobs
from core.errors import InputError
from core.paths import REPO_ROOT
from core.runs import FINISHED, Registry, RunFolder, ray_available, ray_resources, use_address, use_storage
from core.runs.ray.backend import task_options
from core.runs.ray.dispatch import Flight, record_ending
from core.runs.ray.task import execute_remote, localize, ship_data
from core.train import method_for
from tests.helpers import DATA, LONG, LONG_FLAGS, cfg, required, submit, tail_log, wait_for

if not required("RAY") and not ray_available():
    pytest.skip("Ray is not installed (pip install -r requirements-ray.txt)", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """`ray start --head` on 127.0.0.1 with 2 CPUs and its own temp folder; stopped afterwards."""
    ray_bin = Path(sys.executable).with_name("ray")
    temp = tempfile.mkdtemp(prefix="ray")  # short: Ray's socket paths must fit in 107 bytes
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([str(ray_bin), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                    "--num-cpus=2", "--num-gpus=0", f"--temp-dir={temp}", "--include-dashboard=false",
                    "--object-store-memory=200000000", "--disable-usage-stats"],
                   check=True, env=env, capture_output=True, timeout=120)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def ended(registry: Registry, run_ids: list[str]) -> bool:
    """Every run has ended (looking pumps the queue, as the pages do)."""
    jobs.pump(registry)
    return all(registry.get(r).status in FINISHED for r in run_ids)


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=300)


def test_sweep_on_ray_and_a_cancel(ray_cluster, tiny_backbone, studio_home, m4_dir):
    """The sweep reads the real M4 sample's files, so they travel to Ray as data, not as a corpus seed."""
    registry = Registry(studio_home)
    # a long run first, to cancel once it has reported an epoch
    long = cli("train", "--train", "builtin", "--backbone", str(tiny_backbone), "--method", "finetune", "--frozen",
               "--fraction", "0.5", *LONG_FLAGS,
               "--background", "--backend", "ray", "--ray-address", ray_cluster)
    assert long.returncode == 0, long.stderr
    long_id = json.loads(long.stdout.splitlines()[-1])["run_id"]
    sweep = cli("sweep", "--train", str(m4_dir / "train.jsonl"), "--test", str(m4_dir / "dev.jsonl"),
                "--backbone", str(tiny_backbone), "--frozen", "--epochs", "2", "--methods", "finetune", "ganbert",
                "--generators", "noise", "--fractions", "0.1", "0.5", "--seeds", "0",
                "--backend", "ray", "--ray-address", ray_cluster)
    assert sweep.returncode == 0, sweep.stderr
    run_ids = json.loads(sweep.stdout.splitlines()[-1])["run_ids"]
    assert len(run_ids) == 4 and all(registry.get(r).backend == "ray" for r in run_ids)

    wait_for(lambda: registry.evaluations(long_id), timeout=240, what="the long Ray run's first evaluation")
    running = registry.get(long_id)
    assert running.status == "running" and running.device.startswith("Ray node")
    assert jobs.cancel(registry, long_id, grace=60) == "cancelled"

    wait_for(lambda: ended(registry, run_ids), timeout=600, what="the Ray sweep")
    for run_id in run_ids:
        run = registry.get(run_id)
        assert run.status == "done", (run.status, run.message, tail_log(registry, run_id))
        assert 0 <= run.metrics["test"]["macro_f1"] <= 1 and run.summary["accuracy"] is not None
        # every evaluation flowed back while it ran (2 epochs: 2 of a head's steps, 6 of GAN-BERT's at batch 64)
        assert len(registry.evaluations(run_id)) == run.metrics["evaluations"] >= 2
        assert "Ray node" in run.device
        run_dir = registry.folder(run_id).path
        assert (run_dir / RunFolder.PREDICTIONS).exists() and (run_dir / RunFolder.RESULT).exists()
        assert len(RunFolder(run_dir).load_model(studio_home).labels) >= 5  # the checkpoint came back and loads
        assert "started on Ray node" in tail_log(registry, run_id)
    cancelled = registry.get(long_id)
    assert cancelled.status == "cancelled" and "cancelled by request" in cancelled.message


def handed_to_ray(run) -> bool:
    """Read from one snapshot: the dispatcher claims a run (status `starting`, no message yet) before it says why it
    waits."""
    return run.status == "starting" and "waiting for Ray" in (run.message or "")


def test_pending_cancel_and_a_dead_dispatcher(ray_cluster, tiny_backbone, studio_home):
    registry = Registry(studio_home)
    registry.set_setting("ray_address", ray_cluster)
    # more CPUs than the cluster has: Ray keeps it pending, and a cancel must still end it
    pending = submit(registry, cfg(tiny_backbone), backend="ray", resources={"cpus": 64.0, "gpu_fraction": 1.0})
    wait_for(lambda: handed_to_ray(registry.get(pending)), timeout=120, what="the pending run handed to Ray")
    assert jobs.cancel(registry, pending) == "cancelled"
    assert "before Ray started it" in registry.get(pending).message

    long_id = submit(registry, cfg(tiny_backbone, **LONG), backend="ray",
                          resources={"cpus": 1.0, "gpu_fraction": 1.0})
    wait_for(lambda: registry.evaluations(long_id), timeout=240, what="the Ray run's first evaluation")
    os.kill(registry.get(long_id).pid, signal.SIGKILL)  # the dispatcher, on this machine
    wait_for(lambda: jobs.reconcile(registry) or registry.get(long_id).status == "interrupted", timeout=30,
             what="the run marked interrupted")


@pytest.mark.parametrize("error, args, forced, status, words", [
    ("TaskCancelledError", (), False, "cancelled", "before Ray started it"),
    ("WorkerCrashedError", (), True, "cancelled", "forced after"),
    ("WorkerCrashedError", (), False, "interrupted", "worker running it was lost"),
    ("NodeDiedError", ("node 10.0.0.7 died",), False, "interrupted", "NodeDiedError"),
])
def test_how_ray_endings_are_recorded(error, args, forced, status, words, tiny_backbone, studio_home):
    """Ray's own ways of ending a task (cancel before start, forced cancel, a lost worker or node)."""
    from ray import exceptions as rex

    registry = Registry(studio_home)
    run_id = registry.create(cfg(tiny_backbone), "ray")
    registry.claim(run_id, os.getpid())

    def get(ref):
        raise getattr(rex, error)(*args)

    record_ending(registry, run_id, Flight(ref=None, started=True, forced=forced), get)
    run = registry.get(run_id)
    assert run.status == status and words in run.message


def test_a_task_that_fails_on_a_node_says_where_and_returns_its_traceback(tiny_backbone, tmp_path):
    """`execute_remote` called here, with a stand-in for the hub actor: a failure is returned, not raised."""
    class Method:
        def __init__(self, calls: list):
            self.calls = calls

        def remote(self, *args):
            self.calls.append(args)

    class Hub:
        def __init__(self):
            self.pushed: list = []
            self.push = Method(self.pushed)

    hub = Hub()
    config = cfg(tiny_backbone).with_(backbone=str(tmp_path / "no-such-model"))  # resolved, then its folder gone
    outcome = execute_remote("20260101-120000-a1b2c3", config.to_json(), hub, {})
    assert outcome["status"] == "failed" and f"(on Ray node {socket.gethostname()})" in outcome["message"]
    assert "no-such-model" in outcome["message"] and "Traceback" in outcome["trace"]
    assert outcome["result"] is None and outcome["files"] == {}
    assert hub.pushed[0][1]["type"] == "started"


def test_resources_follow_the_device_and_frozen_mode(tiny_backbone):
    frozen, tuned = cfg(tiny_backbone), cfg(tiny_backbone, frozen=False)
    assert task_options(frozen, ray_resources(frozen, 2, 0.25), cluster_gpus=0) == {"num_cpus": 2.0, "num_gpus": 0.0}
    assert task_options(frozen, ray_resources(frozen, 1, 0.25), cluster_gpus=4)["num_gpus"] == 0.25
    assert task_options(tuned, ray_resources(tuned), cluster_gpus=4)["num_gpus"] == 1.0
    assert task_options(tuned.with_(device="cpu"), None, cluster_gpus=4)["num_gpus"] == 0.0
    with pytest.raises(InputError, match="fractional GPUs are for frozen-feature runs"):
        ray_resources(tuned, 1, 0.5)
    with pytest.raises(InputError, match="CPUs per Ray run"):
        ray_resources(frozen, 0)


def test_data_files_travel_to_nodes_that_lack_them(tmp_path):
    from core.data import DataSpec

    folder = tmp_path / "official"
    folder.mkdir()
    (folder / "subtaskB_train.jsonl").write_text('{"text": "a", "label": 0}\n')
    test_file = tmp_path / "test.jsonl"
    test_file.write_text('{"text": "b", "label": 1}\n')
    shipped = ship_data(DataSpec(train=str(folder), test=str(test_file)))
    shutil.rmtree(folder)  # as on a node without the user's files
    spec = localize(DataSpec(train=str(folder), test=str(test_file)), shipped, tmp_path / "node")
    assert spec.test == str(test_file)  # present: used in place
    assert (Path(spec.train) / "subtaskB_train.jsonl").read_text() == '{"text": "a", "label": 0}\n'
    assert DATA.builtin is not None and ship_data(DATA) == {}


def test_ray_flags_are_checked(tiny_backbone, studio_home):
    out = cli("train", "--train", "builtin", "--backbone", str(tiny_backbone), "--method", "finetune",
              "--fraction", "0.5", "--backend", "ray")
    assert out.returncode == 2 and "--background" in out.stderr
    out = cli("sweep", "--train", "builtin", "--backbone", str(tiny_backbone), "--backend", "ray",
              "--ray-gpu-fraction", "0.5")
    assert out.returncode == 2 and "fractional GPUs" in out.stderr
    out = cli("sweep", "--train", "builtin", "--backbone", str(tiny_backbone), "--backend", "ray",
              "--ray-address", f"127.0.0.1:{free_port()}")
    assert out.returncode == 2 and "no Ray cluster answers at 127.0.0.1:" in out.stderr
    out = cli("sweep", "--train", "builtin", "--backbone", str(tiny_backbone), "--backend", "ray",
              "--ray-address", "headnode")
    assert out.returncode == 2 and "HOST:PORT" in out.stderr
    out = cli("sweep", "--train", "builtin", "--backbone", str(tiny_backbone), "--backend", "ray",
              "--ray-storage", "relative/folder")
    assert out.returncode == 2 and "not a storage path or URI" in out.stderr
    assert Registry(studio_home).list() == []  # nothing was queued


def test_results_travel_through_a_storage_path(ray_cluster, tiny_backbone, studio_home, tmp_path):
    """…and a run on Ray logs to the MLflow store the Train page named, as a local run does."""
    from mlflow.tracking import MlflowClient

    from core.runs.tracking.store import URI_SETTING

    registry = Registry(studio_home)
    use_address(registry, ray_cluster)
    use_storage(registry, str(tmp_path / "shared"))  # a folder every node sees (here: one machine)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    registry.set_setting(URI_SETTING, uri)
    run_id = submit(registry, cfg(tiny_backbone, method="ganbert", generator="bow"), backend="ray",
                         resources={"cpus": 1.0, "gpu_fraction": 1.0})
    wait_for(lambda: ended(registry, [run_id]), timeout=240, what="the run via storage")
    run = registry.get(run_id)
    assert run.status == "done", (run.message, tail_log(registry, run_id))
    stored = tmp_path / "shared" / run_id
    local = registry.folder(run_id).path
    for rel in ("checkpoint/model.safetensors", "checkpoint/model.json", RunFolder.PREDICTIONS, RunFolder.RESULT):
        assert (stored / rel).read_bytes() == (local / rel).read_bytes()
    assert not (local / ".incoming").exists()
    assert f"results stored at {stored}" in tail_log(registry, run_id)
    assert method_for(RunFolder(local).load_model(studio_home).config).fake_class
    client = MlflowClient(tracking_uri=uri)

    def logged() -> list:  # the dispatcher exports a run once it has recorded its end: a moment later
        found = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                   filter_string=f"tags.`studio.run_id` = '{run_id}'")
        return found if found and found[0].info.status == "FINISHED" else []
    logged = wait_for(logged, timeout=120, what="the run's MLflow export")
    assert len(logged) == 1
    steps = [e["step"] for e in registry.evaluations(run_id)]
    assert steps and [m.step for m in client.get_metric_history(logged[0].info.run_id, "d_loss")] == steps


def test_train_page_launches_on_ray(ray_cluster, tiny_backbone, studio_home):
    from core.data import CorpusConfig, builtin_dataset
    from pages.train_form import methods_key
    from tests.helpers import open_page

    at = open_page("pages/train.py", builtin_dataset(CorpusConfig(train_per_class=30, test_per_class=10), studio_home))
    at.multiselect(key=methods_key(True)).set_value(["ganbert"])
    at.multiselect(key="tr_generators").set_value(["noise"])
    at.multiselect(key="tr_fractions").set_value([0.5])
    at.number_input(key="tr_epochs").set_value(1)
    at.text_input(key="tr_seeds").set_value("0")
    at.selectbox(key="tr_backbone_pick").set_value("other").run()
    at.text_input(key="tr_backbone").set_value(str(tiny_backbone))
    at.radio(key="tr_backend").set_value("ray").run()
    at.text_input(key="tr_ray_address").set_value(ray_cluster)
    at.number_input(key="tr_ray_gpu").set_value(0.5).run()  # a GPU share is fine for frozen runs
    assert not at.exception and not at.error
    at.button(key="tr_launch").click().run()
    assert "Queued 1 run(s)" in at.success[0].value
    registry = Registry(studio_home)
    run = registry.list()[0]
    assert run.backend == "ray" and run.resources == {"cpus": 1.0, "gpu_fraction": 0.5}
    wait_for(lambda: registry.get(run.id).status == "done", timeout=240, what="the Ray run from the page")
    at.run()
    table = at.dataframe(key="tr_table").value
    assert table["where"].iloc[0].startswith("Ray node")


def test_queued_runs_fail_clearly_when_the_cluster_is_gone(tiny_backbone, studio_home):
    registry = Registry(studio_home)
    registry.set_setting("ray_address", f"127.0.0.1:{free_port()}")  # was up when queued, gone now
    run_id = submit(registry, cfg(tiny_backbone), backend="ray", resources={"cpus": 1.0, "gpu_fraction": 1.0})
    wait_for(lambda: registry.get(run_id).status == "failed", timeout=120, what="the run failed")
    assert "could not connect to Ray (127.0.0.1:" in registry.get(run_id).message
