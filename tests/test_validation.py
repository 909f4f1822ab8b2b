"""Honest few-label runs: every label a run reads counts, validation included. The rule that draws a run's
validation rows, the count it records, where the pages and the CLI show it, Compare saying when two groups read
different numbers, and a home written before the rule."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core import compare
from core.cli import main
from core.data import Amount, CorpusConfig, DataSpec, Validation, draw_validation, labels_read
from core.errors import InputError
from core.paths import home_from_environment
from core.runs import Registry, RunFolder, Status
from core.runs.execute import train_into
from core.train import TrainConfig, load_data, resolve, split_pool

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))


def tiny(tiny_backbone, **kw) -> TrainConfig:
    base = dict(data=DATA, backbone=str(tiny_backbone), method="finetune", frozen=True, fraction=None, per_class=5,
                steps=4, evaluations=2, batch_size=8, max_len=64)
    return resolve(TrainConfig.of(**{**base, **kw}), home_from_environment())


# ------------------------------------------------------------ the rule

@pytest.mark.parametrize("text, rule, value, canonical", [
    ("auto", "auto", None, "auto"), ("20/class", "per_class", 20, "20/class"), ("0.1", "share", 0.1, "0.1"),
    ("10%", "share", 0.1, "0.1"), ("split", "split", None, "split"), ("none", "none", None, "none"),
    ("carve:0.1", "carve", 0.1, "carve:0.1")])
def test_a_validation_rule_reads_as_written(text, rule, value, canonical):
    parsed = Validation.parse(text)
    assert (parsed.rule, parsed.value, str(parsed)) == (rule, value, canonical)


@pytest.mark.parametrize("text", ["0/class", "2.5/class", "1.5", "0", "most", "-3/class"])
def test_a_bad_validation_rule_names_what_is_allowed(text):
    with pytest.raises(InputError, match="validation must be auto, N/class"):
        TrainConfig(validation=text)


def test_validation_none_cannot_select_the_best_checkpoint():
    with pytest.raises(InputError, match="selection best needs validation texts"):
        TrainConfig(validation="none", selection="best")


def test_validation_rows_come_from_the_pool_apart_from_the_labeled_ones_as_many_per_class():
    labels = np.repeat(np.arange(3), 20)
    labeled = np.flatnonzero(np.isin(np.arange(60), [0, 1, 20, 21, 22, 40]))  # 2, 3 and 1 of classes 0, 1, 2
    source, rows = draw_validation(Validation.parse("auto"), labels, labeled, None, seed=4)
    assert source == "pool" and not set(rows) & set(labeled)
    assert np.bincount(labels[rows]).tolist() == [2, 3, 1]  # as many per class as each labels
    again = draw_validation(Validation.parse("auto"), labels, labeled, None, seed=4)[1]
    assert rows.tolist() == again.tolist()  # one seed, one draw: every method validates on the same rows
    assert draw_validation(Validation.parse("7/class"), labels, labeled, None, seed=4)[1].size == 21
    split = np.repeat(np.arange(3), 4)
    source, rows = draw_validation(Validation.parse("auto"), labels, labeled, split, seed=4)
    assert source == "val" and np.bincount(split[rows]).tolist() == [2, 3, 1]
    assert draw_validation(Validation.parse("split"), labels, labeled, split, seed=4)[1].size == 12
    assert draw_validation(Validation.parse("none"), labels, labeled, split, seed=4) == ("none", pytest.approx([]))
    with pytest.raises(InputError, match="needs a validation split"):
        draw_validation(Validation.parse("split"), labels, labeled, None, seed=4)


def test_labels_read_in_words():
    five = Amount(per_class=5)
    assert labels_read(five, Validation.parse("auto"), 25, 25) == "5/class + 5/class validation = 50 labels"
    assert labels_read(five, Validation.parse("none"), 25, 0, reference=True) == (
        "5/class, no validation (a reference reads its labeled rows alone) = 25 labels")
    assert labels_read(Amount(fraction=0.01), Validation.parse("auto"), 114, 114) == (
        "1% (114) + 114 validation = 228 labels")
    assert labels_read(five, Validation.parse("carve:0.1"), 25, 12) == (
        "5/class + 12 validation set aside by the earlier rule = 37 labels")


# ------------------------------------------------------------ from the sampler to the record, the CLI and Compare

def test_a_label_count_from_the_sampler_to_the_record_the_runs_list_and_compare(tiny_backbone, studio_home, capsys):
    """A 5/class head reads 5/class more to validate on: 60 labels over 6 classes, drawn from the train pool
    (the built-in corpus has no validation split), and the same rows for every method. A reference reads its
    25 labeled rows alone, and Compare says the two did not read as many labels."""
    head = tiny(tiny_backbone)
    data = split_pool(head, load_data(head, studio_home))
    assert (len(data.labeled), len(data.val), data.labels_read) == (30, 30, 60)
    lr = tiny(tiny_backbone, method="features-lr")
    assert (lr.validation, lr.selection) == ("none", "auto")  # settled: it selects nothing, so it reads none
    assert split_pool(lr, load_data(lr, studio_home)).labeled.tolist() == data.labeled.tolist()  # paired by seed
    assert len(split_pool(lr, load_data(lr, studio_home)).val) == 0

    registry = Registry(studio_home)
    for config in (head, lr, head.with_(seed=1), lr.with_(seed=1)):
        run_id = registry.create(config)
        registry.claim(run_id)
        registry.mark_running(run_id, 1, "cpu")
        result = train_into(config, registry.folder(run_id), studio_home, lambda e: None, lambda: False)
        registry.finish(run_id, Status.DONE, "finished", result)
    runs = registry.list()
    by_method = {r.config.method: r for r in runs if r.config.seed == 0}
    record = by_method["finetune"].metrics
    assert (record["labeled"], record["val_rows"], record["labels_read"]) == (30, 30, 60)
    assert record["validation"] == "auto" and record["val_source"] == "the train pool"
    assert by_method["features-lr"].metrics["labels_read"] == 30 and by_method["features-lr"].metrics["val"] is None

    assert main(["runs", "--json"]) == 0
    listed = {r["method"]: r for r in json.loads(capsys.readouterr().out) if r["seed"] == 0}
    assert listed["finetune"]["labels"] == "5/class + 5/class validation = 60 labels"
    assert listed["features-lr"]["labels_read"] == 30
    assert main(["runs"]) == 0
    assert "5/class + 5/class validation = 60 labels" in capsys.readouterr().out

    frame = compare.runs_frame(runs)
    assert sorted(frame["labels read"]) == [30, 30, 60, 60]
    summary = compare.summarize(frame, "accuracy", compare.METRICS)
    assert sorted(summary.groups["labels read"]) == [30, 60]
    pair = summary.pairs["accuracy"][0]
    note = pair.explain()[-1]
    assert note.startswith("Note: not at the same labels") and "60" in note and "30" in note
    assert "not at the same labels" in compare.verdict_line(summary.verdicts.to_dict("records")[0])
    assert any(line.startswith("Labels read: 5/class + 5/class validation = 60 labels")
               for line in compare.run_notes(by_method["finetune"], registry))


def test_standardisation_reads_only_the_labeled_rows(tiny_backbone, tmp_path, studio_home):
    config = tiny(tiny_backbone)
    train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    import torch

    from core.train.inputs import model_inputs

    data = split_pool(config, load_data(config, studio_home))
    features = np.asarray(model_inputs(config, data, torch.device("cpu"), studio_home, lambda e: None)["pool"])
    model = RunFolder(tmp_path).load_model(studio_home).model
    np.testing.assert_allclose(model.feature_mean.numpy(), features[data.labeled].mean(0), rtol=1e-5, atol=1e-6)


def test_no_validation_keeps_the_last_checkpoint_and_makes_no_claim_about_learning(tiny_backbone, tmp_path,
                                                                                   studio_home):
    events = []
    config = tiny(tiny_backbone, validation="none", steps=25, evaluations=10)  # every 3 steps, and the 25th
    result = train_into(config, RunFolder(tmp_path), studio_home, events.append, lambda: False)
    assert result["selection"] == "last" and result["val_rows"] == 0 and result["labels_read"] == 30
    assert result["learned"] is None and result["val"] is None
    curves = [e for e in events if e["type"] == "evaluation"]
    assert curves and all(e["val"] is None and "loss" in e["losses"] for e in curves)
    assert [e["index"] for e in curves] == list(range(1, 10)) and curves[-1]["step"] == 25  # each its own number
    assert result["evaluations"] == 9


def test_a_running_run_says_the_labels_it_drew(studio_home):
    """A walk saw a SmolLM2 run on the M4 sample listed as '20/class + 20/class validation' while it trained, and
    '20/class + 28 validation (not 20/class: …) = 128 labels' once done: its drawn rows are known from its start."""
    registry = Registry(studio_home)
    run_id = registry.create(TrainConfig(per_class=20, fraction=None))
    registry.claim(run_id)
    registry.mark_running(run_id, 1, "cpu")
    assert registry.get(run_id).labels_read is None  # nothing drawn yet: the rule alone
    assert registry.get(run_id).labels_text == "20/class + 20/class validation"
    registry.set_rows(run_id, {"labeled": 100, "unlabeled": 0, "val_rows": 28, "test_rows": 65})
    run = registry.get(run_id)
    assert run.labels_read == 128 and run.labels_text == (
        "20/class + 28 validation (20/class where a class had that many left; some had fewer) = 128 labels")


# ------------------------------------------------------------ a home written before the rule

def test_a_run_from_before_the_rule_lists_compares_and_runs_as_it_ran(tiny_backbone, studio_home, capsys):
    """A config stored before `validation` existed carved 10% of train for every seed: it is read as `carve:0.1`,
    its labels count its 18 validation rows (10% of 30 a class, 6 classes), and run again it carves as it did."""
    old = json.loads(tiny(tiny_backbone).to_json())
    old.pop("validation")
    old["val_fraction"] = 0.1
    registry = Registry(studio_home)
    run_id = registry.create(TrainConfig.from_json(json.dumps(old)))
    registry.claim(run_id)
    registry.mark_running(run_id, 1, "cpu")
    registry.finish(run_id, Status.DONE, "finished", {"labeled": 30, "unlabeled": 0, "val_rows": 18, "test_rows": 60,
                                                      "test": {"accuracy": 0.5, "macro_f1": 0.5, "mcc": 0.4}})
    with registry._connect() as db:  # as an earlier version wrote it: no `validation` in the stored config
        db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(old), run_id))
    run = Registry(studio_home).get(run_id)
    assert run.config.validation == "carve:0.1" and run.labels_read == 48
    assert run.labels_text == "5/class + 18 validation set aside by the earlier rule = 48 labels"
    assert main(["runs"]) == 0 and "18 validation set aside by the earlier rule" in capsys.readouterr().out
    assert compare.runs_frame([run])["labels read"].tolist() == [48]

    again = resolve(run.config, studio_home)
    assert again.validation == "carve:0.1"
    ds = load_data(again, studio_home)
    assert ds.val is not None and len(ds.val) == 18 and len(ds.train) == 162  # 10% of 30 per class, set aside
    data = split_pool(again, ds)
    assert len(data.val) == 18 and data.val_source == "the validation split"


def test_the_labels_line_says_the_validation_a_run_will_get_and_when_it_cannot_rank_checkpoints():
    """Issue 95 item 3: on the M4 sample (two classes of 20 train texts) a 20/class run read "20/class + 20/class
    validation = 128 labels" on the form, the run's details, `core runs` and MLflow, where it got 28 validation texts
    (none of two classes) and kept its last checkpoint with nothing said before launch."""
    from core.data import Amount, Validation, labels_read
    from core.train import TrainConfig
    from core.train.sweep import grid_labels

    sizes = {0: 32, 1: 24, 2: 20, 3: 20, 4: 32}  # the M4 sample's train classes (no bloomz)
    names = ("human", "chatGPT", "cohere", "davinci", "bloomz")
    line = grid_labels([TrainConfig(method="finetune", per_class=20, fraction=None)], sizes, None, names)
    assert "20/class + 28 validation (20/class where a class had that many left; some had fewer) = 128 labels" in line
    assert ("Validation will hold fewer than 10 texts of some classes (chatGPT 4, cohere 0, davinci 0): too few to "
            "rank checkpoints on, so this run keeps its last checkpoint.") in line
    roomy = grid_labels([TrainConfig(method="finetune", per_class=20, fraction=None)], {0: 200, 1: 200}, None)
    assert "20/class + 20/class validation = 80 labels" in roomy and "fewer than 10" not in roomy
    assert labels_read(Amount(per_class=20), Validation.parse("auto"), 100, 28) == \
        "20/class + 28 validation (20/class where a class had that many left; some had fewer) = 128 labels"


def test_validation_texts_the_test_split_holds_are_set_aside_and_said(m4_dir, tmp_path, studio_home):
    """Issue 95 item 2: a folder loaded with its dev file as the test file showed "128 train, 65 val, 65 test", and
    the check said runs draw their validation from it: checkpoints would have been chosen on the test texts."""
    import shutil

    from core.data import DataSpec, load_dataset

    folder = tmp_path / "m4"
    folder.mkdir()
    for name in ("train.jsonl", "dev.jsonl"):
        shutil.copy(m4_dir / name, folder / name)
    ds = load_dataset(DataSpec(train=str(folder), test=str(folder / "dev.jsonl")), studio_home)
    assert ds.val is None and ds.val_in_test == 65 and len(ds.test) == 65
    assert ds.validation_note().startswith("The validation file's 65 text(s) that the test split holds too are set "
                                           "aside: a checkpoint chosen on them would be chosen on test texts. So no "
                                           "validation split is left. Each run draws its validation texts from the "
                                           "train pool")
    assert ds.split_line() == ("128 train, 65 test; the validation file's 65 text(s) that the test split holds too "
                               "are set aside, so each run draws its validation texts from train")
    apart = load_dataset(DataSpec(train=str(folder / "train.jsonl"), val=str(folder / "dev.jsonl")), studio_home)
    assert apart.val_in_test == 0 and len(apart.val) == 65  # no test split: nothing to keep it from

    # the Data page says so in its banner and its check, after a load of the same texts with no validation file:
    # the two share a fingerprint, and the check had been the first one's ("nothing is set aside"; a re-walk)
    from tests.helpers import open_page

    at = open_page("pages/data.py")
    for train in (folder / "train.jsonl", folder):
        at.text_input(key="lp_train").set_value(str(train))
        at.text_input(key="lp_test").set_value(str(folder / "dev.jsonl"))
        at.button(key="lp_load").click().run()
    assert not at.exception and at.success[0].value == f"Loaded m4: {ds.split_line()}"
    assert ds.validation_note() in [c.value for c in at.caption]
