"""Every method on a tiny random BERT: losses go down, checkpoints round-trip, guards fire."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from core.data import CorpusConfig, DataSpec
from core.errors import InputError
from core.paths import home_from_environment
from core.runs import RunFolder
from core.runs.execute import train_into
from core.train import (
    METHODS,
    Diverged,
    TrainConfig,
    bucketed_batches,
    classify,
    load_data,
    method_for,
    resolve,
    split_pool,
)
from core.train.checkpoint import WEIGHTS
from core.train.methods.finetune import Finetune
from tests.helpers import predicts_one_class

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))


def config(tiny_backbone, **kw) -> TrainConfig:
    base = dict(data=DATA, backbone=str(tiny_backbone), epochs=4, evaluations=4, fraction=0.5, batch_size=8, lr=1e-3,
                patience=10, collapse_evals=10, max_len=64)
    return resolve(TrainConfig.of(**{**base, **kw}), home_from_environment())


def train(cfg: TrainConfig, folder: Path) -> dict:
    return fit(cfg, folder)[0]


def fit(cfg: TrainConfig, folder: Path) -> tuple[dict, list[dict]]:
    """Train into a run folder; the result, and the mean losses between evaluations as the events told them."""
    history: list[dict] = []
    result = train_into(cfg, RunFolder(folder), home_from_environment(),
                        lambda e: e["type"] == "evaluation" and history.append(e["losses"]), lambda: False)
    return result, history


@pytest.mark.parametrize("kw, loss", [
    ({"method": "finetune"}, "loss"),
    ({"method": "adapter", "lr": 3e-3}, "loss"),
    ({"method": "ganbert"}, "d_supervised"),
    ({"method": "ganbert", "generator": "bow"}, "d_supervised"),
    ({"method": "finetune", "frozen": True, "lr": 1e-2}, "loss"),
    ({"method": "ganbert", "frozen": True, "lr": 1e-2}, "d_supervised"),
    ({"method": "ganbert", "frozen": True, "generator": "bow", "gan_preset": "seed-report", "lr": 1e-3},
     "d_supervised"),
])
def test_each_method_trains_and_its_loss_goes_down(tiny_backbone, tmp_path, kw, loss, studio_home):
    result, history = fit(config(tiny_backbone, **kw), tmp_path)
    resolved = resolve(config(tiny_backbone, **kw), studio_home)
    steps_per_epoch = -(-len(split_pool(resolved, load_data(config(tiny_backbone), studio_home)).labeled) // 8)
    assert len(history) == 4 and result["evaluations"] == 4 and "history" not in result
    if kw["method"] != "ganbert":
        assert result["steps"] == result["budget_steps"] == 4 * steps_per_epoch
    assert history[-1][loss] < history[0][loss], [h[loss] for h in history]
    assert set(result["test"]) >= {"accuracy", "macro_f1", "mcc", "confusion", "per_class"}
    assert np.asarray(result["test"]["confusion"]).sum() == 60
    assert (tmp_path / RunFolder.CHECKPOINT / WEIGHTS).exists() and (tmp_path / RunFolder.RESULT).exists()
    if kw["method"] == "ganbert":
        assert {"d_loss", "g_loss", "g_feature_matching"} <= set(history[0])


@pytest.mark.parametrize("kw", [{"method": "finetune"}, {"method": "adapter"}, {"method": "ganbert", "frozen": True}])
def test_checkpoint_round_trip_gives_identical_predictions(tiny_backbone, tmp_path, kw, studio_home):
    train(config(tiny_backbone, epochs=1, precision="fp32", **kw), tmp_path)  # bf16's reload: test_backbones
    saved = pd.read_parquet(tmp_path / RunFolder.PREDICTIONS)
    model = RunFolder(tmp_path).load_model(studio_home)
    from core.data import builtin_dataset

    texts = builtin_dataset(DATA.builtin, studio_home).test["text"].tolist()
    probs = np.array([[p.probabilities[c] for c in model.labels] for p in classify(model, texts)])
    expected = saved[[f"p_{c}" for c in model.labels]].to_numpy()
    np.testing.assert_allclose(probs, expected, atol=1e-4)
    if kw["method"] == "ganbert":
        assert saved["fake_prob"].between(0, 1).all()


def test_adapter_checkpoint_holds_only_adapters_and_head(tiny_backbone, tmp_path):
    train(config(tiny_backbone, method="adapter", epochs=1), tmp_path)
    keys = load_file(str(tmp_path / RunFolder.CHECKPOINT / WEIGHTS)).keys()
    encoder_keys = [k for k in keys if k.startswith("encoder.")]
    assert encoder_keys and all("adapters" in k for k in encoder_keys)
    assert any(k.startswith("head.") for k in keys)


def test_adapter_setup_leaves_the_adapter_active_and_its_log_clean(tiny_backbone, caplog, studio_home):
    """adapters' `train_adapter` warns "none are activated" while activating one (adapter-hub/adapters#815); a
    user reading the run's log took the adapter for off."""
    cfg = config(tiny_backbone, method="adapter")
    with caplog.at_level(logging.WARNING):
        model = method_for(cfg).trainer().build_model(cfg, ("a", "b"), torch.device("cpu"), studio_home)
    assert "studio" in str(model.encoder.active_adapters)
    assert not [r for r in caplog.records if "activated" in r.getMessage()]
    with caplog.at_level(logging.WARNING):  # the filter is gone once set-up is over
        logging.getLogger("adapters.model_mixin").warning("There are adapters available but none are activated "
                                                          "for the forward pass.")
    assert [r for r in caplog.records if "activated" in r.getMessage()]


def encoded(cfg: TrainConfig, folder: Path) -> tuple[dict, int]:
    """Train; the result and how many texts the run encoded (its features events' total)."""
    totals: list[int] = []
    result = train_into(cfg, RunFolder(folder), home_from_environment(),
                        lambda e: e["type"] == "features" and totals.append(e["total"]), lambda: False)
    return result, totals[-1] if totals else 0


def test_a_frozen_run_encodes_only_the_texts_it_needs_and_never_twice(tiny_backbone, tmp_path, studio_home):
    ds = load_data(config(tiny_backbone), studio_home)
    first, n = encoded(config(tiny_backbone, method="finetune", frozen=True, per_class=5, fraction=None, epochs=1),
                       tmp_path / "a")
    # labeled, validation (as many, drawn from the pool: the data has no validation split) and test
    assert ds.val is None and first["unlabeled"] == 0 and n == 6 * 5 + 6 * 5 + len(ds.test)
    keys = load_file(str(tmp_path / "a" / RunFolder.CHECKPOINT / WEIGHTS)).keys()
    assert not any(k.startswith("encoder.") for k in keys) and "feature_mean" in keys
    # GAN-BERT learns from the unlabeled rows: it encodes those, and only those it may use
    capped, n = encoded(config(tiny_backbone, method="ganbert", frozen=True, per_class=5, fraction=None, epochs=1,
                               unlabeled_limit=20), tmp_path / "b")
    assert capped["unlabeled"] == 20 and n == 20
    full, n = encoded(config(tiny_backbone, method="ganbert", frozen=True, per_class=5, fraction=None, epochs=1),
                      tmp_path / "c")
    assert full["unlabeled"] == len(ds.train) - 60 and n == len(ds.train) - 60 - 20  # the validation rows are not
    # every text is cached now: another seed's run encodes nothing
    _, n = encoded(config(tiny_backbone, method="ganbert", frozen=True, epochs=1, seed=3), tmp_path / "d")
    assert n == 0
    assert len(list((studio_home / "features").iterdir())) == 1  # one store: same backbone, length, pooling, precision


def test_feature_files_of_earlier_versions_are_never_read_and_are_cleared(tiny_backbone, tmp_path, studio_home):
    (studio_home / "features").mkdir(parents=True)
    legacy = studio_home / "features" / "0123456789abcdef0123.safetensors"
    legacy.write_bytes(b"per-split features of an earlier version")
    _, n = encoded(config(tiny_backbone, method="features-lr", frozen=True), tmp_path)
    assert n > 0 and not legacy.exists()


def test_a_frozen_run_gives_the_same_result_from_a_cold_or_a_warm_feature_cache(tiny_backbone, tmp_path):
    """The run that encodes trains on exactly the float32 values later runs read from the cache."""
    cold = train(config(tiny_backbone, method="features-lr", frozen=True), tmp_path / "cold")
    warm = train(config(tiny_backbone, method="features-lr", frozen=True), tmp_path / "warm")
    assert cold["test"] == warm["test"]
    assert (pd.read_parquet(tmp_path / "cold" / RunFolder.PREDICTIONS)
            .equals(pd.read_parquet(tmp_path / "warm" / RunFolder.PREDICTIONS)))


def test_unlabeled_rows_never_carry_labels(tiny_backbone, studio_home):
    cfg = config(tiny_backbone, method="ganbert", frozen=False, fraction=0.1)
    ds = load_data(cfg, studio_home)
    prepared = split_pool(cfg, ds)
    assert (prepared.targets[prepared.unlabeled] == -1).all()
    assert (prepared.targets[prepared.labeled] >= 0).all()
    assert len(prepared.labeled) == 6 * 3  # 10% of 30 per class
    assert len(prepared.val) == 6 * 3 and prepared.val_source == "the train pool"  # as many, from the rest
    assert not set(prepared.val["id"]) & set(ds.train["id"].iloc[prepared.labeled])
    assert len(prepared.labeled) + len(prepared.val) + len(prepared.unlabeled) == len(ds.train)
    assert not set(prepared.val["id"]) & set(ds.train["id"].iloc[prepared.unlabeled])  # a label read is not unlabeled


def test_nan_loss_ends_diverged(tiny_backbone, tmp_path, monkeypatch):
    monkeypatch.setattr(Finetune, "start", lambda *a: lambda rep, labels: {"loss": float("nan")})
    with pytest.raises(Diverged, match="the loss loss became nan at step 1"):
        train(config(tiny_backbone, method="finetune", frozen=True), tmp_path)


def test_collapse_onto_one_class_ends_diverged(tiny_backbone, tmp_path, monkeypatch):
    predicts_one_class(monkeypatch, 2, learned_first=1)
    with pytest.raises(Diverged, match="every validation prediction was 'cohere' for 2 evaluations"):
        train(config(tiny_backbone, method="finetune", frozen=True, collapse_evals=2), tmp_path)


def test_early_stopping_ends_before_the_budget_with_best_selection(tiny_backbone, tmp_path):
    result = train(config(tiny_backbone, method="finetune", frozen=True, epochs=30, evaluations=30, patience=1,
                          lr=1e-4, selection="best"), tmp_path)
    assert result["selection"] == "best" and result["steps"] < result["budget_steps"]


def test_bucketed_batches_cover_every_row_once_with_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 500, size=1000)
    batches = bucketed_batches(lengths, 16, rng, bucket=10)
    flat = np.concatenate(batches)
    assert sorted(flat) == list(range(1000))
    spread = np.mean([lengths[b].max() - lengths[b].min() for b in batches])
    assert spread < 60  # random batches would spread over ~450 tokens


@pytest.mark.parametrize("kw, message", [
    ({"fraction": 0.0}, "fraction must be in"),
    ({"fraction": None, "per_class": None}, "exactly one of fraction or per_class"),
    ({"method": "gan"}, "method must be one of"),
    ({"pooling": "layers"}, "layers pooling needs frozen-feature mode"),
    ({"max_len": 1024}, "at most 512"),
])
def test_bad_configs_are_refused(tiny_backbone, kw, message):
    with pytest.raises(InputError, match=message):
        config(tiny_backbone, **kw)


def test_a_method_that_trains_inside_the_encoder_is_never_frozen(tiny_backbone):
    assert not config(tiny_backbone, method="adapter", frozen=True).frozen
    assert not config(tiny_backbone, method="setfit", frozen=True).frozen
    assert config(tiny_backbone, method="features-lr", frozen=False).frozen

def test_config_json_round_trip(tiny_backbone):
    cfg = config(tiny_backbone, method="ganbert", generator="bow", tags=("a", "b"))
    assert TrainConfig.from_json(cfg.to_json()) == cfg


def test_batch_size_defaults_follow_the_mode(studio_home):
    def batch(**kw) -> int:
        config = TrainConfig.of(**kw)
        return method_for(config).batch_size(config)
    assert batch() == 16  # the encoder trains
    assert batch(frozen=True) == 64  # a head on the few labeled texts
    assert resolve(TrainConfig(frozen=True, method="ganbert"), studio_home).batch_size == 64  # the studio preset's
    assert resolve(TrainConfig(method="ganbert"), studio_home).batch_size == 16
    assert resolve(TrainConfig(frozen=True, method="ganbert", batch_size=8), studio_home).batch_size == 8


def test_the_estimate_counts_the_budget_in_steps(studio_home):
    from core.runs.encoding_speed import FALLBACK
    from core.runs.estimate import RUN_OVERHEAD, STARTUP, grid_seconds, run_seconds

    head = TrainConfig(frozen=True, fraction=0.01, epochs=10, max_len=128)
    gan = head.with_(method="ganbert", batch_size=256)
    # GAN-BERT: 100 labeled rows repeated int(log2(100)) = 6 times, plus the 9,900 unlabeled, each epoch:
    # 10 epochs of ceil(10,500 / 256) = 42 steps of 256 samples
    assert run_seconds(gan, (100, 9_900, 1_000, 3_000)) == pytest.approx(
        (420 * 256 + 10 * 1_000 + 3_000) / METHODS["ganbert"].head_speed)
    # the head: 10 epochs of 2 steps of (at most) the 100 labeled rows
    assert run_seconds(head, (100, 9_900, 1_000, 3_000)) == pytest.approx(
        (20 * 64 + 10 * 1_000 + 3_000) / METHODS["finetune"].head_speed)

    class NoRuns:
        home = studio_home

        def list(self, statuses=None):
            return []

        def setting(self, key, default=None):  # no encoding measured yet: the laptop figure
            return default

    # from a validation split of 1,000, each run validates on as many texts as it labels: 100; the two runs
    # follow each other in one worker process, which starts once
    both = grid_seconds(NoRuns(), [head, gan], 10_000, 1_000, 3_000, 6)
    assert both.guessed == 2 and both.seconds == pytest.approx(
        run_seconds(head, (100, 9_900, 100, 3_000)) + run_seconds(gan, (100, 9_900, 100, 3_000))
        + STARTUP + 2 * RUN_OVERHEAD + 13_100 * 128 / FALLBACK["fp32"])  # no texts given: each fills 128 tokens
    # with no validation split, those 100 come out of the pool: 10,000 pool texts and the test's 3,000 to encode
    alone = grid_seconds(NoRuns(), [gan], 10_000, None, 3_000, 6)
    assert alone.seconds == pytest.approx(run_seconds(gan, (100, 9_800, 100, 3_000)) + STARTUP + RUN_OVERHEAD
                                          + 13_000 * 128 / FALLBACK["fp32"])


def test_the_estimate_counts_attention_dropouts_unfused_kernel():
    """A trained step at a nonzero attention dropout cannot take attention's fused kernel: the studio preset's
    rate (0) keeps the model's speed, the `tf` preset and adapters (the backbone's own, MiniLM's 0.1) and a rate
    the run asks for pay ATTENTION_DROPOUT_SLOWDOWN on their training, not on their evaluations; a backbone whose
    own rate is 0 and a frozen run never pay it."""
    from core.train.methods.specs import ATTENTION_DROPOUT_SLOWDOWN, FORWARD_SPEED

    rows = (30, 970, 30, 100)

    def training(config: TrainConfig) -> float:
        evaluation = (config.evaluations * rows[2] + rows[3]) / (FORWARD_SPEED / (config.max_len / 128))
        return method_for(config).seconds(config, *rows, False) - evaluation

    base = TrainConfig(data=DATA, per_class=5, fraction=None, max_len=256)
    for method, preset in (("finetune", "studio"), ("ganbert", "studio"), ("ganbert", "tf"), ("adapter", "studio")):
        config = base.with_(method=method, **({"gan_preset": preset} if method == "ganbert" else {}))
        fused = training(config.with_(attention_dropout=0.0))
        pays = method == "adapter" or preset == "tf"
        assert training(config) == pytest.approx(fused * (ATTENTION_DROPOUT_SLOWDOWN if pays else 1.0))
        assert training(config.with_(attention_dropout=0.1)) == pytest.approx(fused * ATTENTION_DROPOUT_SLOWDOWN)
    adapter = base.with_(method="adapter")
    assert method_for(adapter).attention_cost(adapter.with_(backbone="smollm2-135m")) == 1.0
    frozen = base.with_(frozen=True, attention_dropout=0.1)
    assert method_for(frozen).seconds(frozen, *rows, False) == pytest.approx(
        method_for(frozen).seconds(frozen.with_(attention_dropout=0.0), *rows, False))


@pytest.mark.parametrize("method", ["finetune", "ganbert"])
def test_attention_dropout_zero_sets_every_attention_layer_and_the_same_seed_gives_the_same_run(tiny_backbone, tmp_path,
                                                                                              method):
    """Attention dropout 0 (the fused kernel's setting) reaches every attention layer, eager or SDPA, while the
    hidden dropout stays the backbone's; None leaves the backbone's rate; a run at 0 repeats exactly on its seed."""
    from core.backbone.encode import load_encoder
    from core.train.dropout import Dropout, cheap_dropout

    def rates(encoder) -> set[tuple[str, float]]:
        found = set()
        for name, module in encoder.named_modules():
            if hasattr(module, "dropout_prob"):
                found.add(("sdpa", module.dropout_prob))
            if isinstance(module, Dropout):
                found.add(("attention" if "attention.self" in name else "hidden", module.p))
        return found

    shipped = load_encoder(str(tiny_backbone), torch.device("cpu"))
    rate = shipped.config.attention_probs_dropout_prob
    cheap_dropout(shipped, None)
    assert {r for kind, r in rates(shipped) if kind != "hidden"} == {rate} and rate > 0
    fast = load_encoder(str(tiny_backbone), torch.device("cpu"))
    cheap_dropout(fast, 0.0)
    assert {r for kind, r in rates(fast) if kind != "hidden"} == {0.0}
    assert {r for kind, r in rates(fast) if kind == "hidden"} == {shipped.config.hidden_dropout_prob}
    cfg = config(tiny_backbone, method=method, attention_dropout=0.0, epochs=2, evaluations=2)
    first, again = train(cfg, tmp_path / "a"), train(cfg, tmp_path / "b")
    assert first["test"] == again["test"] and first["val"] == again["val"]


def test_attention_dropout_reaches_a_llamas_attention(tmp_path):
    """Llama keeps its attention dropout in a float on each attention layer, not in a module or `dropout_prob`: a
    rate chosen for SmolLM2 had reached none of its layers, so a probe at MiniLM's 0.1 repeated the run at 0."""
    from core.backbone.encode import load_encoder
    from core.train.dropout import cheap_dropout
    from tests.helpers import make_tiny_llama

    encoder = load_encoder(str(make_tiny_llama(tmp_path)), torch.device("cpu"), upto=2)
    layers = [m for m in encoder.modules() if isinstance(getattr(m, "attention_dropout", None), float)]
    assert layers and {m.attention_dropout for m in layers} == {0.0}  # a Llama's own rate
    cheap_dropout(encoder, 0.5)
    assert {m.attention_dropout for m in layers} == {0.5} and encoder.config.attention_dropout == 0.5
    ids = torch.randint(5, 100, (2, 12))
    encoder.train()
    torch.manual_seed(0)
    first = encoder(input_ids=ids).last_hidden_state
    assert not torch.equal(first, encoder(input_ids=ids).last_hidden_state)  # each pass drops other weights
    encoder.eval()
    assert torch.equal(encoder(input_ids=ids).last_hidden_state, encoder(input_ids=ids).last_hidden_state)


def test_attention_dropout_defaults_to_zero_where_measured_and_the_authors_presets_keep_theirs():
    """bench/studies/defaults.py measured 0 level with MiniLM's 0.1 for fine-tuning and the studio's GAN-BERT, and 1.4x
    a step: written in when the encoder trains; the `tf` and `notebook` presets, adapters and SetFit keep the
    backbone's; a frozen run trains no attention; a rate chosen stays."""
    def settled(**kw) -> float | None:
        config = TrainConfig.of(**kw)
        return method_for(config).settle(config).attention_dropout

    assert settled(method="finetune") == 0.0 and settled(method="ganbert") == 0.0
    assert settled(method="ganbert", adversarial=False) == 0.0  # the control trains as G1 does
    assert (settled(method="ganbert", gan_preset="tf") is None
            and settled(method="ganbert", gan_preset="notebook") is None)
    assert settled(method="adapter") is None and settled(method="setfit") is None
    assert settled(method="finetune", frozen=True) is None and settled(method="ganbert", frozen=True) is None
    assert settled(method="finetune", attention_dropout=0.1) == 0.1
    # a resolved run keeps None only where it trained at the backbone's rate (every run before 0 was the default):
    # Compare names it so, while the Train page's and CLI's empty field is the method's default
    from core.compare.names import setting_value
    from core.train.config import options

    assert (setting_value(None, "attention_dropout") == "backbone's"
            and options()["attention_dropout"].unset == "default")
    assert setting_value(None, "max_len") == "auto"
