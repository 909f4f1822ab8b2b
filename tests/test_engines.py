"""Encoding engines for frozen features: every family exports to ONNX (or falls back to torch and says so), ONNX
fp32 gives torch's features, int8 close to them, the feature stores of two engines never mix, a run records its
engine and predicts with it, and a run made before engines reloads and predicts as it did."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import HUB_FAMILIES

from core.backbone import resolve_backbone
from core.backbone.engines import ExportError, encode_with, export_folder, usable_engine
from core.data import CorpusConfig, DataSpec
from core.runs import Registry, RunFolder, Status
from core.runs.execute import execute_run, train_into
from core.train import TrainConfig, classify, load_data, resolve
from core.train.feature_store import store_key

DATA = DataSpec(builtin=CorpusConfig(train_per_class=12, test_per_class=4))
TEXTS = ["A short text.", "Another text about tomato plants and raised beds, a little longer than the first.",
         "Tiny"]
CPU = torch.device("cpu")


@pytest.mark.parametrize("family", HUB_FAMILIES)
def test_every_family_exports_and_its_onnx_features_are_torchs(hf_home, studio_home, family):
    backbone = resolve_backbone(f"studio-test/tiny-{family}", home=studio_home)
    said: list[str] = []
    engine = usable_engine("onnx", backbone, studio_home, CPU, said.append)
    for pooling in ("layers", "mean", "pooled"):
        reference = encode_with("torch", backbone, studio_home, TEXTS, 32, pooling, CPU, bf16=False)
        got = encode_with(engine, backbone, studio_home, TEXTS, 32, pooling, CPU, bf16=False)
        np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-4)
    if engine == "torch":  # a family that cannot export says so, and its runs encode with torch
        assert said and "could not be exported to ONNX" in said[0]
    else:
        assert said == [] and (export_folder(backbone, studio_home) / "model.onnx").exists()


def test_int8_features_stay_close_and_every_engine_has_its_own_store(tiny_backbone, studio_home):
    backbone = resolve_backbone(str(tiny_backbone), home=studio_home)
    reference = encode_with("torch", backbone, studio_home, TEXTS, 32, "layers", CPU, bf16=False)
    int8 = encode_with(usable_engine("onnx-int8", backbone, studio_home, CPU), backbone, studio_home, TEXTS, 32,
                       "layers", CPU, bf16=False)
    cosine = (int8 * reference).sum(1) / np.linalg.norm(int8, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.min() > 0.9 and not np.allclose(int8, reference)
    keys = {engine: store_key(backbone, 32, "layers", False, engine) for engine in ("torch", "onnx", "onnx-int8")}
    assert len(set(keys.values())) == 3
    assert keys["torch"] == store_key(backbone, 32, "layers", False)  # torch's stores from before engines stay


def test_a_family_that_cannot_export_falls_back_to_torch_and_says_so(tiny_backbone, studio_home, monkeypatch):
    from core.backbone import engines

    tries = []

    def refuse(backbone, path):
        tries.append(path)
        raise ExportError(f"{backbone.name} could not be exported to ONNX (a test)")
    monkeypatch.setattr(engines, "export", refuse)
    said: list[str] = []
    for _ in range(2):
        backbone = resolve_backbone(str(tiny_backbone), home=None)
        assert usable_engine("onnx", backbone, studio_home, CPU, said.append) == "torch"
    assert said == [f"{tiny_backbone} could not be exported to ONNX (a test); encoding with torch instead"] * 2
    assert len(tries) == 1  # remembered: the next run does not try again


@pytest.mark.parametrize("engine, tolerance", [("onnx", 1e-4), ("onnx-int8", 0.1)])
def test_a_run_records_its_engine_and_predicts_with_it(tiny_backbone, studio_home, tmp_path, engine, tolerance):
    """Classify reads a frozen run's features from the engine it trained on. int8's dynamic quantisation scales
    each batch's activations by that batch's range, so a text's features move a little with its batch-mates."""
    config = resolve(TrainConfig(data=DATA, backbone=str(tiny_backbone), method="features-lr", frozen=True,
                                 per_class=4, fraction=None, max_len=32, encoder_engine=engine), studio_home)
    assert config.encoder_engine == engine and config.precision == "fp32"  # ONNX Runtime computes in fp32
    result = train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    assert result["engine"] == engine
    folder = RunFolder(tmp_path)
    tests = folder.predictions()  # what the run scored on its test texts
    texts = load_data(config, studio_home).test.set_index("id").loc[tests["id"], "text"].tolist()[:6]
    predicted = [list(p.probabilities.values()) for p in classify(folder.load_model(studio_home), texts)]
    np.testing.assert_allclose(predicted, tests[[c for c in tests if c.startswith("p_")]].to_numpy()[:6],
                               atol=tolerance)
    trained = resolve(config.with_(method="finetune", frozen=False, encoder_engine="onnx"), studio_home)
    assert trained.encoder_engine == "torch"


def test_a_run_from_before_engines_reloads_and_predicts_as_it_did(tiny_backbone, studio_home):
    config = resolve(TrainConfig(data=DATA, backbone=str(tiny_backbone), method="finetune", frozen=True,
                                 per_class=4, fraction=None, max_len=32, steps=3, encoder_engine="torch"), studio_home)
    registry = Registry(studio_home)
    run_id = registry.create(config)
    registry.claim(run_id)
    assert execute_run(registry, run_id) == Status.DONE
    before = classify(registry.folder(run_id).load_model(studio_home), TEXTS)[0].probabilities
    stored = json.loads(config.to_json())
    stored.pop("encoder_engine")  # as a version before engines wrote it
    with registry._connect() as db:
        db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(stored), run_id))
    description = registry.folder(run_id).checkpoint / "model.json"
    description.write_text(json.dumps({**json.loads(description.read_text()), "config": stored}))
    run = registry.get(run_id)
    assert run.config.encoder_engine == "torch"
    assert classify(registry.folder(run_id).load_model(studio_home), TEXTS)[0].probabilities == pytest.approx(before)


def test_a_file_predicted_with_a_frozen_run_is_encoded_once_per_store(tiny_backbone, studio_home, tmp_path,
                                                                       monkeypatch):
    """`predict --file` (and Classify's file tab) reads and fills the feature store training reads: the run's own
    test texts are not encoded again, a new file is encoded once whichever run of that backbone, layer and length
    reads it next, and each text's probabilities are what the run scored from the store."""
    from core.cli import main
    from core.train import inputs

    registry = Registry(studio_home)
    runs = []
    for method in ("features-lr", "ganbert"):
        config = resolve(TrainConfig(data=DATA, backbone=str(tiny_backbone), method=method, frozen=True, per_class=4,
                                     fraction=None, max_len=32, steps=3), studio_home)
        runs.append(registry.create(config))
        registry.claim(runs[-1])
        assert execute_run(registry, runs[-1]) == Status.DONE
    encoded = []
    real = inputs.encoder_for

    def counting(*args, **kwargs):
        encode = real(*args, **kwargs)
        return lambda texts, on_progress: encoded.append(len(texts)) or encode(texts, on_progress)
    monkeypatch.setattr(inputs, "encoder_for", counting)
    test = load_data(config, studio_home).test
    own, new = tmp_path / "own.jsonl", tmp_path / "new.jsonl"
    own.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(test["id"], test["text"])))
    new.write_text("".join(json.dumps({"id": f"n{i}", "text": f"a text no run has seen, number {i}"}) + "\n"
                           for i in range(7)))
    assert main(["predict", runs[0], "--file", str(own), "--out", str(tmp_path / "own.csv")]) == 0
    assert encoded == []  # its test texts: in the store since it trained
    for run_id in runs:
        assert main(["predict", run_id, "--file", str(new), "--out", str(tmp_path / f"{run_id}.csv")]) == 0
    assert encoded == [7]  # once, by the first run to ask
    scored = registry.folder(runs[0]).predictions().set_index("id")
    written = pd.read_csv(tmp_path / "own.csv").set_index("id")
    columns = [c for c in scored.columns if c.startswith("p_")]
    np.testing.assert_allclose(written.loc[scored.index.astype(written.index.dtype), columns].to_numpy(),
                               scored[columns].to_numpy(), atol=1e-6)
