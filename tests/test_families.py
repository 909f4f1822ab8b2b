"""A family of models is one entry in `core.backbone.families`: GPT-2's (layers in `h`, positions added to given
embeddings, a final `ln_f`, `attn_pdrop`, `n_layer` and `n_embd`) makes a tiny random GPT-2 encode, train with
every method, reload and predict what it scored; without the entry it is refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open

from core.backbone import attention_dropout, depth, width
from core.errors import InputError
from core.train import TrainConfig, load_data, resolve
from tests.helpers import DATA, make_tiny_gpt2
from tests.test_causal_training import stored_probabilities, trained


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory) -> Path:
    return make_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


def layers_saved(run) -> set[int]:
    with safe_open(str(run.path / "checkpoint" / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert not any(k.startswith("encoder.ln_f.") for k in keys)  # cut below it: the final norm is not run
    return {int(k.split(".")[2]) for k in keys if k.startswith("encoder.h.")}


def test_the_table_reads_a_gpt2_config_by_its_own_names(tiny_gpt2):
    assert depth(str(tiny_gpt2)) == (4, True)  # n_layer, and causal: its features read a middle layer
    assert width(str(tiny_gpt2)) == 32  # n_embd
    assert attention_dropout(str(tiny_gpt2)) == pytest.approx(0.1)  # attn_pdrop


@pytest.mark.parametrize("method, extra, saved", [
    ("features-lr", {"frozen": True}, set()), ("finetune", {}, {0, 1}), ("finetune", {"train_layers": 1}, {1}),
    ("lora", {}, {0, 1}), ("adapter", {}, {0, 1}), ("ganbert", {}, {0, 1}), ("ganbert", {"generator": "bow"}, {0, 1}),
    ("setfit", {"setfit_iterations": 1}, None)])
def test_every_method_trains_a_gpt2_reloads_it_and_predicts_what_it_scored(tiny_gpt2, studio_home, method, extra,
                                                                            saved):
    """Cut at the layer it pools (2 of 4), each method's run finishes and its reload predicts the test texts'
    stored probabilities; a top-1 run trains layer 2 alone above states that crossed without their positions
    added twice (`Cut.check` holds the halves to the whole)."""
    config = resolve(TrainConfig.of(data=DATA, method=method, backbone=str(tiny_gpt2), per_class=4, fraction=None,
                                 steps=3, device="cpu", precision="fp32", **extra), studio_home)
    assert config.resolved_pooling == "layer2"
    result, run = trained(config, studio_home / "runs" / f"{method}-{len(extra)}")
    assert 0.0 <= result["test"]["accuracy"] <= 1.0
    if saved is not None:
        assert layers_saved(run) == saved if method in ("finetune", "ganbert") else layers_saved(run) <= saved
    again, _ = run.load_model(studio_home).predict(load_data(config, studio_home).test["text"].tolist())
    assert np.asarray(again) == pytest.approx(stored_probabilities(run), abs=1e-5)


def test_a_family_the_table_lacks_is_refused_by_name(tiny_gpt2, studio_home, monkeypatch):
    from core.backbone import families

    monkeypatch.delitem(families.FAMILIES, "gpt2")
    config = resolve(TrainConfig(data=DATA, method="finetune", backbone=str(tiny_gpt2), per_class=4, fraction=None,
                                 steps=2, device="cpu", precision="fp32", pooling="mean"), studio_home)
    with pytest.raises(InputError, match="gpt2 is not a family the studio knows .* one entry in core/backbone/"
                                         "families.py adds it"):
        trained(config, studio_home / "runs" / "refused")


def test_above_the_boundary_a_gpt2_applies_no_embedding_dropout_again(tiny_gpt2, tmp_path):
    """The states at the boundary crossed GPT-2's dropout on its embeddings once, below it; the top layers in
    training mode had applied it again (`embd_pdrop`), which the whole model never does at that layer."""
    import json
    import shutil

    import torch

    from core.backbone.cut import split_at
    from core.backbone.encode import load_cut

    folder = tmp_path / "gpt2"
    shutil.copytree(tiny_gpt2, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"embd_pdrop": 0.5, "resid_pdrop": 0.0,
                                                             "attn_pdrop": 0.0}))
    cut = split_at(load_cut(str(folder)), 2)
    ids = torch.tensor([[101, 2040, 2041, 102]])
    mask = torch.ones_like(ids)
    states = cut.below(ids, mask, rounded=False)
    cut.model.train()
    with torch.no_grad():
        first, second = (cut.above(states, mask).last_hidden_state for _ in range(2))
    assert torch.equal(first, second)


def test_a_named_backbone_is_one_entry_in_the_table(tiny_gpt2, studio_home, tmp_path, monkeypatch):
    """A backbone the studio names (as it names MiniLM and SmolLM2) is one entry in `PACKAGED`: a package holding a
    tiny GPT-2's folder, entered under a name, reads its facts from the entry (no file), trains its entry's top
    layers, is named by its entry in the run's title, reloads and predicts; MiniLM, the default, is such an entry."""
    import shutil

    from core.backbone import backbone_label, resolve_backbone
    from core.backbone.packaged import DEFAULT_BACKBONE, MINILM, PACKAGED, Packaged
    from core.train.methods import run_label

    package = tmp_path / "site" / "tiny_named"
    shutil.copytree(tiny_gpt2, package / "model")
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setitem(PACKAGED, "tiny-gpt2", Packaged("tiny_named", "Tiny GPT-2 (a test's)", "a test entry",
                                                        "gpt2", 5, 32, 2, 30522, 0.0, None, 2, 1, "made by the test"))
    assert depth("tiny-gpt2") == (5, True) and attention_dropout("tiny-gpt2") == 0.0  # the entry's, not the file's
    assert resolve_backbone("tiny-gpt2", home=None).folder == package / "model"
    monkeypatch.setitem(PACKAGED, "tiny-gpt2", Packaged("tiny_named", "Tiny GPT-2 (a test's)", "a test entry",
                                                        "gpt2", 4, 32, 2, 30522, 0.1, None, 2, 1, "made by the test"))
    config = resolve(TrainConfig.of(data=DATA, method="finetune", backbone="tiny-gpt2", per_class=4, fraction=None,
                                    steps=3, device="cpu", precision="fp32"), studio_home)
    assert (config.train_layers, config.resolved_pooling) == (1, "layer2")  # the entry's K and layer
    assert backbone_label("tiny-gpt2") == "Tiny GPT-2 (a test's)" and "· Tiny GPT, top 1 layer" in run_label(config)
    result, run = trained(config, studio_home / "runs" / "named")
    assert layers_saved(run) == {1}
    again, _ = run.load_model(studio_home).predict(load_data(config, studio_home).test["text"].tolist())
    assert np.asarray(again) == pytest.approx(stored_probabilities(run), abs=1e-5)
    assert DEFAULT_BACKBONE == MINILM and TrainConfig().backbone == MINILM == TrainConfig(backbone=None).backbone
    assert resolve_backbone(None, home=None) == resolve_backbone(MINILM, home=None)
