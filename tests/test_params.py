"""A config per method: each method declares its own settings (`core.train.params`), a run's config holds its
method's and no other's, and the CLI, the sweep, the stored JSON and the settings a run is told apart by read them."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from core.cli import build_parser, main
from core.cli.commands import say_settled
from core.cli.options import UsageError, config_from_args, sweep_of
from core.errors import InputError
from core.train import TrainConfig
from core.train.catalog import CATALOG
from core.train.config import SHARED, flat_settings, options
from core.train.params import GanBertParams, LoraParams, SetFitParams
from core.train.sweep import Sweep, amounts


def test_every_methods_settings_have_names_no_other_setting_takes():
    """The stored JSON and the flags are flat, so a method's field may share its name only with the same field of
    another method (LR's C, which SetFit's head reads too), never with a shared setting."""
    declared: dict[str, object] = {}
    for entry in CATALOG.values():
        for f in fields(entry.params):
            assert f.name not in SHARED, f.name
            assert declared.setdefault(f.name, f.metadata) == f.metadata, f.name
    assert set(declared) <= set(options())


def test_a_config_holds_its_methods_settings_and_no_others():
    config = TrainConfig.of("ganbert", generator="bow", adversarial=False, seed=3)
    assert config.params == GanBertParams(generator="bow", adversarial=False) and config.seed == 3
    stored = json.loads(config.to_json())
    assert stored["generator"] == "bow" and "lora_rank" not in stored and "finetune_preset" not in stored
    assert TrainConfig.from_json(config.to_json()) == config
    assert set(flat_settings(TrainConfig(method="lora"))) & {"generator", "lr_c", "lora_rank"} == {"lora_rank"}
    for method, entry in CATALOG.items():  # each method's defaults, and a round trip through its JSON
        plain = TrainConfig(method=method)
        assert plain.params == entry.params() and TrainConfig.from_json(plain.to_json()) == plain


def test_another_methods_setting_is_refused_by_name_or_left_out_where_asked():
    with pytest.raises(InputError, match="finetune has no setting 'generator'; it is ganbert's"):
        TrainConfig.of("finetune", generator="bow")
    with pytest.raises(InputError, match="lora has no setting 'lr_c'; it is setfit and tfidf-lr and features-lr's"):
        TrainConfig(method="lora").with_(lr_c=2.0)
    with pytest.raises(InputError, match="no setting 'nonsense'$"):
        TrainConfig.of("lora", nonsense=1)
    assert TrainConfig.of("finetune", foreign=True, generator="bow", lora_rank=4) == TrainConfig()
    with pytest.raises(InputError, match="method must be one of finetune, adapter"):
        TrainConfig(method="nope")
    with pytest.raises(InputError, match="ganbert takes GanBertParams, got LoraParams"):
        TrainConfig(method="ganbert", params=LoraParams())


def test_each_method_checks_its_own_settings():
    with pytest.raises(InputError, match="generator must be one of noise, bow, got 'gan'"):
        TrainConfig.of("ganbert", generator="gan")
    with pytest.raises(InputError, match="lora_rank must be at least 1, got 0"):
        LoraParams(lora_rank=0)
    with pytest.raises(InputError, match="setfit_iterations must be at least 1"):
        TrainConfig(method="setfit").with_(setfit_iterations=0)


def test_changing_the_method_starts_from_its_defaults_and_carries_a_setting_both_have():
    setfit = TrainConfig.of("setfit", lr_c=3.0, setfit_iterations=5, seed=2)
    lr = setfit.with_(method="tfidf-lr")
    assert lr.params.lr_c == 3.0 and lr.seed == 2 and "setfit_iterations" not in json.loads(lr.to_json())
    assert lr.with_(method="setfit").params == SetFitParams(lr_c=3.0)  # SetFit's own defaults again
    assert TrainConfig.of("ganbert", gan_preset="tf").with_(method="finetune").with_(method="ganbert").params == (
        GanBertParams())
    assert TrainConfig.of("ganbert", generator="bow").value("generator") == "bow"
    with pytest.raises(InputError, match="finetune has no setting 'generator'"):
        TrainConfig().value("generator")


def test_an_old_config_with_every_methods_settings_reads_as_its_own():
    """A checkpoint written before each method had its own settings holds every method's."""
    old = json.loads(TrainConfig.of("lora", lora_rank=4).to_json()) | {
        "generator": "bow", "gan_preset": "tf", "lr_c": 7.0, "finetune_preset": "paper", "setfit_iterations": 3}
    config = TrainConfig.from_json(json.dumps(old))
    assert config.params == LoraParams(lora_rank=4) and "generator" not in json.loads(config.to_json())


def test_the_cli_gives_each_method_its_own_flags_values(capsys, studio_home):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    args = sub["train"].parse_args(["--train", "builtin", "--method", "lora", "--lora-rank", "4"])
    assert config_from_args(args).params == LoraParams(lora_rank=4)
    args = sub["train"].parse_args(["--train", "builtin", "--method", "lora", "--gan-preset", "tf", "--lr-c", "2"])
    with pytest.raises(UsageError, match="--gan-preset, --lr-c are another method's setting; --method lora does not"):
        config_from_args(args)
    assert main(["train", "--train", "builtin", "--method", "finetune", "--generator", "bow"]) == 2
    assert "--generator is another method's setting" in capsys.readouterr().err
    args = sub["sweep"].parse_args(["--train", "builtin", "--methods", "lora", "ganbert", "setfit", "tfidf-lr",
                                    "--lora-rank", "4", "--gan-preset", "tf", "--generators", "bow",
                                    "--lr-c", "5", "--per-class", "2", "--seeds", "0"])
    configs = sweep_of(args).configs(config_from_args(args, sweep=True), studio_home)
    by = {c.method: c.params for c in configs}
    sweep = sweep_of(args)  # what a sweep says of each method before it runs reads the method's own settings too
    say_settled([sweep.start(config_from_args(args, sweep=True), name) for name in ("ganbert", "lora")])
    assert "the tf preset" in capsys.readouterr().err
    assert by["lora"].lora_rank == 4 and by["ganbert"].gan_preset == "tf" and by["ganbert"].generator == "bow"
    assert by["setfit"].lr_c == by["tfidf-lr"].lr_c == 5.0


def test_a_sweep_crosses_a_methods_variants_from_its_own_settings(studio_home):
    sweep = Sweep(("finetune", "ganbert"), {"adversarial": (True, False)}, amounts([], [2]), (0,),
                  {"gan_preset": "notebook", "finetune_preset": "paper", "lora_rank": 2})
    configs = sweep.configs(TrainConfig(per_class=2, fraction=None), studio_home)
    games = sorted((c.params.adversarial, c.params.gan_preset) for c in configs if c.method == "ganbert")
    assert games == [(False, "notebook"), (True, "notebook")]
    assert [c.params.finetune_preset for c in configs if c.method == "finetune"] == ["paper"]
