"""Training only the top K layers on stored states (issue 94): a top-K run of every encoder-trained method on the tiny
BERT and the tiny Llama trains its top K layers alone (the rest bit-identical after training), stores each text's
states at its boundary once and reads them back on its next run instead of running the layers below, predicts after a
reload what it scored, and its store is bounded, survives damage and a full disk, and is cleared from the CLI."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open

from core.data import CorpusConfig, DataSpec
from core.errors import InputError
from core.paths import home_from_environment
from core.train import TrainConfig, load_data, resolve
from tests.helpers import make_tiny_llama

# 12 train texts a class: 4 labeled, 4 validating, 4 unlabeled for GAN-BERT's game
DATA = DataSpec(builtin=CorpusConfig(train_per_class=12, test_per_class=3))
METHODS = [("finetune", {}), ("lora", {}), ("adapter", {}), ("ganbert", {}), ("ganbert", {"generator": "bow"}),
           ("ganbert", {"adversarial": False})]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    return make_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def top_k(folder: Path, method: str = "finetune", seed: int = 0, **extra) -> TrainConfig:
    """A top-K run on a tiny backbone: K=1 of the tiny BERT's 2 layers, or of the 2 the tiny Llama's cut keeps (it
    pools layer 2 of 4), in fp32 so a reload is held exactly."""
    return resolve(TrainConfig.of(data=DATA, method=method, backbone=str(folder), per_class=4, fraction=None, steps=3,
                               seed=seed, device="cpu", precision="fp32", **{"train_layers": 1, **extra}),
                   home_from_environment())


def trained(config: TrainConfig, folder: Path):
    from core.runs import RunFolder
    from core.runs.execute import train_into

    run = RunFolder(folder)
    return train_into(config, run, home_from_environment(), lambda e: None, lambda: False), run


def layer_of(name: str) -> int | None:
    parts = name.split(".")
    for i, part in enumerate(parts[:-1]):
        if part in ("layer", "layers") and parts[i + 1].isdigit():
            return int(parts[i + 1])
    return None


class Counted:
    """How many texts the layers below a boundary ran on, in training (`Cut.below` as a run calls it; the cut's own
    check runs them unrounded, on one five-token text)."""

    def __init__(self, monkeypatch):
        from core.backbone.cut import Cut

        self.texts, below = 0, Cut.below

        def counting(cut, input_ids, attention_mask, inputs_embeds=None, rounded=True):
            if rounded:
                self.texts += len(attention_mask)
            return below(cut, input_ids, attention_mask, inputs_embeds, rounded)
        monkeypatch.setattr(Cut, "below", counting)


@pytest.mark.parametrize("method, extra", METHODS)
@pytest.mark.parametrize("family", ["bert", "llama"])
def test_a_top_k_run_trains_its_top_layers_alone_reads_stored_states_again_and_reloads_as_it_scored(
        family, method, extra, tiny_backbone, tiny_llama, studio_home, monkeypatch):
    import core.train.methods.neural as neural
    from core.backbone.encode import load_encoder

    folder = tiny_backbone if family == "bert" else tiny_llama
    built = []
    build = neural.NeuralTrainer.build_model
    monkeypatch.setattr(neural.NeuralTrainer, "build_model",
                        lambda self, *a: built.append(build(self, *a)) or built[-1])
    counted = Counted(monkeypatch)
    config = top_k(folder, method, **extra)
    assert config.train_layers == 1
    _, run = trained(config, studio_home / "runs" / "first")

    model = built[-1]
    assert model.cut.boundary == 1 and model.cut.trained_layers == 1
    base = dict(load_encoder(str(folder), upto=None if family == "bert" else 2).named_parameters())
    moved = set()
    for name, weight in model.encoder.named_parameters():
        if name not in base:
            continue  # an adapter's or LoRA's own weights, above the boundary
        layer = layer_of(name)
        if layer is None and "embed" in name or layer is not None and layer < 1:  # below: bit-identical
            assert torch.equal(weight, base[name]) and not weight.requires_grad, name
        elif not torch.equal(weight, base[name]):
            moved.add(layer)
    if method in ("finetune", "ganbert"):  # the whole top layer trains
        assert moved == {1}
    else:  # adapters and LoRA: the backbone fixed, their parts in the top layer alone
        assert not moved
        assert {layer_of(n) for n, p in model.encoder.named_parameters() if p.requires_grad} == {1}

    with safe_open(str(run.checkpoint / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    encoder_keys = [k for k in keys if k.startswith("encoder.") and not k.startswith("encoder.pooler.")]
    assert {layer_of(k) for k in encoder_keys} == {1}, "the checkpoint holds the trained layer, not the backbone's"

    data = load_data(config, studio_home)
    first = counted.texts
    unlabeled = 0 if method != "ganbert" or not extra.get("adversarial", True) else 4 * len(data.labels)
    assert 0 < first <= 8 * len(data.labels) + len(data.test) + unlabeled  # labeled, validation, test (and pool)

    predictor = run.load_model(studio_home)
    scored = run.predictions()
    again, _ = predictor.predict(data.test["text"].tolist())
    assert again == pytest.approx(scored[[c for c in scored.columns if c.startswith("p_")]].to_numpy(), abs=1e-5)

    counted.texts = 0
    trained(config.with_(tags=("again",)), studio_home / "runs" / "second")
    assert counted.texts == 0, "a second run reads every state from the store"


def test_states_cross_the_boundary_in_bf16_on_every_path_and_a_broken_view_is_refused(tiny_backbone, monkeypatch):
    """Training, evaluation and a reload's whole pass all round the boundary's states to bf16, so they agree; and a
    family whose layers the views cannot run apart (here BERT with its embeddings applied again above the boundary)
    is refused when the cut is made, not trained wrong."""
    import dataclasses

    from core.backbone import families
    from core.backbone.cut import Cut, split_at
    from core.backbone.encode import load_cut

    cut = split_at(load_cut(str(tiny_backbone)), 1)
    ids = torch.tensor([[2, 40, 41, 42, 3, 0], [2, 50, 51, 3, 0, 0]])
    mask = (ids > 0).long()
    with torch.no_grad():
        states = cut.below(ids, mask)
        assert states.dtype == torch.bfloat16
        through = cut.above(states, mask).last_hidden_state
        whole = cut.outputs({"input_ids": ids, "attention_mask": mask}).last_hidden_state
    assert torch.equal(through, whole)
    monkeypatch.setitem(families.FAMILIES, "bert", dataclasses.replace(families.FAMILIES["bert"], embeddings=()))
    with pytest.raises(InputError, match="not supported for bert models"):
        split_at(Cut(cut.model), 1)


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "electra", "deberta-v2", "llama", "gpt2"])
def test_every_family_the_studio_loads_runs_its_two_halves_as_the_whole_model(family, tmp_path):
    """The cut's own check passes on each family, and its halves give the whole pass to the last bit (in fp32,
    unrounded), padding included."""
    from core.backbone.cut import split_at
    from core.backbone.encode import load_cut
    from tests.conftest import tiny_family
    from tests.helpers import make_tiny_gpt2

    made = {"llama": make_tiny_llama, "gpt2": make_tiny_gpt2}
    folder = made[family](tmp_path) if family in made else tiny_family(family, tmp_path)
    cut = split_at(load_cut(str(folder)), 1)
    ids = torch.tensor([[2, 40, 41, 42, 3, 0], [2, 50, 51, 3, 0, 0]])
    mask = (ids > 0).long()
    with torch.no_grad():
        whole = cut.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        halves = cut.above(cut.below(ids, mask, rounded=False), mask).last_hidden_state
    assert torch.equal(whole * mask[..., None], halves * mask[..., None])


def test_a_top_k_run_is_named_so_on_every_page_and_the_field_greys_where_nothing_trains(tiny_llama):
    """A walk's top-4 SmolLM2 run read "BERT fine-tuning · SmolLM2" on the monitor, Compare and Classify, as if it
    had trained every layer; and in frozen mode the field stayed live though no run of the grid read it."""
    from core.backbone.packaged import SMOLLM2
    from core.train import run_label

    assert "· tiny-llama" in run_label(top_k(tiny_llama)) and run_label(top_k(tiny_llama)).split(" @ ")[0].endswith(
        ", top 1 layer")
    assert ", top" not in run_label(top_k(tiny_llama, train_layers=0))
    smollm2 = TrainConfig(method="finetune", backbone=SMOLLM2, train_layers=4)
    # and a method on a backbone that is no BERT is not called a BERT's (issue 95 item 8)
    assert run_label(smollm2).startswith("Fine-tuning · SmolLM2, top 4 layers @ ")
    assert run_label(smollm2.with_(method="lora")).startswith("LoRA · SmolLM2, top 4 layers @ ")
    assert run_label(smollm2.with_(method="adapter")).startswith("Adapters · SmolLM2, top 4 layers @ ")
    assert run_label(smollm2.with_(method="ganbert")).startswith("GAN-BERT G1 (noise) · SmolLM2")
    assert ", top" not in run_label(smollm2.with_(frozen=True))  # a frozen encoder trains no layer
    assert run_label(TrainConfig(method="finetune", train_layers=2)).startswith("BERT fine-tuning · top 2 layers @ ")
    from core.train.methods import idle_options

    # the form greys the field where no run of the grid trains a layer: frozen mode, but for adapters and LoRA
    assert "train_layers" in idle_options(["finetune", "ganbert"], {}, frozen=True)
    assert "train_layers" not in idle_options(["finetune", "lora"], {}, frozen=True)
    assert "train_layers" not in idle_options(["finetune"], {}, frozen=False)


def test_train_layers_is_settled_refused_past_the_cut_and_read_as_every_layer_from_older_runs(tiny_llama, studio_home):
    config = resolve(TrainConfig(data=DATA, method="finetune", per_class=4, fraction=None, steps=2), studio_home)
    assert config.train_layers == 0  # MiniLM: every layer, as measured (docs/methods.md)
    assert resolve(config.with_(frozen=True, train_layers=3), studio_home).train_layers == 0  # frozen: trains none
    lr = resolve(TrainConfig(data=DATA, method="features-lr", per_class=4, fraction=None), studio_home)
    assert lr.train_layers == 0
    with pytest.raises(InputError, match="fewer than the 2 layers .*up to layer 2"):
        top_k(tiny_llama, train_layers=2)
    from core.backbone.packaged import SMOLLM2
    from core.train import method_for

    smollm2 = TrainConfig(method="finetune", backbone=SMOLLM2)
    settled = method_for(smollm2).settle(smollm2)
    assert (settled.train_layers, settled.lr) == (4, 3e-4)  # its measured K, and the rate measured there
    every = method_for(smollm2).settle(smollm2.with_(train_layers=0))
    assert (every.train_layers, every.lr) == (0, 1e-4)  # every layer: the method's own rate, measured on MiniLM
    lora = TrainConfig.of("lora", backbone=SMOLLM2)
    top, all_layers = (method_for(lora).settle(c) for c in (lora, lora.with_(train_layers=0)))
    spec = method_for(lora)
    assert (top.lr, top.steps, spec.budget(top, 100)[0]) == (1e-3, 300, 300)  # as measured on its top 4, written in
    assert (all_layers.lr, all_layers.steps, spec.budget(all_layers, 100)[0]) == (5e-4, None, 150)  # its own
    for chosen in ({"steps": 20}, {"epochs": 2}):  # a budget the user chose holds
        assert spec.budget(spec.settle(lora.with_(**chosen)), 100)[0] == chosen.get("steps", 2 * 7)
    assert spec.settle(lora.with_(max_steps=40)).steps == 40  # a cap the user set still caps it
    stored = json.loads(config.to_json())
    del stored["train_layers"]  # a run stored before top-K runs trained every layer it had
    assert TrainConfig.from_json(json.dumps(stored)).train_layers == 0


def test_the_store_is_bounded_by_the_shards_read_least_recently(studio_home):
    from core.backbone import resolve_backbone
    from core.train.state_store import StateStore, hold_bound

    store = StateStore.open(studio_home, resolve_backbone(None, home=studio_home), 1, "fp32", 4)
    rows = [torch.ones(100, 4)]  # 800 bytes of bf16 states a shard
    for n, key in enumerate((b"a" * 20, b"b" * 20, b"c" * 20)):
        store.write([key], rows)
        os.utime(store.index[key].shard, (1000 + n, 1000 + n))
    assert store.read([b"a" * 20])[b"a" * 20].shape == (100, 4)  # read now: the most recent
    size = store.index[b"a" * 20].shard.stat().st_size
    hold_bound(store.folder.parent, 2 * size)
    again = StateStore.open(studio_home, resolve_backbone(None, home=studio_home), 1, "fp32", 4)
    assert set(again.index) == {b"a" * 20, b"c" * 20}
    store.limit = size  # a write holds the bound at once, the shard it wrote kept
    store.write([b"d" * 20], rows)
    assert set(StateStore.open(studio_home, resolve_backbone(None, home=None), 1, "fp32", 4).index) == {b"d" * 20}


def test_a_damaged_shard_or_a_full_disk_computes_on_and_the_cli_says_and_clears_the_store(
        tiny_backbone, studio_home, monkeypatch, capsys):
    import core.train.boundary_states as boundary_states
    import core.train.state_store as state_store
    from core.cli import main

    monkeypatch.setattr(boundary_states, "SHARD_BYTES", 1)  # a shard a batch
    counted = Counted(monkeypatch)
    config = top_k(tiny_backbone)
    trained(config, studio_home / "runs" / "first")
    computed = counted.texts
    assert main(["states"]) == 0
    out = capsys.readouterr().out
    assert f"stored states: {computed:,} texts in 1 store(s)" in out and "after layer 1 (fp32)" in out
    shards = sorted((studio_home / "states").glob("*/*.safetensors"))
    shards[0].write_bytes(b"\0" * shards[0].stat().st_size)  # flipped to zeros in place: no longer a shard
    counted.texts = 0
    trained(config.with_(tags=("damaged",)), studio_home / "runs" / "damaged")
    assert 0 < counted.texts < computed  # its texts alone computed again

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert main(["states", "--clear"]) == 0
    assert "cleared the stored states" in capsys.readouterr().out and not (studio_home / "states").exists()
    monkeypatch.setattr(state_store, "save_file", full)
    counted.texts = 0
    result, _ = trained(config.with_(tags=("full",)), studio_home / "runs" / "full")
    assert counted.texts >= computed and np.isfinite(result["test"]["accuracy"])
    assert not list((studio_home / "states").glob("*/*.safetensors"))


def test_the_train_page_offers_top_k_and_says_and_clears_what_is_stored(tiny_backbone, studio_home):
    """The form offers *Top layers trained*, empty for the backbone's own K; once a top-K run has stored states the page
    says how many texts and how much space they take against the bound, and clears them with a button."""
    from tests.helpers import open_page

    at = open_page("pages/train.py")
    assert not [e for e in at.expander if e.label.startswith("Stored states")]  # nothing stored: nothing said
    field = at.number_input(key="tr_train_layers")
    assert field.label == "Top layers trained (empty: backbone's; 0: all)" and field.value is None
    assert "SmolLM2-135M 4 of the 20 layers its features read (of its 30)" in field.help
    trained(top_k(tiny_backbone), studio_home / "runs" / "first")
    at = open_page("pages/train.py")
    shown = [e for e in at.expander if e.label.startswith("Stored states")]
    assert shown and shown[0].label.startswith("Stored states: ") and "of at most 16.00 GiB" in shown[0].label
    at.button(key="tr_states_clear").click().run()
    assert not at.exception and "Cleared the stored states" in at.success[0].value
    assert not list((studio_home / "states").glob("*/*.safetensors"))


def test_the_estimate_prices_a_top_k_run_by_its_layers_and_its_states_pass_by_what_the_store_lacks(
        tiny_llama, studio_home):
    """A top-K run's steps and evaluations cost its share of the layers (1 of the cut's 2 here); the pass below its
    boundary is priced once per text of its store, at the whole pass's speed times the layers below, and no longer
    once the store holds the texts."""
    from core.runs import Registry
    from core.runs.estimate import grid_seconds, run_seconds
    from core.runs.states_estimate import states_seconds

    every, top = top_k(tiny_llama, train_layers=0), top_k(tiny_llama)
    rows = (24, 0, 24, 18)
    assert run_seconds(top, rows) == pytest.approx(run_seconds(every, rows) / 2)
    texts = load_data(top, studio_home).texts()
    before = states_seconds(Registry(studio_home), [top], 72, None, 18, 6, texts)
    assert list(before) == [top.to_json()] and before[top.to_json()] > 0
    assert states_seconds(Registry(studio_home), [every], 72, None, 18, 6, texts) == {}
    grid = grid_seconds(Registry(studio_home), [top], 72, None, 18, 6, texts=texts)
    assert grid.each[top.to_json()] > before[top.to_json()]
    trained(top, studio_home / "runs" / "first")  # its labeled, validation and test texts stored
    assert states_seconds(Registry(studio_home), [top], 72, None, 18, 6, texts)[top.to_json()] < before[top.to_json()]


@pytest.mark.parametrize("frozen", [True, False])
def test_a_cancel_stops_a_pass_over_texts_between_its_batches(frozen, tiny_backbone, studio_home):
    """A study's SIGTERM (a cancel) went unheeded for minutes while its run encoded 1,867 texts: encoding (frozen
    features) and storing a top-K run's states stop between batches, not at the first training step."""
    from core.runs import RunFolder
    from core.train.loop import train
    from core.train.methods import Cancelled

    config = top_k(tiny_backbone, method="features-lr", frozen=True) if frozen else top_k(tiny_backbone)
    passes = []

    def on_event(event: dict) -> None:
        if event["type"] in ("features", "states"):
            passes.append(event["done"])
    with pytest.raises(Cancelled):
        train(config, RunFolder(studio_home / "runs" / "stopped"), studio_home, on_event,
              should_stop=lambda: bool(passes))
    assert passes == [0]  # asked to stop as the pass began: not one batch more


@pytest.mark.parametrize("train_layers", [1, 0])
def test_a_cancel_stops_an_evaluation_pass_between_its_batches(train_layers, tiny_backbone, studio_home):
    """A SIGTERM to a bench waited out a whole validation and test pass of an every-layer SmolLM2 run (>35 s): asked
    to stop after its last step, the run stops in that step's validation pass, before its evaluation is reported."""
    from core.runs import RunFolder
    from core.train.loop import train
    from core.train.methods import Cancelled

    config = top_k(tiny_backbone, train_layers=train_layers)
    events, asked = [], []

    def should_stop() -> bool:  # the steps' own checks say go on; every later one says stop
        asked.append(any(e["type"] == "progress" and e["step"] == e["total_steps"] for e in events))
        return asked[-1]
    with pytest.raises(Cancelled):
        train(config, RunFolder(studio_home / "runs" / f"stopped-{train_layers}"), studio_home, events.append,
              should_stop=should_stop)
    assert any(e["type"] == "progress" and e["step"] == 3 for e in events) and asked.count(True) == 1
    assert not any(e["type"] == "evaluation" and e["step"] == 3 for e in events)  # its steps before evaluated whole
