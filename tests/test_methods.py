"""Methods are plug-ins: one module and one line in the table reach the CLI, the sweep grid, the loop, the
checkpoint loader, Compare and the Train page. Proved with a toy method registered here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import nn

from core.cli import build_parser, main
from core.cli.options import config_from_args
from core.compare import method_name
from core.data import CorpusConfig, DataSpec
from core.runs import Registry, RunFolder
from core.runs.execute import train_into
from core.train import METHODS, Sweep, TrainConfig, amounts, classify, method_for, resolve, run_label
from core.train.catalog import CATALOG, Entry
from core.train.methods import Method, Trainer
from core.train.methods.presets import copies, repeats_for
from core.train.methods.specs import StepSpec
from core.train.methods.stepwise import StepTrainer
from core.train.params import MethodParams
from core.train.settings import option
from pages.train_form import methods_key
from tests.helpers import open_page


@dataclass(frozen=True)
class ToyParams(MethodParams):
    toy_bias: bool = option(False, "a bias in the toy's linear head", label="Toy bias")


class Toy(StepSpec):
    """A linear head, bias-free unless its own setting says: a method the studio has never seen."""

    name = "toy"
    title = "Toy linear head"


class ToyTrainer(StepTrainer):
    def build_head(self, config, num_labels, feature_dim, hidden_size):
        return nn.Linear(feature_dim, num_labels, bias=config.params.toy_bias), None


@pytest.fixture
def toy(monkeypatch) -> Toy:
    # the one line a new method adds to the table: its spec, its trainer and its settings
    entry = Entry("Toy linear head", f"{__name__}:Toy", f"{__name__}:ToyTrainer", ToyParams)
    monkeypatch.setitem(CATALOG, "toy", entry)
    method = Toy()
    monkeypatch.setitem(METHODS, "toy", method)  # the spec table, built from the catalog at import
    return method


def test_each_spec_hands_fitting_and_loading_to_its_training_class():
    """The table holds specs, which import no torch; `fit` and `load` go to the catalog's trainer, which holds the
    spec (composition: it is no spec itself, and asks the spec what the settings mean) and defines both, so the
    hand-over cannot loop."""
    for name, spec in METHODS.items():
        trainer = spec.trainer()
        assert type(trainer).__name__ == CATALOG[name].trainer.split(":")[1]
        assert trainer.spec is spec and not isinstance(trainer, Method)
        assert type(trainer).fit is not Trainer.fit and type(trainer).load is not Trainer.load


def test_a_registered_method_is_taken_by_the_cli_and_the_grid(toy, tiny_backbone, capsys, studio_home):
    args = build_parser().parse_args(["train", "--train", "builtin", "--method", "toy", "--fraction", "0.5"])
    assert method_for(config_from_args(args)) is toy and config_from_args(args).params == ToyParams()
    args = build_parser().parse_args(["train", "--train", "builtin", "--method", "toy", "--toy-bias"])
    assert config_from_args(args).params.toy_bias  # its own setting, a flag of its own
    assert main(["train", "--train", "builtin", "--method", "nope", "--fraction", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "method must be one of" in err and "toy" in err
    base = TrainConfig(backbone=str(tiny_backbone), frozen=True)
    configs = Sweep(("toy", "ganbert"), {"generator": ("noise", "bow")}, amounts([0.5], [3]), (0, 1)).configs(
        base, studio_home)
    assert sum(c.method == "toy" for c in configs) == 4  # 2 amounts × 2 seeds, no generator crossing
    assert sum(c.method == "ganbert" for c in configs) == 8


def test_a_registered_method_trains_saves_loads_and_is_named(toy, tiny_backbone, tmp_path, studio_home):
    config = TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10)), method="toy",
                         backbone=str(tiny_backbone), frozen=True, epochs=2, fraction=0.5, lr=1e-2)
    result = train_into(resolve(config, studio_home), RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    assert result["steps"] == 4  # 2 epochs of 2 batches of 64
    predictions = RunFolder(tmp_path).predictions()  # the metrics are those of the predictions it wrote
    assert result["test"]["accuracy"] == pytest.approx((predictions["pred"] == predictions["label"]).mean())
    model = RunFolder(tmp_path).load_model(studio_home)  # the loader builds the toy's head from the table
    assert isinstance(model.model.head, nn.Linear) and model.model.head.bias is None
    assert classify(model, ["Furthermore, solar panels reshape energy prices."])[0].fake_probability is None
    registry = Registry(studio_home)
    run = registry.get(registry.create(config))
    assert method_name(run) == "Toy linear head on frozen features"
    # queued; on the tiny BERT, named for it (a backbone other than the bundled one)
    assert run.name == "Toy linear head on frozen features · tiny-bert0 @ 50% · seed 0 · built-in (synthetic)"
    assert run_label(config, result["labeled"]) == (f"Toy linear head on frozen features · tiny-bert0 @ 50% "
                                                    f"({result['labeled']} labeled) · seed 0 · built-in (synthetic)")


def test_a_registered_method_is_offered_on_the_train_page(toy, small_builtin):
    at = open_page("pages/train.py", small_builtin)
    at.toggle(key="tr_frozen").set_value(True).run()  # named for the mode, as its runs will be
    assert "Toy linear head on frozen features" in at.multiselect(key=methods_key(True)).options
    at.multiselect(key=methods_key(True)).set_value(["Toy linear head on frozen features"]).run()
    assert not at.exception and at.toggle(key="tr_toy_bias").label == "Toy bias"  # its own setting, in its section


def test_ganbert_repeats_labeled_rows_by_their_share_of_the_whole_pool(studio_home):
    """An --unlabeled file grows the pool: 10 labeled rows among 1,000 are 1%, six copies each by the authors' rule
    (the tf preset), even when the train file alone held only 20 rows."""
    labeled, unlabeled = np.arange(10), np.arange(10, 1000)
    authors = resolve(TrainConfig.of(method="ganbert", gan_preset="tf", fraction=0.01), studio_home)
    rows = METHODS["ganbert"].epoch_rows(authors, labeled, unlabeled)
    assert authors.params.batches_without_labels is None and repeats_for(0.01) == 6
    assert (np.bincount(rows)[:10] == 6).all() and len(rows) == 60 + 990
    assert METHODS["ganbert"].epoch_size(authors, 10, 990) == len(rows)


def test_the_studio_preset_repeats_labeled_rows_until_batches_of_16_carry_labels(studio_home):
    """L2R's whole pool at 20/class: the authors' 6 copies left 43% of the studio's batches of 16 without a label;
    24 copies leave about 5%, measured on shuffled epochs. The control reads the same rows; 1 turns the floor off."""
    studio = resolve(TrainConfig(method="ganbert", fraction=0.01), studio_home)
    control = resolve(studio.with_(adversarial=False), studio_home)
    assert studio.params.batches_without_labels == control.params.batches_without_labels == 0.05
    labeled, unlabeled = np.arange(100), np.arange(100, 11321)
    rng = np.random.default_rng(0)

    def empty_share(config: TrainConfig) -> float:
        rows = METHODS["ganbert"].epoch_rows(config, labeled, unlabeled)
        batches = [rng.permutation(rows)[:len(rows) // 16 * 16].reshape(-1, 16) for _ in range(5)]
        return float(np.mean([(b < 100).sum(1) == 0 for b in batches]))

    assert copies(100, 11221, 16, 0.05) == 24 and copies(100, 11221, 16, None) == copies(100, 11221, 16, 1.0) == 6
    assert 0.03 < empty_share(studio) < 0.065 and empty_share(studio.with_(batches_without_labels=1.0)) > 0.4
    assert copies(100, 11221, 64, 0.05) == 6  # the authors' batch of 64 needs no more: the floor leaves their rule
    assert copies(100, 0, 16, 0.05) == 1 and copies(0, 50, 16, 0.05) == 1  # nothing to mix, or nothing labeled


def test_each_method_decides_its_probabilities():
    logits = torch.tensor([[2.0, 0.0, 0.0, 1.0]])
    real, fake = METHODS["ganbert"].trainer().probabilities(logits)  # the last logit is GAN-BERT's fake class
    assert real.shape == (1, 3) and torch.allclose(real.sum(-1), torch.ones(1)) and 0 < float(fake[0]) < 1
    real, fake = METHODS["finetune"].trainer().probabilities(logits)
    assert real.shape == (1, 4) and fake is None


@pytest.mark.parametrize("methods, variants, idle, read", [
    (["features-lr"], {}, {"lr", "steps", "epochs", "batch_size", "patience"}, {"lr_c", "max_len", "precision"}),
    (["tfidf-lr"], {}, {"lr", "max_len", "precision"}, {"lr_c"}),
    (["features-lr", "finetune"], {}, set(), {"lr", "steps", "lr_c"}),  # one run reading it is enough
    (["ganbert"], {"adversarial": [False], "generator": ["noise", "bow"]}, {"generator", "noise", "noise_dim"},
     {"adversarial", "gan_preset", "lr"}),
    (["ganbert"], {"adversarial": [True, False]}, set(), {"generator", "noise", "noise_dim"}),
])
def test_the_options_no_run_of_a_grid_reads_are_known(methods, variants, idle, read):
    from core.train.methods import idle_options

    found = idle_options(methods, variants)
    assert idle <= found and not read & found


def test_ganbert_is_listed_by_its_name_not_one_generators():
    assert (METHODS["ganbert"].label(True) == "GAN-BERT on frozen features"
            and METHODS["ganbert"].label(False) == "GAN-BERT")
    assert METHODS["finetune"].label(True) == "Trained head on frozen features"
