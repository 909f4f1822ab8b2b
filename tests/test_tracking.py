"""Studio runs in MLflow (`python -m core export`, `STUDIO_MLFLOW_URI`): each method's run round-trips through
the pyfunc model to `core predict`'s probabilities in a fresh process; params and metrics equal the run's; an
export twice leaves one MLflow run; bad input writes nothing and exits 2; a run logs its curves as it trains."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys

import pytest

from core.cli import main
from core.runs import Registry, Status, execute_run
from core.runs.tracking.store import UI, Exported, tracking_at, where_to_look
from core.train import TrainConfig, resolve
from core.train.predict import classify
from tests.helpers import DATA, make_tiny_llama, required

if not required("MLFLOW") and importlib.util.find_spec("mlflow") is None:
    pytest.skip("MLflow is not installed (make setup-mlflow)", allow_module_level=True)

TEXTS = ["The results suggest a broader pattern across all of the studied regions.",
         "honestly i just think the movie was too long lol", "Certainly! Here is a summary of the key points."]
# every kind of model: a converged reference, frozen features, GAN-BERT frozen and trained (its fake class left out),
# the encoder fine-tuned, bottleneck adapters, LoRA, SetFit
RUNS = {"tfidf-lr": dict(method="tfidf-lr"), "features-lr": dict(method="features-lr", frozen=True),
        "ganbert-frozen": dict(method="ganbert", frozen=True, steps=6, evaluations=3),
        "ganbert-trained": dict(method="ganbert", frozen=False, steps=2),
        "finetune": dict(method="finetune", frozen=False, steps=2), "adapter": dict(method="adapter", steps=2),
        "lora": dict(method="lora", steps=2), "setfit": dict(method="setfit", setfit_iterations=1, steps=2),
        # a causal LM (SmolLM2's family), read frozen on its pooled layer and trained on its top layer
        "features-lr-llama": dict(method="features-lr", frozen=True, on="llama"),
        "finetune-llama": dict(method="finetune", frozen=False, steps=2, train_layers=1, on="llama")}


def trained(registry: Registry, backbones: dict, on: str = "bert", **settings) -> str:
    config = resolve(TrainConfig.of(data=DATA, backbone=str(backbones[on]), per_class=4, fraction=None, max_len=32,
                                 batch_size=8, **settings), registry.home)
    run_id = registry.create(config)
    registry.claim(run_id)
    assert execute_run(registry, run_id) == Status.DONE, registry.folder(run_id).tail_log()
    return run_id


@pytest.fixture(scope="module")
def exported(tiny_backbone, tmp_path_factory):
    """Every kind of run, trained in one studio home and exported to one SQLite store."""
    home = tmp_path_factory.mktemp("home")
    before = os.environ.get("STUDIO_HOME")
    os.environ["STUDIO_HOME"] = str(home)
    try:
        registry = Registry(home)
        backbones = {"bert": tiny_backbone, "llama": make_tiny_llama(tmp_path_factory.mktemp("llama"))}
        ids = {name: trained(registry, backbones, **settings) for name, settings in RUNS.items()}
        uri = f"sqlite:///{home / 'mlflow.db'}"
        assert main(["export", *ids.values(), "--mlflow", uri]) == 0
        yield registry, ids, uri, home
    finally:
        os.environ.pop("STUDIO_HOME") if before is None else os.environ.__setitem__("STUDIO_HOME", before)


def client_and_run(uri: str, run_id: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.search_runs([e.experiment_id for e in client.search_experiments()],
                               filter_string=f"tags.`studio.run_id` = '{run_id}'")
    return client, found


@pytest.mark.slow
def test_every_methods_model_loads_without_the_studio_and_predicts_as_core_predict(exported, tmp_path, monkeypatch):
    registry, ids, uri, home = exported
    monkeypatch.setenv("STUDIO_HOME", str(home))
    uris = {name: client_and_run(uri, run_id)[1][0].info.run_id for name, run_id in ids.items()}
    script = ("import json, sys, mlflow, pandas as pd\n"
              f"mlflow.set_tracking_uri({uri!r})\n"
              "out = {}\n"
              "for name, mlflow_id in json.loads(sys.argv[1]).items():\n"
              "    model = mlflow.pyfunc.load_model(f'runs:/{mlflow_id}/model')\n"
              f"    out[name] = model.predict(pd.DataFrame({{'text': {TEXTS!r}}})).to_dict('list')\n"
              "print(json.dumps(out))\n")
    # a fresh process outside the checkout, with an empty studio home and no network: `core` comes with the model
    env = {**os.environ, "STUDIO_HOME": str(tmp_path / "elsewhere"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": ""}
    done = subprocess.run([sys.executable, "-c", script, json.dumps(uris)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    predicted = json.loads(done.stdout.strip().splitlines()[-1])
    for name, run_id in ids.items():
        model = registry.folder(run_id).load_model(home)
        expected = classify(model, TEXTS)
        frame = predicted[name]
        assert list(frame) == [*model.labels, "label"], name  # no fake class, a column per class, the label
        assert frame["label"] == [p.label for p in expected], name
        for label in model.labels:
            assert frame[label] == pytest.approx([p.probabilities[label] for p in expected], abs=1e-5), name


def test_params_tags_metrics_and_curves_are_the_runs(exported):
    registry, ids, uri, _ = exported
    run = registry.get(ids["ganbert-frozen"])
    client, found = client_and_run(uri, run.id)
    assert len(found) == 1
    data = found[0].data
    assert data.params["method"] == "ganbert" and data.params["lr"] == str(run.config.lr)
    assert data.params["seed"] == str(run.config.seed) and data.params["data.builtin.train_per_class"] == "30"
    assert data.params["generator"] == run.config.params.generator  # its method's own settings, and no other's
    assert "lora_rank" not in data.params and "finetune_preset" not in data.params
    assert data.tags["studio.labels_read"] == str(run.labels_read) and data.tags["studio.device"] == run.device
    test = run.metrics["test"]
    for key in ("accuracy", "macro_f1", "mcc"):
        assert data.metrics[f"test_{key}"] == pytest.approx(test[key])
    for name, scores in registry.tables(run.id)["per_class"].items():
        assert data.metrics[f"test_f1.{name}"] == pytest.approx(scores["f1"])  # every class has test texts here
    assert data.params["backbone_name"] and data.params["result.labels_read"] == str(run.labels_read)
    assert "labeled" not in data.metrics  # a count is a param, not a chart of one bar
    evaluations = registry.evaluations(run.id)
    for key in ("d_loss", "g_loss", "val_macro_f1"):
        history = client.get_metric_history(found[0].info.run_id, key)
        assert [(m.step, m.value) for m in history] == pytest.approx([(e["step"], e[key]) for e in evaluations])
    artifacts = {a.path for a in client.list_artifacts(found[0].info.run_id)}
    logged = {"train.log"} if registry.folder(run.id).log.exists() else set()  # a worker's; this run had none
    assert {"config.json", "result.json", "test_predictions.parquet", "confusion_matrix.png", *logged} <= artifacts
    assert client.get_experiment(found[0].info.experiment_id).name == run.config.data.short_name


def test_an_export_twice_updates_its_mlflow_run(exported, monkeypatch, capsys):
    import mlflow

    registry, ids, uri, home = exported
    monkeypatch.setenv("STUDIO_HOME", str(home))
    run_id = ids["ganbert-frozen"]
    client, found = client_and_run(uri, run_id)
    experiment = found[0].info.experiment_id
    client.delete_experiment_tag(experiment, "mlflow.experimentKind")  # as an experiment made before the kind was set
    from core.runs.tracking import record

    params = record.params
    # as a MiniLM run exported before migration 7 named its backbone: MLflow refuses to change a param's value
    monkeypatch.setattr(record, "params", lambda run: params(run) | {"backbone": "renamed since"})
    assert main(["export", run_id, "--mlflow", uri]) == 0
    client, found = client_and_run(uri, run_id)
    assert len(found) == 1 and found[0].data.params["backbone"] == params(registry.get(run_id))["backbone"]
    # MLflow's UI opens an experiment without a kind on an empty traces page, not its runs (issue 95 item 6)
    assert client.get_experiment(experiment).tags["mlflow.experimentKind"] == "custom_model_development"
    # and it opens there on its runs only when told the workflow, as the link the export prints does
    said = capsys.readouterr().err
    assert f"mlflow ui --backend-store-uri {uri}" in said
    assert f": http://127.0.0.1:5000/#/experiments/{experiment}?workflowType=machine_learning" in said
    assert len(client.get_metric_history(found[0].info.run_id, "val_macro_f1")) == len(registry.evaluations(run_id))
    mlflow.set_tracking_uri(uri)
    models = mlflow.search_logged_models(experiment_ids=[found[0].info.experiment_id], output_format="list",
                                         filter_string=f"source_run_id = '{found[0].info.run_id}'")
    assert len(models) == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bad_input_says_why_exits_2_and_writes_nothing(exported, tmp_path, capsys, monkeypatch):
    registry, ids, _, home = exported
    monkeypatch.setenv("STUDIO_HOME", str(home))
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    queued = registry.create(resolve(TrainConfig(data=DATA, method="tfidf-lr"), home))
    failed = registry.create(resolve(TrainConfig(data=DATA, method="tfidf-lr"), home))
    registry.claim(failed)
    registry.finish(failed, Status.FAILED, "ValueError: a bad file")
    cases = [([ids["tfidf-lr"], "20990101-000000-abcdef"], "20990101-000000-abcdef"),
             ([ids["tfidf-lr"], queued], "is still queued"), ([failed], "ended failed"),
             ([ids["tfidf-lr"], "--mlflow", f"sqlite:///{tmp_path / 'no' / 'such' / 'x.db'}"], "does not exist"),
             ([ids["tfidf-lr"], "--mlflow", f"http://127.0.0.1:{free_port()}"], "cannot reach"), ([], "--all")]
    for args, said in cases:
        if "--mlflow" not in args:
            args = [*args, "--mlflow", uri]
        assert main(["export", *args]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
    assert not (tmp_path / "store.db").exists()  # every run was checked before the store was opened
    assert not (tmp_path / "no").exists()


def test_an_export_that_fails_part_way_keeps_nothing_of_that_run(exported, tmp_path, monkeypatch, capsys):
    from core.runs.tracking import store

    registry, ids, _, home = exported
    monkeypatch.setenv("STUDIO_HOME", str(home))
    uri = f"sqlite:///{tmp_path / 'store.db'}"

    def broken(*args):
        raise OSError("No space left on device")
    monkeypatch.setattr(store, "log_files", broken)
    assert main(["export", ids["tfidf-lr"], "--mlflow", uri]) == 2
    assert "nothing of it kept" in capsys.readouterr().err
    assert client_and_run(uri, ids["tfidf-lr"])[1] == []


def test_without_mlflow_the_export_says_how_to_install_it(exported, monkeypatch, capsys):
    from core.runs.tracking import store

    registry, ids, uri, home = exported
    monkeypatch.setenv("STUDIO_HOME", str(home))
    monkeypatch.setattr(store, "mlflow_installed", lambda: False)
    assert main(["export", ids["tfidf-lr"], "--mlflow", uri]) == 2
    assert "make setup-mlflow" in capsys.readouterr().err


def test_a_run_logs_its_curves_as_it_trains_when_a_store_is_named(tiny_backbone, tmp_path, monkeypatch, studio_home):
    """Each evaluation's points as it comes, each sent once and with no query of what the store holds (every curve
    had been sent again at each evaluation, one history query a curve)."""
    from mlflow.tracking import MlflowClient

    import core.runs.tracking.live as live

    uri = f"sqlite:///{tmp_path / 'live.db'}"
    monkeypatch.setenv("STUDIO_MLFLOW_URI", uri)
    registry = Registry(studio_home)
    config = resolve(TrainConfig(data=DATA, backbone=str(tiny_backbone), method="ganbert", frozen=True, per_class=4,
                                 fraction=None, max_len=32, batch_size=8, steps=6, evaluations=3), studio_home)
    run_id = registry.create(config)
    registry.claim(run_id)
    seen, sent, send = [], [], live.log_points

    def counted(client, mlflow_id: str, points: list) -> None:
        sent.extend((k, step) for step, values in points for k in values)
        send(client, mlflow_id, points)
    monkeypatch.setattr(live, "log_points", counted)

    def at_evaluation(event: dict) -> None:  # while the run trains, its MLflow run already holds this point
        if event["type"] == "evaluation":
            _, found = client_and_run(uri, run_id)
            history = MlflowClient(tracking_uri=uri).get_metric_history(found[0].info.run_id, "d_loss")
            seen.append((found[0].info.status, [m.step for m in history]))
    assert execute_run(registry, run_id, at_evaluation) == Status.DONE
    steps = [e["step"] for e in registry.evaluations(run_id)]
    assert seen == [("RUNNING", steps[:i + 1]) for i in range(len(steps))]
    assert len(sent) == len(set(sent)) and {step for _, step in sent} == set(steps)  # once each, every one
    _, found = client_and_run(uri, run_id)
    assert found[0].info.status == "FINISHED" and found[0].data.metrics["test_accuracy"] == pytest.approx(
        registry.get(run_id).metrics["test"]["accuracy"])


def test_compare_exports_the_selected_runs_and_train_names_a_store(tmp_path, studio_home):
    from core.data import builtin_dataset
    from core.runs.tracking.store import URI_SETTING
    from tests.helpers import open_page
    from tests.test_pages_runs import CORPUS, select_rows

    dataset = builtin_dataset(CORPUS, studio_home)
    registry = Registry(studio_home)
    run_id = registry.create(resolve(TrainConfig(data=dataset.spec, method="tfidf-lr"), studio_home))
    registry.claim(run_id)
    assert execute_run(registry, run_id) == Status.DONE
    at = select_rows(open_page("pages/compare.py", dataset), "cmp_table", [run_id])
    uri = f"sqlite:///{tmp_path / 'pages.db'}"
    at.text_input(key="cmp_mlflow_uri").set_value(uri)
    at.button(key="cmp_mlflow_export").click().run()
    assert not at.exception and not at.error
    shown = next(d.value for d in at.dataframe if "MLflow run" in d.value.columns)
    assert list(shown["run id"]) == [run_id] and len(client_and_run(uri, run_id)[1]) == 1
    # the exported model's own test score beside the run's, as the CLI prints it (a re-walk found it unsaid here)
    assert shown["model check"][0].startswith("its model scores ") and "(the run: " in shown["model check"][0]
    assert any(f"mlflow ui --backend-store-uri {uri}" in c.value for c in at.code)
    _, found = client_and_run(uri, run_id)  # and a button to its experiment's runs, the workflow said
    (button,) = at.get("link_button")
    assert button.proto.url == (f"http://127.0.0.1:5000/#/experiments/{found[0].info.experiment_id}"
                                "?workflowType=machine_learning") and dataset.spec.short_name in button.proto.label
    at.button(key="cmp_mlflow_export").click().run()  # again: said in words, not only by a column of ticks
    assert "1 had been exported before" in at.get("progress")[0].proto.text

    train = open_page("pages/train.py", dataset)
    train.text_input(key="tr_mlflow_uri").set_value(f"sqlite:///{tmp_path / 'no' / 'such.db'}").run()
    assert "does not exist" in train.error[0].value and registry.setting(URI_SETTING) is None
    train.text_input(key="tr_mlflow_uri").set_value(uri).run()
    assert not train.error and registry.setting(URI_SETTING) == uri


@pytest.mark.browser
def test_mlflow_ui_shows_an_exported_runs_accuracy_and_curve_in_chromium(exported, tmp_path):
    """`mlflow ui` on the store the export wrote: the experiment opens on its runs, the run's page shows its test
    accuracy, and its model-metrics tab draws a curve by step. A screenshot of each goes to artifacts/browser/."""
    from playwright.sync_api import sync_playwright

    from tests.test_browser import ARTIFACTS, CHROMIUM, free_port, need_chromium

    need_chromium()
    registry, ids, uri, _ = exported
    run = registry.get(ids["ganbert-frozen"])
    _, found = client_and_run(uri, run.id)
    where = f"#/experiments/{found[0].info.experiment_id}/runs/{found[0].info.run_id}"
    port = free_port()
    ui = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1",
                           "--port", str(port)], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
    try:
        import time
        import urllib.request

        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and ui.poll() is None, "mlflow ui did not start"
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(90_000)
            _, links = where_to_look(uri, [Exported(run.id, found[0].info.run_id, "data", None, False,
                                                    experiment_id=found[0].info.experiment_id)])
            link = links["data"]
            page.goto(link.replace(UI, f"http://127.0.0.1:{port}"))  # the link the export prints, on this port
            page.get_by_role("link", name=found[0].info.run_name[:20]).first.wait_for()  # its runs, not its traces
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "mlflow-experiment.png"))
            page.goto(f"http://127.0.0.1:{port}/{where}")
            row = page.get_by_role("row").filter(has_text="test_accuracy")
            row.first.wait_for()
            assert str(run.metrics["test"]["accuracy"])[:6] in row.first.inner_text()
            page.screenshot(path=str(ARTIFACTS / "mlflow-run.png"))
            page.goto(f"http://127.0.0.1:{port}/{where}/model-metrics")
            chart = page.locator("div").filter(has_text="d_loss").filter(has_text="Step").last
            chart.wait_for()
            assert chart.locator("svg path").count() > 0  # the curve drawn, not only its title
            page.screenshot(path=str(ARTIFACTS / "mlflow-curves.png"))
            browser.close()
    finally:
        os.killpg(ui.pid, 15)  # mlflow ui's server runs in workers of its own session
        ui.wait(timeout=30)


def test_an_exported_model_reads_its_backbone_as_the_run_did_and_is_checked_against_the_run(exported, tmp_path,
                                                                                            monkeypatch, capsys):
    """Issue 95 item 1: an exported SmolLM2 model read its backbone from the copy by folder, where a packaged
    backbone's measured layer goes by its name, so it pooled another layer and scored 0.369 where the run scored
    0.800. The copy's config keeps the pooling as the run resolved it, for every backbone and feature set; and an
    export scores its own model on the run's test texts and keeps none that does not give the run's accuracy."""
    import pandas as pd

    from core.backbone.packaged import SMOLLM2
    from core.train.checkpoint import moved

    for settings in (dict(backbone=SMOLLM2, frozen=True), dict(backbone=SMOLLM2, frozen=True, features="both"),
                     dict(backbone=SMOLLM2, frozen=True, features="probabilities"), dict(backbone=SMOLLM2),
                     dict(frozen=True), dict(), dict(pooling="cls"), dict(backbone=SMOLLM2, pool_layer=7)):
        config = TrainConfig.of(**settings)
        assert config.with_(**moved(config, str(tmp_path / "copy"))).resolved_pooling == config.resolved_pooling

    registry, ids, uri, home = exported
    monkeypatch.setenv("STUDIO_HOME", str(home))
    assert main(["export", ids["finetune"], "--mlflow", uri]) == 0
    assert "its model scores " in capsys.readouterr().out  # its own accuracy, beside the run's

    class Wrong:  # a model that reads its backbone otherwise: every text wrong
        def predict(self, frame):
            return pd.DataFrame({"label": ["no class of the run"] * len(frame)})
    import mlflow.pyfunc

    monkeypatch.setattr(mlflow.pyfunc, "load_model", lambda uri: Wrong())
    fresh = f"sqlite:///{tmp_path / 'other.db'}"
    assert main(["export", ids["finetune"], "--mlflow", fresh]) == 2
    assert "does not reproduce the run, so it is not kept" in capsys.readouterr().err
    assert not client_and_run(fresh, ids["finetune"])[1]  # nothing of the run kept


def test_the_models_of_one_backbone_hold_it_once_on_disk(exported):
    """Issue 95 item 6: every exported model carried a whole copy of its backbone (1.9 GB for 3 SmolLM2 runs). In a
    local store each copy's files are hard links to one copy kept by content: one inode per backbone file, whatever
    the models (each still holds every file it needs, and loads in a fresh process: the test above)."""
    import os

    _, ids, _, home = exported
    weights = [p for p in (home / "mlartifacts" / "models").rglob("model.safetensors") if "checkpoint" not in p.parts]
    inodes = {os.stat(p).st_ino for p in weights}
    assert len(weights) >= 2 * len(inodes) and len(inodes) == 2  # the tiny BERT's and the tiny Llama's, once each
    assert all((home / "mlartifacts" / ".shared-files").iterdir())


def test_a_home_written_before_the_numbered_migrations_exports_its_runs(home_v2, tmp_path, capsys, studio_home):
    """A studio home written by main before issue 97 (tests/fixtures/home-v2), migrated as it opens: every finished
    run exports, with its metrics, and its MLflow model predicts what the run predicts."""
    import mlflow
    import pandas as pd

    registry = Registry(studio_home)
    done = [r for r in registry.list(statuses=("done",))]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert len(done) == 8 and main(["export", *(r.id for r in done), "--mlflow", uri]) == 0
    assert Registry(studio_home).migrated == []  # migrated once, by the first open
    for run in done:
        client, found = client_and_run(uri, run.id)
        assert len(found) == 1, run.id
        for key in ("accuracy", "macro_f1", "mcc"):
            assert found[0].data.metrics[f"test_{key}"] == pytest.approx(run.metrics["test"][key]), run.id
        with tracking_at(uri):
            model = mlflow.pyfunc.load_model(f"runs:/{found[0].info.run_id}/model")
        predicted = model.predict(pd.DataFrame({"text": TEXTS}))
        ours = classify(registry.folder(run.id).load_model(studio_home), TEXTS)
        assert predicted["label"].tolist() == [p.label for p in ours]


@pytest.mark.parametrize("how", ["set_tracking_uri", "MLFLOW_TRACKING_URI"])
def test_an_export_leaves_the_process_tracking_uri_as_it_found_it(how, exported, tmp_path, monkeypatch):
    """MLflow is pointed at a store per export, not for the whole process: a notebook that exports a run keeps
    logging its own runs where it did, whether it named its store in code or in the environment."""
    import mlflow

    registry, ids, _, home = exported
    monkeypatch.setenv("STUDIO_HOME", str(home))
    own = f"sqlite:///{tmp_path / 'own.db'}"
    if how == "set_tracking_uri":
        mlflow.set_tracking_uri(own)
    else:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", own)
    try:
        assert main(["export", ids["features-lr"], "--mlflow", f"sqlite:///{tmp_path / 'other.db'}"]) == 0
        assert mlflow.get_tracking_uri() == own
        assert how == "set_tracking_uri" or os.environ.get("MLFLOW_TRACKING_URI") == own
    finally:
        mlflow.set_tracking_uri(None)
