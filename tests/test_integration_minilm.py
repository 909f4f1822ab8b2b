"""The real MiniLM, frozen, on the real M4 sample (5 classes present, held-out documents; chance is 0.2)."""

from __future__ import annotations

import pytest

from core.data import DataSpec
from core.paths import home_from_environment
from core.runs import RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, classify, resolve

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spec(m4_dir) -> DataSpec:
    return DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl"))


def run(spec, tmp_path, **kw) -> dict:
    base = dict(data=spec, frozen=True, epochs=20, batch_size=16, patience=5)
    home = home_from_environment()
    return train_into(resolve(TrainConfig.of(**{**base, **kw}), home), RunFolder(tmp_path), home, lambda e: None,
                      lambda: False)


def test_layers_pooling_learns_style_where_last_layer_mean_does_not(spec, tmp_path):
    layers = run(spec, tmp_path / "layers", method="finetune", fraction=1.0)
    mean = run(spec, tmp_path / "mean", method="finetune", fraction=1.0, pooling="mean")
    assert layers["test"]["accuracy"] > 0.45, layers["test"]["accuracy"]  # measured 0.585
    assert layers["test"]["accuracy"] > mean["test"]["accuracy"] + 0.15  # mean measured 0.169


def test_ganbert_bow_on_real_text_beats_chance_and_predicts(spec, tmp_path, studio_home):
    result = run(spec, tmp_path, method="ganbert", generator="bow", fraction=0.5)
    assert result["test"]["accuracy"] > 0.25, result["test"]["accuracy"]  # measured 0.354
    model = RunFolder(tmp_path).load_model(studio_home)
    pred = classify(model, ["We propose a novel method for graph neural networks and evaluate it on three benchmarks."])
    assert pred[0].label in model.labels and pred[0].fake_probability is not None
