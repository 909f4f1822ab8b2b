"""Studio runs into an MLflow tracking store: one MLflow run per studio run, in an experiment named after its
dataset, found again by the studio run's id (`record.RUN_ID_TAG`), so a second export updates the first.

An export checks every run and the store before it writes anything, and an MLflow run it created is deleted again
if its export fails part-way: a store holds a studio run whole or not at all. Each run gets its params, tags,
test metrics, curves by step, its files (config, log, result, test predictions, the confusion matrix as a
picture) and its model as a pyfunc (`detector.StudioDetector`)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from core.backbone.packaged import PACKAGED
from core.errors import InputError
from core.paths import REPO_ROOT
from core.runs.lifecycle import ACTIVE, Status
from core.runs.registry import Registry
from core.runs.run import Run
from core.runs.tracking import record
from core.runs.tracking.shared_files import local_folder, share
from core.train.macro import DENSE_UP_TO, dense_confusion

URI_VARIABLE = "STUDIO_MLFLOW_URI"  # a tracking URI every new run is logged to as it trains
URI_SETTING = "mlflow_uri"  # the same, set on the Train page (the variable wins)
DATABASE = "mlflow.db"  # the default store, in the studio home: MLflow's own default kind since 3.7
ARTIFACTS = "mlartifacts"  # beside a SQLite store: its runs' files and models
MODEL = "model"
INSTALL = "MLflow is not installed: run `make setup-mlflow` (or .venv/bin/pip install -r requirements-mlflow.txt)"
# what the exported model needs besides `core`, which travels as its code: requirements.txt less the pages, the
# tests and the packaged backbones (a run's backbone travels as an artifact)
NOT_FOR_THE_MODEL = ("streamlit", "altair", "wordcloud", "umap-learn", "pytest", "playwright", "vl-convert-python",
                     *(entry.distribution for entry in PACKAGED.values()))
EXPERIMENT_KIND, MODEL_TRAINING = "mlflow.experimentKind", "custom_model_development"
BATCH = 100  # params (MLflow's limit per batch) or metrics logged at once


class TrackingError(InputError):
    """MLflow missing, a store that cannot be reached or written, or a run that cannot be exported."""


@dataclass(frozen=True)
class Exported:
    run_id: str  # the studio's
    mlflow_run_id: str
    experiment: str
    model_uri: str | None
    updated: bool  # it had been exported before
    checked: str = ""  # what the exported model scored on the run's test texts, against the run, in words
    experiment_id: str = ""


UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves by default


def where_to_look(uri: str, exported: list[Exported]) -> tuple[str | None, dict[str, str]]:
    """How to see exported runs: the `mlflow ui` command for a local store (None for a server), and each
    experiment's runs by its name. MLflow's UI opens an experiment on its GenAI traces unless told the workflow (its
    own switch, kept per browser), so the links say it."""
    served = uri.startswith(("http://", "https://"))
    base = uri.rstrip("/") if served else UI
    links = {e.experiment: f"{base}/#/experiments/{e.experiment_id}?workflowType=machine_learning"
             for e in exported if e.experiment_id}
    return (None if served else f"mlflow ui --backend-store-uri {uri}"), links


def default_uri(home: Path) -> str:
    """The MLflow store beside the studio `home`'s registry."""
    return f"sqlite:///{home / DATABASE}"


def live_uri(registry: Registry) -> str | None:
    """Where new runs are logged as they train: `STUDIO_MLFLOW_URI`, else the Train page's setting, else nowhere."""
    return os.environ.get(URI_VARIABLE) or registry.setting(URI_SETTING) or None


def mlflow_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("mlflow") is not None


def client_for(uri: str):
    """An MLflow client on `uri`, checked: it can be reached, and a SQLite store's file can be written. A server
    that does not answer fails within seconds, not after MLflow's default retries (minutes)."""
    if not mlflow_installed():
        raise TrackingError(INSTALL)
    from mlflow.tracking import MlflowClient

    if (database := sqlite_path(uri)) is not None:
        if not database.parent.is_dir():
            raise TrackingError(f"cannot write the MLflow store {uri}: the folder {database.parent} does not exist")
        if not os.access(database.parent, os.W_OK) or (database.exists() and not os.access(database, os.W_OK)):
            raise TrackingError(f"cannot write the MLflow store {uri}: {database} is not writable")
    try:
        client = MlflowClient(tracking_uri=uri)
        client.search_experiments(max_results=1)
    except Exception as e:  # MLflow raises its own, requests' and SQLAlchemy's errors alike
        raise TrackingError(f"cannot reach the MLflow store {uri}: {one_line(e)}") from None
    return client


def sqlite_path(uri: str) -> Path | None:
    """The database file of a SQLite URI, as SQLAlchemy reads it: `sqlite:///relative.db`, `sqlite:////absolute.db`."""
    if urlparse(uri).scheme != "sqlite" or not uri.startswith("sqlite:///") or uri == "sqlite:///":
        return None
    return Path(uri[len("sqlite:///"):]).absolute()


def one_line(error: Exception) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"


def exportable(run: Run) -> None:
    """Only a run that finished has its scores and model to export."""
    if run.status != Status.DONE:
        what = f"is still {run.status}" if run.status in ACTIVE else f"ended {run.status}"
        raise TrackingError(f"run {run.id} {what}: only a finished run can be exported"
                            + (f" ({run.message})" if run.message else ""))


def export_runs(registry: Registry, runs: list[Run], uri: str,
                on_run: Callable[[int, int, str], None] | None = None) -> list[Exported]:
    """Export each run (all checked first, so an unfinished run writes nothing); `on_run(done, total, name)` before
    each."""
    for run in runs:
        exportable(run)
    client = client_for(uri)
    out = []
    for i, run in enumerate(runs):
        if on_run:
            on_run(i, len(runs), run.name)
        out.append(export_run(client, uri, registry, run))
    return out


def experiment_for(client, uri: str, name: str) -> str:
    """The experiment named after a dataset, created where missing; a SQLite store keeps its files beside it. It is a
    model-training experiment, one made before included: MLflow's UI opens an experiment without a kind on an empty
    traces page, not its runs."""
    found = client.get_experiment_by_name(name)
    if found is not None:
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        if EXPERIMENT_KIND not in found.tags:
            client.set_experiment_tag(found.experiment_id, EXPERIMENT_KIND, MODEL_TRAINING)
        return found.experiment_id
    database = sqlite_path(uri)
    location = (database.parent / ARTIFACTS).as_uri() if database else None
    return client.create_experiment(name, artifact_location=location, tags={EXPERIMENT_KIND: MODEL_TRAINING})


def find_run(client, experiment_id: str, studio_id: str):
    runs = client.search_runs([experiment_id], filter_string=f"tags.`{record.RUN_ID_TAG}` = '{studio_id}'",
                              max_results=1)
    return runs[0] if runs else None


def open_run(client, uri: str, registry: Registry, run: Run):
    """The studio run's MLflow run, found or created (with its params and tags), and whether it was found; one it
    created is deleted again if its params or tags cannot be written."""
    experiment_id = experiment_for(client, uri, run.config.data.short_name)
    found = find_run(client, experiment_id, run.id)
    started = int((run.started or run.created) * 1000)  # MLflow shows the run's own time, not the export's
    mlflow_id = (found or client.create_run(experiment_id, start_time=started, run_name=run.name)).info.run_id
    try:
        describe(client, mlflow_id, registry, run, found.data.params if found is not None else {})
    except Exception:
        if found is None:
            client.delete_run(mlflow_id)
        raise
    return mlflow_id, found is not None


def describe(client, mlflow_id: str, registry: Registry, run: Run, logged: dict[str, str]) -> None:
    """The run's params and tags; of the params, those its MLflow run lacks (`logged`): MLflow refuses to change one,
    and a studio upgrade can rename a value (a MiniLM run's backbone, "None" before migration 7, is "minilm-l6")."""
    from mlflow.entities import Param, RunTag

    params = [Param(k, v) for k, v in record.params(run).items() if k not in logged]
    for start in range(0, len(params), BATCH):
        client.log_batch(mlflow_id, params=params[start:start + BATCH])
    client.log_batch(mlflow_id, tags=[RunTag(k, v) for k, v in record.tags(run, registry).items()])


def log_curves(client, mlflow_id: str, points: list[tuple[int, dict[str, float]]]) -> None:
    """The curves' points not in the store yet: an export after the live log, or a second one, adds none twice."""
    keys = {k for _, values in points for k in values}
    have = {k: {m.step for m in client.get_metric_history(mlflow_id, k)} for k in keys}
    log_points(client, mlflow_id, [(step, {k: v for k, v in values.items() if step not in have[k]})
                                   for step, values in points])


def log_points(client, mlflow_id: str, points: list[tuple[int, dict[str, float]]]) -> None:
    """Curve points the caller knows are new (the live log's latest evaluations), in batches, with no query."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    new = [Metric(k, v, now, step) for step, values in points for k, v in values.items()]
    for start in range(0, len(new), BATCH):
        client.log_batch(mlflow_id, metrics=new[start:start + BATCH])


def export_run(client, uri: str, registry: Registry, run: Run) -> Exported:
    try:
        mlflow_id, updated = open_run(client, uri, registry, run)
    except Exception as e:
        raise TrackingError(f"exporting run {run.id} to {uri} failed, nothing of it kept: {one_line(e)}") from e
    try:
        log_curves(client, mlflow_id, record.curves(registry.evaluations(run.id)))
        log_curves(client, mlflow_id, [(0, record.metrics(run, registry.tables(run.id)))])
        log_files(client, mlflow_id, registry, run)
        model_uri = log_model(client, uri, mlflow_id, registry, run)
        with tracking_at(uri):
            checked = check_model(model_uri, run, registry.home) if model_uri else ""
        client.set_terminated(mlflow_id, "FINISHED", end_time=int((run.ended or time.time()) * 1000))
    except Exception as e:
        if not updated:  # a run half-written is no run
            client.delete_run(mlflow_id)
        kept = ("nothing of it kept" if not updated else
                f"its MLflow run {mlflow_id} keeps what it held, perhaps with part of this export: export it again")
        raise TrackingError(f"exporting run {run.id} to {uri} failed, {kept}: {one_line(e)}") from e
    experiment_id = client.get_run(mlflow_id).info.experiment_id
    return Exported(run.id, mlflow_id, client.get_experiment(experiment_id).name, model_uri, updated, checked,
                    experiment_id)


# texts whose prediction may flip between the run and its reload: a text on the fence of a bf16 rounding (a frozen
# run's features come from its store's batches, a reload's from one batch of other shapes), never a model read
# otherwise; 1% of a large test split
TOLERANCE = (2, 0.01)


def check_model(model_uri: str, run: Run, home: Path) -> str:
    """The exported model loaded as a user loads it, scored on the run's test texts, against the run's own test
    accuracy: a model that does not give it is no export of the run (a SmolLM2 model read another layer and scored
    0.369 where the run scored 0.800). Raises `TrackingError` then; says why where the test texts are gone."""
    import mlflow.pyfunc
    import pandas as pd

    from core.data import load_dataset
    from core.errors import InputError

    try:  # as the files hold them: the model cleans texts as the run did
        ds = load_dataset(run.config.data, home)
    except (InputError, OSError) as e:
        return f"not checked: the run's test texts cannot be read ({one_line(e)})"
    scored = ds.test[ds.test["label"] >= 0] if ds.test is not None else ds.train.iloc[:0]
    if scored.empty:
        return "not checked: the run's test texts have no labels"
    labels = ds.labels
    predicted = mlflow.pyfunc.load_model(model_uri).predict(pd.DataFrame({"text": scored["text"].tolist()}))["label"]
    accuracy = float((predicted.to_numpy() == [labels[i] for i in scored["label"]]).mean())
    ran = (run.metrics or {}).get("test", {}).get("accuracy")
    if ran is not None and abs(accuracy - ran) * len(scored) > max(TOLERANCE[0], TOLERANCE[1] * len(scored)):
        raise TrackingError(f"the exported model scores {accuracy:.3f} on the run's {len(scored):,} test texts where "
                            f"the run scored {ran:.3f}: it does not reproduce the run, so it is not kept")
    return f"its model scores {accuracy:.3f} on the run's {len(scored):,} test texts (the run: {ran:.3f})"


def log_files(client, mlflow_id: str, registry: Registry, run: Run) -> None:
    """config.json, the log, result.json, the test predictions and the confusion matrix as a PNG."""
    folder = registry.folder(run.id)
    for name in (folder.CONFIG, folder.LOG, folder.RESULT, folder.PREDICTIONS):
        if (folder.path / name).is_file():
            client.log_artifact(mlflow_id, str(folder.path / name))
    tables = registry.tables(run.id)
    if tables.get("classes") and len(tables["classes"]) <= DENSE_UP_TO:  # past it a matrix drawn is unreadable
        from core.plotting import chart_png, confusion, confusion_cells

        with tempfile.TemporaryDirectory() as tmp:
            picture = Path(tmp) / "confusion_matrix.png"
            cells = confusion_cells({"confusion": dense_confusion(tables), "classes": tables["classes"]})
            picture.write_bytes(chart_png(confusion(cells, tables["classes"], run.name, False)))
            client.log_artifact(mlflow_id, str(picture))


def model_requirements() -> list[str]:
    lines = []
    for file in ("requirements.txt", "requirements-nodeps.txt", "requirements-mlflow.txt"):
        for line in (REPO_ROOT / file).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and line.split("==")[0].lower() not in NOT_FOR_THE_MODEL:
                lines.append(line)
    return lines


def log_model(client, uri: str, mlflow_id: str, registry: Registry, run: Run) -> str | None:
    """The run's checkpoint as a pyfunc model, with its backbone's folder where the method reads one; a run
    whose model the store holds already keeps it (a finished run's checkpoint does not change)."""
    folder = registry.folder(run.id)
    if not folder.has_checkpoint():
        return None
    with tracking_at(uri):
        return log_model_at(client, uri, mlflow_id, registry, run)


@contextmanager
def tracking_at(uri: str) -> Iterator[None]:
    """MLflow's fluent API (which logs and loads models) pointed at `uri` for a block; after it, the process's own
    tracking URI as it was, set by `mlflow.set_tracking_uri` or by `MLFLOW_TRACKING_URI` (which MLflow's own
    `_use_tracking_uri` had deleted). The export had set the URI for the whole process."""
    import mlflow
    from mlflow.tracking._tracking_service import utils

    before, variable = utils._tracking_uri, os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(before)
        if variable is not None:  # the user's own, which setting the URI back to None unset
            os.environ["MLFLOW_TRACKING_URI"] = variable


def log_model_at(client, uri: str, mlflow_id: str, registry: Registry, run: Run) -> str:
    import mlflow

    from core.backbone import prepare_backbone
    from core.runs.tracking.detector import BACKBONE, CHECKPOINT, StudioDetector
    from core.train import method_for

    folder = registry.folder(run.id)
    experiment_id = client.get_run(mlflow_id).info.experiment_id
    logged = mlflow.search_logged_models(experiment_ids=[experiment_id], output_format="list",
                                         filter_string=f"source_run_id = '{mlflow_id}'")
    if logged:
        return logged[0].model_uri
    artifacts = {CHECKPOINT: str(folder.checkpoint)}
    if method_for(run.config).encoder != "none":
        artifacts[BACKBONE] = str(prepare_backbone(run.config.backbone, run.config.revision,
                                                   home=registry.home).folder)
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema

    from core.train.checkpoint import read_description

    labels = read_description(folder.checkpoint)["labels"]  # the classes the model predicts
    signature = ModelSignature(inputs=Schema([ColSpec("string", "text")]),
                              outputs=Schema([*(ColSpec("double", c) for c in labels), ColSpec("string", "label")]))
    with mlflow.start_run(run_id=mlflow_id):
        info = mlflow.pyfunc.log_model(name=MODEL, python_model=StudioDetector(), artifacts=artifacts,
                                       code_paths=[str(REPO_ROOT / "core")], pip_requirements=model_requirements(),
                                       signature=signature)
    location = local_folder(mlflow.get_logged_model(info.model_id).artifact_location)
    database = sqlite_path(uri)
    if BACKBONE in artifacts and location is not None and database is not None:  # the backbone held once on disk
        share(location / "artifacts" / Path(artifacts[BACKBONE]).name, database.parent / ARTIFACTS)  # by its name
    return info.model_uri
