"""Backbones by hub id from a local Hugging Face cache (offline), every encoder family with every method,
revisions pinned into runs, the opt-in download, and the precision `auto` picks."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import HUB_FAMILIES, commit_of, place_in_hub

from core.backbone import DEFAULT_TITLE, BackboneError, cached_models, hub_cache_dir, resolve_backbone
from core.backbone import device as device_module
from core.backbone.download import chosen_files, download
from core.backbone.encode import load_tokenizer
from core.cli import main
from core.data import CorpusConfig, DataSpec
from core.runs import Registry, RunFolder
from core.runs.execute import train_into
from core.train import METHODS, TrainConfig, classify, load_data, resolve
from core.train.checkpoint import read_description
from core.train.feature_store import store_key

DATA = DataSpec(builtin=CorpusConfig(train_per_class=12, test_per_class=4))


def test_a_hub_id_resolves_to_its_cached_snapshot_and_revision(hf_home, studio_home):
    backbone = resolve_backbone("studio-test/tiny-roberta", home=studio_home)
    assert backbone.revision == commit_of("roberta") and backbone.hub_id == "studio-test/tiny-roberta"
    assert backbone.folder == hub_cache_dir() / "models--studio-test--tiny-roberta" / "snapshots" / commit_of("roberta")
    assert hub_cache_dir() == hf_home / "hub"
    bundled = resolve_backbone(None, home=studio_home)
    assert bundled.name == DEFAULT_TITLE and bundled.revision is None
    tokenizer = load_tokenizer(backbone)  # the model's own special tokens, not BERT's
    assert tokenizer.pad_token == "<pad>" and tokenizer.pad_token_id == 1 and tokenizer.cls_token == "<s>"


def test_the_picker_lists_every_cached_encoder_with_its_size_and_no_decoder(hf_home):
    models = {m.hub_id: m for m in cached_models()}
    assert set(models) == {f"studio-test/tiny-{f}" for f in HUB_FAMILIES}
    roberta = models["studio-test/tiny-roberta"]
    assert roberta.revision == commit_of("roberta") and roberta.model_type == "roberta" and roberta.size_bytes > 10_000
    assert roberta.label.startswith("studio-test/tiny-roberta (roberta, ") and roberta.label.endswith("kB)")


def test_an_empty_cache_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    assert cached_models() == []


def test_a_missing_hub_id_exits_2_naming_the_cache_and_how_to_get_it(hf_home, capsys, studio_home):
    code = main(["train", "--train", "builtin", "--method", "finetune", "--frozen", "--per-class", "2",
                 "--backbone", "bert-base-cased"])
    err = capsys.readouterr().err
    assert code == 2
    assert "bert-base-cased is not in the local Hugging Face cache" in err and str(hf_home / "hub") in err
    assert "huggingface-cli download bert-base-cased" in err and "--allow-download" in err
    assert Registry(studio_home).list() == []  # nothing was queued


@pytest.mark.parametrize("family", [f for f in HUB_FAMILIES if f != "bert"])
@pytest.mark.parametrize("method, kw", [
    ("finetune", {}),
    ("adapter", {}),
    ("ganbert", {"frozen": True, "generator": "bow"}),
    ("features-lr", {}),
])
def test_every_family_trains_with_every_method_and_reloads_identically(hf_home, tmp_path, family, method, kw,
                                                                       studio_home):
    config = resolve(TrainConfig.of(data=DATA, method=method, backbone=f"studio-test/tiny-{family}", per_class=4,
                                  fraction=None, steps=4, evaluations=2, max_len=48, precision="fp32", **kw),
                     studio_home)
    assert config.revision == commit_of(family)
    result = train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    saved = pd.read_parquet(tmp_path / RunFolder.PREDICTIONS)
    assert result["test"]["accuracy"] == pytest.approx((saved["pred"] == saved["label"]).mean())  # as it predicted
    model = RunFolder(tmp_path).load_model(studio_home)
    texts = load_data(config, studio_home).test["text"].tolist()
    probs = np.array([[p.probabilities[c] for c in model.labels] for p in classify(model, texts)])
    np.testing.assert_allclose(probs, saved[[f"p_{c}" for c in model.labels]].to_numpy(), atol=1e-4)


def test_setfit_tunes_a_roberta_body_from_the_cache(hf_home, tmp_path, studio_home):
    config = resolve(TrainConfig(data=DATA, method="setfit", backbone="studio-test/tiny-roberta", per_class=4,
                                  fraction=None, steps=2, max_len=48), studio_home)
    result = train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    assert result["steps"] == 2
    model = RunFolder(tmp_path).load_model(studio_home)
    assert len(classify(model, ["a text to classify"])) == 1


def test_a_run_by_hub_id_trains_compares_classifies_and_reloads_by_its_revision(hf_home, capsys, studio_home):
    flags = ["train", "--train", "builtin", "--method", "finetune", "--frozen", "--per-class", "3", "--steps", "5",
             "--evaluations", "1", "--backbone", "studio-test/tiny-roberta", "--tag", "hub"]
    assert main(flags + ["--seed", "0"]) == 0
    run_id = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_id"]
    assert main(flags + ["--seed", "1"]) == 0
    capsys.readouterr()
    run = Registry(studio_home).get(run_id)
    assert run.config.backbone == "studio-test/tiny-roberta" and run.config.revision == commit_of("roberta")
    description = read_description(Registry(studio_home).folder(run_id).path / RunFolder.CHECKPOINT)
    assert description["backbone"]["hub_id"] == "studio-test/tiny-roberta"
    assert description["backbone"]["revision"] == commit_of("roberta")

    assert main(["compare", "--tag", "hub", "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert len(groups) == 1 and groups[0]["n"] == 2

    assert main(["predict", run_id, "a short text"]) == 0
    assert "probabilities" in capsys.readouterr().out

    # main moves to a new snapshot: the run still reads the weights it was trained on
    place_in_hub(hf_home / "hub", "studio-test/tiny-roberta", hf_home.parent / "newer", commit_of("roberta", 1))
    assert main(["predict", run_id, "a short text"]) == 0
    capsys.readouterr()
    # and says so clearly when they are gone
    shutil.rmtree(hf_home / "hub" / "models--studio-test--tiny-roberta" / "snapshots" / commit_of("roberta"))
    assert main(["predict", run_id, "a short text"]) == 2
    err = capsys.readouterr().err
    assert f"at revision {commit_of('roberta')} is no longer in the Hugging Face cache" in err
    assert f"huggingface-cli download studio-test/tiny-roberta --revision {commit_of('roberta')}" in err


def test_two_revisions_never_share_features(hf_home, hub_models, studio_home):
    place_in_hub(hf_home / "hub", "studio-test/tiny-bert", hub_models / "bert", commit_of("bert", 1), main=False)
    old = resolve_backbone("studio-test/tiny-bert", home=studio_home)
    new = resolve_backbone("studio-test/tiny-bert", commit_of("bert", 1), home=studio_home)
    assert old.folder != new.folder and new.revision == commit_of("bert", 1)
    assert store_key(old, 128, "layers", False) != store_key(new, 128, "layers", False)
    assert store_key(old, 128, "layers", False) != store_key(old, 128, "layers", True)  # nor two precisions


def test_download_is_opt_in_and_reports_a_failure_clearly(hf_home, monkeypatch):
    """Without --allow-download nothing is fetched; with it, an unreachable hub fails with its reason."""
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(BackboneError, match="could not download studio-test/elsewhere"):
        download("studio-test/elsewhere")
    assert not (hub_cache_dir() / "models--studio-test--elsewhere" / "snapshots").exists()


def test_a_download_takes_one_copy_of_the_weights_and_the_tokenizer():
    listing = {"config.json": 1, "model.safetensors": 400, "pytorch_model.bin": 400, "tf_model.h5": 400,
               "vocab.txt": 2, "tokenizer.json": 3, "onnx/model.onnx": 400, "1_Pooling/config.json": 1,
               "README.md": 5, "spm.model": 4}
    assert set(chosen_files(listing)) == {"config.json", "model.safetensors", "vocab.txt", "tokenizer.json",
                                          "1_Pooling/config.json", "spm.model"}
    assert "pytorch_model.bin" in chosen_files({"config.json": 1, "pytorch_model.bin": 400})


def test_precision_auto_is_bf16_only_where_the_hardware_has_it(monkeypatch, tiny_backbone, studio_home):
    cpu = torch.device("cpu")
    for native in (False, True):
        monkeypatch.setattr(device_module, "native_bf16", lambda device, native=native: native)
        assert device_module.use_bf16("auto", cpu) is native
        assert device_module.use_bf16("fp32", cpu) is False and device_module.use_bf16("bf16", cpu) is True
        pinned = resolve(TrainConfig(data=DATA, backbone=str(tiny_backbone), frozen=True), studio_home)
        assert pinned.precision == ("bf16" if native else "fp32")  # a run records what it ran at


def test_a_bf16_run_reloads_to_its_predictions_within_bf16_rounding(tiny_backbone, tmp_path, studio_home):
    """Reload tests run in fp32, where a reload is exact; bf16 rounds differently with each batch's padding, so a
    bf16 run's reload matches to bf16's precision (8 bits of mantissa), and stays bf16."""
    config = resolve(TrainConfig(data=DATA, method="finetune", backbone=str(tiny_backbone), per_class=4,
                                  fraction=None, steps=4, max_len=48, precision="bf16"), studio_home)
    train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    saved = pd.read_parquet(tmp_path / RunFolder.PREDICTIONS)
    model = RunFolder(tmp_path).load_model(studio_home)
    assert model.config.precision == "bf16"
    texts = load_data(config, studio_home).test["text"].tolist()
    probs = np.array([[p.probabilities[c] for c in model.labels] for p in classify(model, texts)])
    np.testing.assert_allclose(probs, saved[[f"p_{c}" for c in model.labels]].to_numpy(), atol=2e-2)


def test_a_config_written_with_the_bf16_switch_reads_as_its_precision():
    for old, precision in ((True, "bf16"), (False, "fp32")):
        raw = json.loads(TrainConfig().to_json())
        del raw["precision"]
        raw["bf16"] = old
        assert TrainConfig.from_json(json.dumps(raw)).precision == precision


def test_adapters_on_a_family_the_library_does_not_support_say_so():
    from transformers import MPNetConfig, MPNetModel

    from core.errors import InputError
    from core.train.methods.adapter import Adapter

    encoder = MPNetModel(MPNetConfig(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32))
    with pytest.raises(InputError, match="the adapters library does not support mpnet models"):
        Adapter(METHODS["adapter"]).adapt_encoder(encoder, TrainConfig(method="adapter"), 0)
