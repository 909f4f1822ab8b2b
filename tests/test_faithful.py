"""Methods as their authors ran them: GAN-BERT's presets field by field, its control without the adversarial
game, predictions that cannot underflow, max length from the data, one standardization for every frozen
method, and the same numbers whatever the thread count."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from core.cli.options import Parser, add_config_args, config_from_args
from core.compare import METRICS, adds_line, summarize
from core.compare.tables import run_notes
from core.data import CorpusConfig, DataSpec
from core.paths import home_from_environment
from core.runs import Registry, RunFolder
from core.runs.execute import train_into
from core.train import METHODS, Sweep, TrainConfig, amounts, load_data, method_for, resolve, split_pool
from core.train.checkpoint_store import read_tensors
from core.train.maxlen import choose, position_limit
from core.train.methods.base import Diverged
from core.train.methods.ganbert import GanBert
from core.train.methods.presets import PRESETS
from tests.helpers import hand_runs_frame, predicts_one_class, recorded_optimizers, without_d_loss

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))


def tiny(tiny_backbone, **kw) -> TrainConfig:
    base = dict(data=DATA, backbone=str(tiny_backbone), method="ganbert", fraction=0.3, evaluations=2, max_len=64,
                precision="fp32")
    return resolve(TrainConfig.of(**{**base, **kw}), home_from_environment())


# ------------------------------------------------------------ presets, each field as its source has it

def test_the_tf_preset_is_crux82_ganbert(tiny_backbone):
    tf = PRESETS["tf"]
    assert (tf.dropout, tf.lr, tf.eps, tf.batch_size, tf.epochs, tf.pooling) == (0.1, 2e-5, 1e-6, 64, 3, "pooled")
    assert tf.warmup and tf.separate and tf.clip == 1.0 and not tf.decay_norms
    config = tiny(tiny_backbone, gan_preset="tf")
    assert (config.lr, config.batch_size, config.epochs, config.steps, config.pooling) == (2e-5, 64, 3, None, "pooled")


def test_the_notebook_preset_is_crux82_ganbert_pytorch(tiny_backbone):
    nb = PRESETS["notebook"]
    assert (nb.dropout, nb.lr, nb.eps, nb.batch_size, nb.epochs, nb.pooling) == (0.2, 5e-5, 1e-8, 64, 10, "pooled")
    assert not nb.warmup and not nb.separate and nb.clip is None and nb.decay_norms
    config = tiny(tiny_backbone, gan_preset="notebook")
    assert (config.lr, config.batch_size, config.epochs, config.pooling) == (5e-5, 64, 10, "pooled")


def test_a_presets_pooled_reads_the_pooling_a_sentence_transformer_trained(tiny_backbone, tmp_path):
    """bert-base-cased trained its pooler (next-sentence prediction); a sentence-transformers backbone did not, so
    the authors' `pooled` reads the pooling it was trained with there (the bundled MiniLM: mean), says so, and
    an explicit `--pooling pooled` still reads the pooler."""
    import shutil

    from core.backbone.facts import sentence_pooling
    from core.train.methods import method_for

    assert sentence_pooling(None) == "mean"  # the bundled MiniLM's 1_Pooling/config.json
    sentence = tmp_path / "sentence-bert"
    shutil.copytree(tiny_backbone, sentence)
    (sentence / "1_Pooling").mkdir()
    (sentence / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": false, '
                                                         '"pooling_mode_mean_tokens": true}')
    for preset in ("tf", "notebook"):
        assert tiny(tiny_backbone, gan_preset=preset).pooling == "pooled"  # a BERT folder: its pooler, as the codes
        config = tiny(sentence, gan_preset=preset)
        assert config.pooling == "mean"
        assert "never trained its pooler" in method_for(config).settle_note(
            TrainConfig.of(method="ganbert", gan_preset=preset, backbone=str(sentence)))
        assert tiny(sentence, gan_preset=preset, pooling="pooled").pooling == "pooled"
    paper = tiny(sentence, method="finetune", finetune_preset="paper")
    assert paper.pooling == "mean"
    assert tiny(tiny_backbone, method="finetune", finetune_preset="paper").pooling == "pooled"
    assert tiny(sentence, gan_preset="studio").resolved_pooling == "mean"  # the studio's own, when trained


def test_the_studio_preset_runs_the_measured_defaults(tiny_backbone):
    """bench/studies/defaults.py's choices (the README's defaults tables): 3e-4 for 30 epochs of 64 on frozen features,
    the notebook's 5e-5 for three times its 10 epochs at 16 with the encoder training."""
    frozen, trained = tiny(tiny_backbone, frozen=True), tiny(tiny_backbone, frozen=False)
    assert (frozen.lr, frozen.batch_size, frozen.epochs, frozen.steps, frozen.max_steps) == (3e-4, 64, 30, None, 500)
    assert (trained.lr, trained.batch_size, trained.epochs, trained.steps,
            trained.max_steps) == (5e-5, 16, 30, None, 500)


def test_the_budget_rule_caps_30_epochs_of_a_large_pool_and_leaves_a_small_one_and_a_chosen_budget_be(studio_home):
    """30 epochs of 64 are 60-90 steps on the M4 sample and 5,430 on L2R's pool, where they overtrain."""
    from core.train.methods import METHODS

    spec = METHODS["ganbert"]
    config = resolve(TrainConfig(data=DATA, method="ganbert", frozen=True, fraction=0.3, max_len=64), studio_home)
    assert spec.budget(config, 116) == (60, "30 epochs of 2 step(s)")  # the M4 sample's budget, as measured
    steps, why = spec.budget(config, 11_596)  # L2R's pool and 25 labels repeated
    assert steps == 500 and why.startswith("500 steps: 30 epochs of 182 step(s), capped at 500")
    chosen = resolve(config.with_(epochs=30, max_steps=None), studio_home)
    assert chosen.max_steps is None and spec.budget(chosen, 11_596)[0] == 5_460  # asked for: not capped
    assert resolve(TrainConfig.of(data=DATA, method="ganbert", frozen=True, fraction=0.3, max_len=64,
                               gan_preset="tf"), studio_home).max_steps is None  # the tf code's 3 epochs, as it ran


def test_a_setting_given_explicitly_beats_the_preset(tiny_backbone):
    config = tiny(tiny_backbone, gan_preset="tf", lr=1e-4, steps=7, pooling="mean")
    assert (config.lr, config.steps, config.epochs, config.pooling) == (1e-4, 7, None, "mean")


def optimizers_after(tiny_backbone, monkeypatch, preset: str, steps: int = 4, **kw):
    """Build GAN-BERT under a preset on the tiny BERT and take `steps` optimizer steps on random
    representations: the model, D's and G's optimizers, the rates they stood at after each step, and the
    step itself."""
    config = tiny(tiny_backbone, gan_preset=preset, steps=10, batch_size=8, **kw)
    data = split_pool(config, load_data(config, home_from_environment()))
    method = GanBert(METHODS["ganbert"])
    model = method.build_model(config, data.labels, torch.device("cpu"), home_from_environment())
    made = recorded_optimizers(monkeypatch)
    step = method.start(model, config, data, 10)
    rates = []
    for _ in range(steps):
        step(torch.randn(8, model.feature_dim), torch.tensor([0, 1, -1, -1, 0, -1, 1, -1]))
        rates.append([o.param_groups[0]["lr"] for o in made])
    return model, made, rates, step


def test_tf_optimizers_warm_up_decay_and_spare_layer_norms_from_weight_decay(tiny_backbone, monkeypatch):
    model, (d_opt, g_opt), rates, _ = optimizers_after(tiny_backbone, monkeypatch, "tf")
    assert d_opt.defaults["eps"] == 1e-6 and g_opt.defaults["eps"] == 1e-6
    decays = {id(p): g["weight_decay"] for g in d_opt.param_groups for p in g["params"]}
    names = dict(model.named_parameters())
    assert decays[id(names["encoder.embeddings.LayerNorm.weight"])] == 0.0
    assert decays[id(names["head.logits.bias"])] == 0.0
    assert decays[id(names["head.logits.weight"])] == 0.01
    # 10 steps, 1 of warm-up: then the rate falls linearly to 0 (BERT's polynomial decay of power 1)
    assert [r[0] for r in rates] == pytest.approx([2e-5 * (10 - s) / 9 for s in range(1, 5)])


def test_notebook_optimizers_keep_a_constant_rate(tiny_backbone, monkeypatch):
    _, (d_opt, _), rates, _ = optimizers_after(tiny_backbone, monkeypatch, "notebook")
    assert all(r == [5e-5, 5e-5] for r in rates)
    assert d_opt.defaults["weight_decay"] == 0.01 and len(d_opt.param_groups) == 1


def test_summed_gradients_move_d_by_g_loss_and_separate_ones_do_not(tiny_backbone, monkeypatch):
    """The notebook calls both backward() before either step(), so each optimizer applies the gradient of
    L_D + L_G; the TF code keeps them apart. With L_D zeroed, only the summed recipe moves D's weights
    (beyond weight decay, which a zero gradient leaves as the only change)."""
    without_d_loss(monkeypatch)
    for preset, moves in (("notebook", True), ("tf", False)):
        torch.manual_seed(0)
        model, (d_opt, _), _, step = optimizers_after(tiny_backbone, monkeypatch, preset, steps=0, warmup=0.0)
        before = model.head.logits.weight.detach().clone()
        lr = d_opt.param_groups[0]["lr"]
        assert lr > 0
        step(torch.randn(8, model.feature_dim), torch.tensor([0, 1, -1, -1, 0, -1, 1, -1]))
        decayed = before * (1 - lr * 0.01)
        assert torch.allclose(model.head.logits.weight, decayed, rtol=0, atol=1e-9) is not moves, preset


# ------------------------------------------------------------ the control without the adversarial game

def test_the_control_is_one_run_for_both_generators_and_names_itself(tiny_backbone, studio_home):
    base = tiny(tiny_backbone)
    configs = Sweep(("ganbert",), {"generator": ("noise", "bow")}, amounts([0.3], []), (0, 1)).configs(
        base.with_(adversarial=False), studio_home)
    assert len({c.to_json() for c in configs}) == 2  # G1 and G2 controls of a seed are the same run
    assert all(c.params.generator == "noise" for c in configs)
    assert method_for(configs[0]).display(configs[0]) == "GAN-BERT control (adversarial off)"


def test_the_cli_turns_the_adversarial_part_off():
    parser = Parser()
    add_config_args(parser)
    args = parser.parse_args(["--train", "builtin", "--method", "ganbert", "--adversarial", "off",
                              "--max-len", "auto"])
    config = config_from_args(args)
    assert config.params.adversarial is False and config.max_len is None
    assert config_from_args(parser.parse_args(["--train", "builtin", "--method", "ganbert"])).params.adversarial


def test_the_control_trains_d_alone_and_reports_no_fake_probability(tiny_backbone, tmp_path, studio_home):
    result = train_into(tiny(tiny_backbone, adversarial=False, steps=6, batch_size=8), RunFolder(tmp_path),
                        studio_home, lambda e: None, lambda: False)
    assert result["val_fake_prob"] is None
    frame = pd.read_parquet(next(tmp_path.glob("*.parquet")))
    assert (frame["fake_prob"] == 0).all()
    model = RunFolder(tmp_path).load_model(studio_home)
    assert model.predict(["a text"])[1] is None


@pytest.mark.parametrize("frozen", [False, True])
def test_the_control_skips_unlabeled_rows_with_the_same_steps_and_gradients(tiny_backbone, frozen, studio_home):
    """The control has no loss on unlabeled rows, so it encodes only a batch's labeled ones: after the same steps
    (one batch with labels, one without) its parameters are what they are when it encodes every row."""
    from core.train.inputs import Representer, model_inputs

    config = tiny(tiny_backbone, adversarial=False, frozen=frozen, batch_size=8, steps=2)
    data = split_pool(config, load_data(config, studio_home)).used_by(True)
    method = GanBert(METHODS["ganbert"])
    labeled, unlabeled = data.labeled[:3], data.unlabeled[:5]
    batches = [np.concatenate([labeled, unlabeled]), data.unlabeled[5:13]]
    finals = []
    for skip in (False, True):
        torch.manual_seed(0)
        model = method.build_model(config, data.labels, torch.device("cpu"), studio_home)
        rep = Representer(model, model_inputs(config, data, torch.device("cpu"), studio_home, lambda e: None), config,
                          torch.device("cpu"), studio_home)
        if frozen:
            model.feature_std.fill_(2.0)
        step = method.start(model, config, data, total_steps=2)
        initial = {k: v.clone() for k, v in model.state_dict().items()}
        model.eval()  # no dropout, so the two ways see the same network
        for idx in batches:
            read = method.spec.rows_read(config, idx, data.targets) if skip else idx
            targets = torch.from_numpy(data.targets[read])
            step(rep("pool", read) if len(read) else None, targets)
        finals.append({k: v.clone() for k, v in model.state_dict().items()})
        unused = [k for k in initial if k.startswith("encoder.pooler.")]  # mean pooling never reads BERT's pooler
        assert frozen or unused and all(torch.equal(finals[-1][k], initial[k]) for k in unused)  # not even decayed
    assert len(method.spec.rows_read(config, batches[0], data.targets)) == 3  # the unlabeled rows were skipped
    assert any(not torch.equal(finals[0][k], before) for k, before in initial.items())  # it did train
    for k in finals[0]:
        torch.testing.assert_close(finals[1][k], finals[0][k], rtol=1e-5, atol=1e-6, msg=k)


def test_one_class_within_the_first_epoch_is_not_a_collapse(tiny_backbone, tmp_path, monkeypatch, studio_home):
    """The tf preset's 3 epochs of 3 steps evaluate every step; a guard counting from step 1 killed it at step 3."""
    predicts_one_class(monkeypatch)  # as a model a few steps from its start does
    config = tiny(tiny_backbone, epochs=1, batch_size=16, evaluations=4, collapse_evals=2)
    result = train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    assert result["steps"] == result["budget_steps"] >= 4 and result["evaluations"] == 4


def test_one_class_after_the_first_epoch_is_a_collapse(tiny_backbone, tmp_path, monkeypatch, studio_home):
    predicts_one_class(monkeypatch, learned_first=1)
    config = tiny(tiny_backbone, epochs=2, batch_size=16, evaluations=8, collapse_evals=2)
    with pytest.raises(Diverged, match="collapsed.*2 evaluations"):
        train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)


def test_one_class_in_a_model_that_never_beat_chance_is_not_a_collapse(tiny_backbone, tmp_path, monkeypatch,
                                                                       studio_home):
    """The tf preset's seed 2 predicted one class for 11 of 12 validation texts at step 1 and for all from step
    4, its supervised loss at ln 5 throughout: it had not yet learned, and the guard must let it finish for
    the table, where the same model that had learned first is ended."""
    predicts_one_class(monkeypatch, learned_first=1, right=False)
    config = tiny(tiny_backbone, epochs=2, batch_size=16, evaluations=8, collapse_evals=2)
    events = []
    result = train_into(config, RunFolder(tmp_path), studio_home, events.append, lambda: False)
    assert result["steps"] == result["budget_steps"] and result["evaluations"] == 8
    assert result["learned"] is False  # and the user is told, in the log and on the run's card
    assert any("no evaluation beat chance" in e.get("message", "") for e in events)


def test_a_run_that_beat_chance_once_has_learned(tiny_backbone, tmp_path, monkeypatch, studio_home):
    predicts_one_class(monkeypatch, learned_first=1)
    config = tiny(tiny_backbone, epochs=1, batch_size=16, evaluations=4, collapse_evals=2)
    events = []
    assert train_into(config, RunFolder(tmp_path), studio_home, events.append, lambda: False)["learned"] is True
    assert not any("beat chance" in e.get("message", "") for e in events)


@pytest.mark.parametrize("learned, warned", [(False, True), (True, False), (None, False)])
def test_the_run_card_warns_when_the_model_never_beat_chance(tmp_path, learned, warned):
    """None: a run recorded before `learned` was kept makes no claim."""
    registry = Registry(tmp_path)
    run_id = registry.create(TrainConfig(data=DataSpec(train="a.jsonl", test="t.jsonl")))
    assert registry.claim(run_id)
    registry.mark_running(run_id, os.getpid(), "CPU")
    registry.finish(run_id, "done", metrics={"steps": 9, **({} if learned is None else {"learned": learned})})
    notes = run_notes(registry.get(run_id), registry)
    assert any(n.startswith("warning: no evaluation beat chance on validation in 9 steps") for n in notes) is warned


def ganbert_frame(scores: dict[tuple[bool, str], list[float]]) -> pd.DataFrame:
    return hand_runs_frame([(TrainConfig.of(method="ganbert", generator=generator, adversarial=adversarial, seed=seed,
                                         fraction=0.1, frozen=True, data=DataSpec(train="a.jsonl", test="t.jsonl")),
                             score)
                            for (adversarial, generator), values in scores.items()
                            for seed, score in enumerate(values)])


def test_the_verdict_says_what_the_adversarial_part_adds_with_its_interval():
    frame = ganbert_frame({(True, "noise"): [0.50, 0.52, 0.55, 0.49, 0.51],
                           (True, "bow"): [0.40, 0.42, 0.41, 0.43, 0.40],
                           (False, "noise"): [0.45, 0.47, 0.50, 0.46, 0.44]})
    summary = summarize(frame, "accuracy", METRICS)
    adds = {p.a.split(" @ ")[0]: p for p in summary.ablations}
    g1 = adds["GAN-BERT G1 (noise) on frozen features"]
    assert g1.b.startswith("GAN-BERT control") and g1.difference.mean == pytest.approx(0.05)
    assert g1.wins == 5 and g1.difference.low > 0  # five seeds all one way: the interval excludes 0
    assert adds["GAN-BERT G2 (bag of words) on frozen features"].difference.mean == pytest.approx(-0.052)
    cell = summary.verdicts.iloc[0]["adversarial_adds"]
    assert "G1 (noise) on frozen features: +0.050 [" in cell and "G2 (bag of words)" in cell
    assert summary.to_json()["adversarial_adds"][0]["difference"]["n"] == 5
    line = adds_line(g1)
    assert line.startswith("GAN-BERT G1 (noise) on frozen features at ") and "adds 0.050: the 95% interval excludes 0" \
        in line and "no rank test on 5 seeds can confirm it" in line


def test_two_seeds_never_hold_across_seeds_and_a_cost_is_said_in_words():
    """Issue 61: −0.028 [−0.045, −0.011] stood bare on the page, while the CLI said the difference "holds across
    seeds" on 2 seeds. One function (`adds_line`) words it for both."""
    frame = ganbert_frame({(True, "noise"): [0.400, 0.410], (False, "noise"): [0.428, 0.4385]})
    summary = summarize(frame, "accuracy", METRICS)
    game = summary.ablations[0]
    line = adds_line(game)
    assert "the adversarial part costs 0.028: the 95% interval excludes 0 on these 2 seeds, though no rank test " \
           "on 2 seeds can confirm it" in line
    assert not any("holds across seeds" in said for p in summary.pairs["accuracy"] for said in p.explain())
    flat = ganbert_frame({(True, "noise"): [0.40, 0.45], (False, "noise"): [0.43, 0.42]})
    assert "adds nothing that can be told: the 95% interval includes 0" in adds_line(
        summarize(flat, "accuracy", METRICS).ablations[0])


# ------------------------------------------------------------ predictions that cannot underflow

def test_a_fake_logit_far_ahead_leaves_a_normalised_distribution_and_the_real_argmax():
    logits = torch.tensor([[1.0, 3.0, 2.0, 1003.0], [0.5, 0.2, 0.1, -5.0]])
    real, fake = GanBert(METHODS["ganbert"]).probabilities(logits)
    assert torch.allclose(real.sum(-1), torch.ones(2))
    assert real.argmax(-1).tolist() == logits[:, :3].argmax(-1).tolist() == [1, 0]
    assert real[0, 1] == pytest.approx(np.exp(3) / (np.exp(1) + np.exp(3) + np.exp(2)))
    assert fake[0] == pytest.approx(1.0) and fake[1] < 0.01


# ------------------------------------------------------------ max length from the data

@pytest.mark.parametrize("lengths, limit, tokens", [
    ([100] * 80 + [200] * 20, 512, 128),  # 20% cut at 128
    ([100] * 70 + [200] * 30, 512, 256),  # 30% at 128, none at 256
    ([300] * 74 + [600] * 26, 512, 512),  # 26% even at 512: the limit
    ([300] * 100, 256, 256),  # the backbone's positions cap it
])
def test_auto_is_the_smallest_step_that_cuts_at_most_a_quarter(lengths, limit, tokens):
    assert choose(np.array(lengths), limit).tokens == tokens


def test_the_truncation_says_which_texts_it_was_measured_on():
    """A sample of the training texts, or all of them: another page's count over all can differ by a point."""
    assert "(20.0% of 100 sampled training texts cut)" in choose(np.array([100] * 80 + [200] * 20), 512, 10_800).why
    assert "(20.0% of the 100 training texts cut)" in choose(np.array([100] * 80 + [200] * 20), 512).why
    assert "26.0% of the 100 training texts are still cut" in choose(np.array([300] * 74 + [600] * 26), 512).why


def test_auto_is_resolved_when_queued_and_recorded(tiny_backbone, m4_dir, studio_home):
    spec = DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl"))
    config = resolve(TrainConfig(data=spec, method="finetune", frozen=True, backbone=str(tiny_backbone)), studio_home)
    assert config.max_len == 512  # 95% of the sample's texts pass 128 tokens, 59% pass 256, 14% pass 512
    assert position_limit(config.resolved_backbone(studio_home)) == 512
    tfidf = resolve(TrainConfig(data=spec, method="tfidf-lr"), studio_home)
    assert tfidf.max_len is None  # no encoder reads its tokens


@pytest.mark.parametrize("settings, lr, batch", [
    ({"method": "finetune", "frozen": True}, 3e-3, 64),
    ({"method": "finetune"}, 1e-4, 16),
    ({"method": "adapter"}, 1e-3, 16),
    ({"method": "setfit"}, 2e-5, 16),
    ({"method": "ganbert", "frozen": True}, 3e-4, 64),
    ({"method": "ganbert"}, 5e-5, 16),
    ({"method": "ganbert", "gan_preset": "tf"}, 2e-5, 64),
    ({"method": "ganbert", "gan_preset": "notebook", "lr": 1e-3, "batch_size": 8}, 1e-3, 8),  # the user's win
])
def test_the_learning_rate_and_batch_a_run_uses_are_written_into_its_config(settings, lr, batch):
    settled = method_for(TrainConfig.of(**settings)).settle(TrainConfig.of(**settings))
    assert (settled.lr, settled.batch_size) == (lr, batch)


def test_data_paths_are_stored_from_the_root_so_one_file_is_one_dataset(m4_dir, monkeypatch, tmp_path, studio_home):
    monkeypatch.chdir(m4_dir.parent)
    relative = DataSpec(train=f"{m4_dir.name}/train.jsonl", test=f"./{m4_dir.name}/../{m4_dir.name}/dev.jsonl")
    spelled_out = DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl"))
    config = resolve(TrainConfig(data=relative, method="tfidf-lr"), studio_home)
    assert config == resolve(TrainConfig(data=spelled_out, method="tfidf-lr"), studio_home)
    assert config.data.test == str((m4_dir / "dev.jsonl").resolve())
    with pytest.raises(ValueError, match="resolve"):  # a worker started elsewhere would read another file
        train_into(config.with_(data=relative), RunFolder(tmp_path / "run"), studio_home, lambda e: None, lambda: False)


# ------------------------------------------------------------ one standardization for every frozen method

def test_every_frozen_method_standardizes_with_the_same_rows(tiny_backbone, tmp_path, studio_home):
    stats = {}
    for name, extra in (("features-lr", {}), ("finetune", {"steps": 2}), ("ganbert", {"steps": 2})):
        folder = tmp_path / name
        train_into(tiny(tiny_backbone, method=name, frozen=True, **extra), RunFolder(folder), studio_home,
                   lambda e: None, lambda: False)
        tensors = read_tensors(folder / "checkpoint")
        stats[name] = (tensors["feature_mean"], tensors["feature_std"])
    for name in ("finetune", "ganbert"):
        assert all(torch.equal(mine, theirs) for mine, theirs in zip(stats[name], stats["features-lr"]))


# ------------------------------------------------------------ the same numbers whatever the thread count

SAME_SEED = """
import json, sys
from core.environment import prepare
prepare()
import torch
torch.set_num_threads(int(sys.argv[1]))
from core.data import DataSpec
from core.paths import home_from_environment
from core.runs import RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, resolve
spec = DataSpec(train=sys.argv[2] + "/train.jsonl", test=sys.argv[2] + "/dev.jsonl")
home = home_from_environment()  # the process's own, as the test's environment names it
config = resolve(TrainConfig(data=spec, method="ganbert", frozen=True, per_class=5, fraction=None, seed=0, max_len=128,
                             precision="fp32"), home)
result = train_into(config, RunFolder(sys.argv[3]), home, lambda e: None, lambda: False)
print(json.dumps({"test": result["test"], "threads": result["threads"], "fake": result["val_fake_prob"]}))
"""


@pytest.mark.integration
def test_one_frozen_ganbert_seed_gives_the_same_metrics_at_one_and_two_threads(m4_dir, tmp_path):
    """Each in its own process and studio home, so the encoding runs at that thread count too. In fp32 (MKL
    in strict reproducible mode) every number is the same; bf16's oneDNN kernels split their sums by thread
    count, which the README states."""
    out = {}
    for threads in (1, 2):
        env_home = tmp_path / f"home{threads}"
        done = subprocess.run([sys.executable, "-c", SAME_SEED, str(threads), str(m4_dir),
                               str(tmp_path / f"run{threads}")], capture_output=True, text=True, check=True,
                              env={**os.environ, "STUDIO_HOME": str(env_home)})
        out[threads] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out[1]["threads"] == 1 and out[2]["threads"] == 2
    assert out[1]["test"] == out[2]["test"] and out[1]["fake"] == out[2]["fake"]  # every digit
