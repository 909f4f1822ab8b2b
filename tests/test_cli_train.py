"""The training CLI: train, sweep, runs, cancel and predict, on the real M4 sample and a tiny BERT."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.cli import main
from core.data import CorpusConfig, DataSpec
from core.runs import Registry
from core.train import TrainConfig, load_data, resolve
from tests.helpers import data_args, wait_for


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_train_predict_runs(m4_dir, tiny_backbone, capsys, studio_home):
    code = main(["train", *data_args(m4_dir), "--method", "ganbert", "--generator", "bow", "--per-class", "5",
                 "--frozen", "--epochs", "2", "--backbone", str(tiny_backbone)])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = last_json(out.out)
    assert result["status"] == "done" and set(result) >= {"run_id", "accuracy", "macro_f1", "mcc"}
    assert 0 <= result["accuracy"] <= 1
    # a run trained in the foreground keeps its log as a worker's does: the card read "(no log yet)" once done
    log = Registry(studio_home).folder(result["run_id"]).tail_log()
    # 25 labeled, and as many for validation drawn from the rest: 128 − 50 = 78 unlabeled, repeated labels 2×
    assert " INFO data: 25 labeled, 78 unlabeled, 25 validation (from the train pool) " in log
    assert " INFO evaluation 4 at step 4/4: " in log
    assert log.splitlines()[-1].endswith(f" INFO done: test accuracy {result['accuracy']:.3f}, macro-F1 "
                                         f"{result['macro_f1']:.3f} (65 texts)")

    assert main(["predict", result["run_id"], "An essay about neural networks."]) == 0
    pred = json.loads(capsys.readouterr().out)
    # The sample has no bloomz rows, so the model leaves that class out and never names it.
    assert pred["label"] in pred["probabilities"] and "bloomz" not in pred["probabilities"]
    assert set(pred["probabilities"]) == {"human", "chatGPT", "cohere", "davinci", "dolly"}
    assert sum(pred["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
    assert 0 <= pred["fake_probability"] <= 1

    assert main(["runs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in rows] == [result["run_id"]] and rows[0]["method"] == "ganbert"
    assert main(["runs"]) == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header.split() == ["run", "id", "status", "run", "accuracy", "macro-F1", "progress", "labels", "read"]
    assert line.startswith(result["run_id"]) and f"{result['accuracy']:.3f}" in line and " 100% " in line
    assert line.endswith("5/class + 5/class validation = 50 labels")


def test_a_foreground_run_that_fails_says_where_its_traceback_is(m4_dir, tiny_backbone, capsys, monkeypatch):
    def denied(tensors, filename, *a, **k):
        raise PermissionError(13, "Permission denied", filename)
    monkeypatch.setattr("core.train.checkpoint_store.save_file", denied)
    code = main(["train", *data_args(m4_dir), "--method", "finetune", "--per-class", "5", "--frozen", "--steps", "2",
                 "--backbone", str(tiny_backbone)])
    err = capsys.readouterr().err
    assert code == 1 and "ended failed: CheckpointError: could not write the checkpoint" in err
    log = err.split("(its log: ")[-1].split(")")[0]
    text = Path(log).read_text()
    assert "Traceback" in text and "PermissionError" in text  # in the log, not lost with the terminal
    assert text.splitlines()[-1].split(" INFO ")[-1].startswith("failed: CheckpointError: could not write")


@pytest.mark.parametrize("argv, message", [
    (["predict", "../../etc/passwd", "hi"], "not a run id"),
    (["predict", "20260101-120000-abcdef", "hi"], "no run 20260101-120000-abcdef"),
    (["cancel", "20260101-120000-abcdef"], "no run"),
    (["train", "--train", "builtin", "--method", "finetune", "--fraction", "2"], "fraction must be in"),
    (["train", "--train", "builtin", "--fraction", "0.1", "--per-class", "5"], "not allowed with argument"),
    (["train", "--train", "/no/file.jsonl", "--method", "finetune", "--fraction", "0.1"], "File not found"),
    (["train", "--train", "builtin", "--method", "finetune", "--fraction", "0.1", "--backbone", "/no/model"],
     "backbone folder not found"),
])
def test_bad_training_input_exits_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_sweep_queues_the_grid_in_the_background(m4_dir, tiny_backbone, capsys, studio_home):
    code = main(["sweep", *data_args(m4_dir), "--methods", "finetune", "ganbert", "--generators", "noise", "bow",
                 "--fractions", "0.2", "0.5", "--seeds", "0", "--frozen", "--epochs", "1", "--concurrency", "1",
                 "--backbone", str(tiny_backbone)])
    assert code == 0
    ids = last_json(capsys.readouterr().out)["run_ids"]
    assert len(ids) == 6  # finetune × 2 fractions + ganbert × 2 generators × 2 fractions
    reg = Registry(studio_home)
    wait_for(lambda: all(reg.get(i).status == "done" for i in ids), timeout=300, what="sweep done")
    names = {reg.get(i).name for i in ids}  # one name, with the dataset (by its folder) and the texts labeled
    assert "Trained head on frozen features · tiny-bert0 @ 20% (26 labeled) · seed 0 · m4-sample" in names
    assert "GAN-BERT G2 (bag of words) on frozen features · tiny-bert0 @ 50% (64 labeled) · seed 0 · m4-sample" in names


def test_a_frozen_grid_with_adapters_runs_them_unfrozen_and_says_so(m4_dir, tiny_backbone, capsys, studio_home,
                                                                     tmp_path):
    code = main(["sweep", *data_args(m4_dir), "--methods", "finetune", "adapter", "--per-class", "2", "--seeds", "0",
                 "--frozen", "--steps", "2", "--concurrency", "1", "--backbone", str(tiny_backbone)])
    out = capsys.readouterr()
    assert code == 0 and "note: BERT + adapters trains inside the encoder, so its runs are not frozen" in out.err
    registry = Registry(studio_home)
    runs = {registry.get(i).config.method: registry.get(i).config for i in last_json(out.out)["run_ids"]}
    assert runs["finetune"].frozen and not runs["adapter"].frozen
    again = ["sweep", *data_args(m4_dir), "--methods", "finetune", "adapter", "--per-class", "2", "--seeds", "0", "1",
             "--frozen", "--steps", "2", "--backbone", str(tiny_backbone)]
    assert main(again) == 0  # the same grid with a new seed: only the new seed's runs
    out = capsys.readouterr()
    assert "note: 2 of the grid's 4 runs are done or queued here already; queueing the other 2" in out.err
    assert {Registry(studio_home).get(i).config.seed for i in last_json(out.out)["run_ids"]} == {1}
    copy = tmp_path / "copy"  # the same files elsewhere (an upload is stored so): the same dataset, runs done
    copy.mkdir()
    for name in ("train.jsonl", "dev.jsonl"):
        shutil.copy(m4_dir / name, copy / name)
    assert main([*again[:1], *data_args(copy), *again[1 + len(data_args(m4_dir)):]]) == 0
    out = capsys.readouterr()
    same = (m4_dir / "train.jsonl").resolve()  # as runs store it
    assert f"note: train.jsonl has the same bytes as {same}, which runs here read" in out.err
    assert last_json(out.out)["queued"] == 0


def test_cancel_takes_several_runs_and_refuses_ended_ones(tiny_backbone, capsys, studio_home):
    reg = Registry(studio_home)
    config = resolve(TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=12, test_per_class=3)),
                                 backbone=str(tiny_backbone), method="finetune", frozen=True, steps=2), studio_home)
    blocker, first, second = (reg.create(config) for _ in range(3))
    reg.claim(blocker)  # holds the CPU's one slot, so the queued runs wait
    assert main(["cancel", first, second]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"run_id": first, "status": "cancelled"}, {"run_id": second, "status": "cancelled"}]
    assert main(["cancel", blocker, first]) == 2
    assert f"run {first} is already cancelled; nothing was cancelled" in capsys.readouterr().err
    assert reg.get(blocker).status == "starting"  # the refused call cancelled none of its runs
    assert main(["cancel", blocker]) == 0


def test_a_count_per_class_beyond_what_a_class_holds_is_said_before_the_run(m4_dir, tiny_backbone, capsys, studio_home):
    """The sampler labels such a class whole; the user hears so on stderr before the run, not after it."""
    code = main(["train", *data_args(m4_dir), "--method", "features-lr", "--per-class", "1000", "--frozen",
                 "--backbone", str(tiny_backbone)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "warning: 1,000 per class asks for more than any class holds in the train pool (human " in out.err
    warning = next(line for line in out.err.splitlines() if line.startswith("warning:"))
    assert "bloomz" not in warning  # a class the sample lacks asks for nothing
    run = Registry(studio_home).get(last_json(out.out)["run_id"])
    assert run.metrics["labeled"] == load_data(run.config, studio_home).class_counts()["train"].sum()
