"""A causal LM trained as an encoder (issue 83), on the CPU: every encoder-trained method trains a tiny random Llama
(SmolLM2's code path) cut at the layer its head reads, its checkpoint holds no layer above it, and the run reloads
and predicts as it scored; LoRA is a method of its own on BERT's kin and Llama's; the CPU refusal is gone and the
estimate says what a CPU without native bf16 means."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open

from core.data import CorpusConfig, DataSpec
from core.paths import home_from_environment
from core.train import TrainConfig, load_data, resolve
from tests.helpers import make_tiny_llama

DATA = DataSpec(builtin=CorpusConfig(train_per_class=8, test_per_class=3))


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    return make_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def trained(config: TrainConfig, folder: Path):
    from core.runs import RunFolder
    from core.runs.execute import train_into

    run = RunFolder(folder)
    return train_into(config, run, home_from_environment(), lambda e: None, lambda: False), run


def weights(run) -> str:
    from core.train.checkpoint import WEIGHTS

    return str(run.checkpoint / WEIGHTS)


def checkpoint_keys(run) -> set[str]:
    with safe_open(weights(run), "pt") as f:
        return set(f.keys())


def stored_probabilities(run) -> np.ndarray:
    scored = run.predictions()
    return scored[[c for c in scored.columns if c.startswith("p_")]].to_numpy()


@pytest.mark.parametrize("method, extra", [("finetune", {}), ("lora", {}), ("adapter", {}), ("ganbert", {}),
                                           ("ganbert", {"generator": "bow"}), ("ganbert", {"adversarial": False})])
def test_every_encoder_trained_method_trains_a_causal_lm_on_the_cpu_cut_at_its_pooled_layer(
        tiny_llama, studio_home, method, extra):
    """On the CPU, as on a GPU: the run finishes, its checkpoint holds layers 1-2 of the tiny Llama's 4 (it pools
    layer 2) and no final norm, and the reloaded run predicts the test texts' probabilities it stored (in fp32:
    on a CPU with native bf16 `auto` trains in bf16, whose batches of other shapes round apart by 1e-4)."""
    config = resolve(TrainConfig.of(data=DATA, method=method, backbone=str(tiny_llama), per_class=4, fraction=None,
                                 steps=3, device="cpu", precision="fp32", **extra), studio_home)
    assert not config.frozen and config.resolved_pooling == "layer2"
    result, run = trained(config, studio_home / "runs" / f"{method}-{len(extra)}")
    assert 0.0 <= result["test"]["accuracy"] <= 1.0
    keys = checkpoint_keys(run)
    layers = {int(k.split(".")[2]) for k in keys if k.startswith("encoder.layers.")}
    assert layers == ({0, 1} if method in ("finetune", "ganbert") else layers) and not layers - {0, 1}
    assert not any(k.startswith("encoder.norm.") for k in keys)
    if method in ("lora", "adapter"):  # the fixed backbone is not saved: only what trained inside it
        assert not any(k.startswith("encoder.embed_tokens.") for k in keys) and layers == {0, 1}
    predictor = run.load_model(studio_home)
    again, _ = predictor.predict(load_data(config, studio_home).test["text"].tolist())
    assert again == pytest.approx(stored_probabilities(run), abs=1e-5)
    assert len(predictor.model.encoder.layers) == 2


def test_a_checkpoint_saved_with_every_layer_loads_into_the_cut_encoder(tiny_llama, studio_home, monkeypatch):
    """A run that trained a `layer2` pooling before encoders were cut kept all 4 layers and the final norm: it loads
    into the cut model, and predicts what it predicted whole (the layers above 2 never reached its head)."""
    import core.train.methods.neural as neural

    config = resolve(TrainConfig(data=DATA, method="finetune", backbone=str(tiny_llama), per_class=4, fraction=None,
                                 steps=3, device="cpu"), studio_home)
    with monkeypatch.context() as m:
        m.setattr(neural, "last_layer", lambda pooling: None)  # as the studio built the model before
        _, run = trained(config, studio_home / "runs" / "whole")
        keys = checkpoint_keys(run)
        assert {"encoder.layers.3.mlp.up_proj.weight", "encoder.norm.weight"} <= keys
        whole, _ = run.load_model(studio_home).predict(["a text the run never saw", "and another"])
    predictor = run.load_model(studio_home)
    assert len(predictor.model.encoder.layers) == 2
    cut, _ = predictor.predict(["a text the run never saw", "and another"])
    assert cut == pytest.approx(whole, abs=1e-5)


@pytest.mark.parametrize("backbone", ["bert", "llama"])
def test_lora_trains_low_rank_updates_of_query_and_value_and_saves_only_them(backbone, tiny_backbone, tiny_llama,
                                                                            studio_home):
    """LoRA (Hu et al. 2021) as its own method: rank-8 updates B·A of each layer's query and value matrices train
    (B starts at zero, so a nonzero B is a step taken), the backbone's own weights do not move, and the checkpoint
    holds the updates and the head alone."""
    folder = tiny_backbone if backbone == "bert" else tiny_llama
    config = resolve(TrainConfig(data=DATA, method="lora", backbone=str(folder), per_class=4, fraction=None,
                                 steps=4, device="cpu", precision="fp32"), studio_home)  # the reload held exactly
    assert (config.params.lora_rank, config.params.lora_alpha, config.lr) == (8, 8.0, 5e-4) and not config.frozen
    _, run = trained(config, studio_home / "runs" / f"lora-{backbone}")
    keys = checkpoint_keys(run)
    encoder_keys = {k for k in keys if k.startswith("encoder.")}
    assert encoder_keys and all(".loras.studio.lora_" in k for k in encoder_keys)
    matrices = {k.split(".loras.")[0].rsplit(".", 1)[1] for k in encoder_keys}
    assert matrices == ({"query", "value"} if backbone == "bert" else {"q_proj", "v_proj"})
    with safe_open(weights(run), "pt") as f:
        assert all(f.get_tensor(k).abs().sum() > 0 for k in encoder_keys if k.endswith("lora_B"))
        assert {tuple(f.get_tensor(k).shape) for k in encoder_keys if k.endswith("lora_A")} == {(8, 32)}
    from core.backbone.encode import load_encoder

    predictor = run.load_model(studio_home)
    base = dict(load_encoder(str(folder), upto=None if backbone == "bert" else 2).named_parameters())
    for name, weight in predictor.model.encoder.named_parameters():
        if name in base:
            assert torch.equal(weight, base[name]), name
    again, _ = predictor.predict(load_data(config, studio_home).test["text"].tolist())
    assert again == pytest.approx(stored_probabilities(run), abs=1e-5)


def test_training_a_causal_lm_on_a_cpu_is_estimated_and_one_without_bf16_is_told_so(tiny_llama, studio_home,
                                                                                  monkeypatch, capsys):
    """No refusal on a CPU: the CLI trains the run, and before it starts gives its estimate and, on a CPU without
    native bf16, that it trains in fp32 there with its time; a CPU with native bf16 is told nothing of the kind."""
    import core.backbone.device
    from core.cli import main
    from core.compare.advice import training_notes
    from core.runs import Registry
    from core.runs.estimate import grid_seconds

    monkeypatch.setattr(core.backbone.device, "native_bf16", lambda device: False)
    args = ["train", "--train", "builtin", "--method", "finetune",
            "--backbone", str(tiny_llama), "--per-class", "4", "--steps", "2", "--device", "cpu"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "estimate: 1 run(s), " in err
    assert (f"note: Fine-tuning on {tiny_llama.name} trains every layer in fp32 here, as this CPU has no native bf16"
            in err)
    assert json.loads(Registry(studio_home).list()[0].config.to_json())["backbone"] == str(tiny_llama)

    configs = [resolve(TrainConfig(data=DATA, method=m, backbone=str(tiny_llama), per_class=4, fraction=None,
                                   device="cpu", frozen=m == "features-lr"), studio_home) for m in ("finetune", "lora",
                                                                                        "features-lr")]
    estimate = grid_seconds(Registry(studio_home), configs, 48, None, 18, 6)
    notes = training_notes(configs, estimate)
    assert len(notes) == 2 and notes[1].startswith("LoRA on")  # the frozen run trains no layer
    top = training_notes([configs[0].with_(train_layers=2)], estimate)  # K said, as the form leaves it to the backbone
    assert top[0].startswith(f"Fine-tuning on {tiny_llama.name} trains its top 2 layers (on states the layers below")
    assert training_notes([configs[0].with_(backbone=None)], estimate) == []  # MiniLM is no causal LM
    monkeypatch.setattr(core.backbone.device, "native_bf16", lambda device: True)
    assert training_notes(configs, estimate) == []


def test_the_cli_says_each_stage_of_converting_a_packaged_backbone(tiny_llama, monkeypatch, capsys):
    """Its 20 to 50 s of conversion had passed without a word but a tensor bar (issue 95 item 5). Converted here
    from a tiny Llama, the real conversion being tests/test_causal_backbone.py's."""
    import shutil

    from core.backbone import packaged
    from core.cli import main
    from tests.helpers import need_smollm2

    need_smollm2()

    def convert(source, folder, on_stage):
        for i, stage in enumerate(packaged.STAGES):
            on_stage(i, len(packaged.STAGES), stage)
        shutil.copytree(tiny_llama, folder)
        (folder / packaged.DONE).write_text("{}")

    monkeypatch.setattr(packaged, "convert", convert)
    args = ["train", "--train", "builtin", "--method", "features-lr", "--backbone", packaged.SMOLLM2,
            "--per-class", "4", "--device", "cpu"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("converting ")] == [
        f"converting {packaged.SMOLLM2} from its GGUF file, once for this studio home: {stage} ({i + 1} of 3)"
        for i, stage in enumerate(packaged.STAGES)]


def test_the_sidebar_names_one_thread_in_the_singular(monkeypatch):
    """A walk with OMP_NUM_THREADS=1 read 'CPU (1 threads)'."""
    import torch

    from core.backbone.device import describe_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert describe_device() == "CPU (1 thread)"
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert describe_device() == "CPU (2 threads)"
