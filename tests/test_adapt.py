"""Adapting a backbone to a dataset's texts (task-adaptive pretraining): its masked-LM loss falls, the result is a
backbone every method can use, it reads validation or test texts only when asked, it runs in the background like a
training run, and Compare pairs runs on it with runs on its base."""

from __future__ import annotations

import json

import pytest

from core import compare
from core.backbone import adapted_backbones, backbone_label, resolve_backbone
from core.cli import main
from core.data import CorpusConfig, DataSpec
from core.runs import Registry, RunFolder, Status, cancel_all, enqueue
from core.runs.execute import train_into
from core.train import TrainConfig, classify, resolve
from core.train.adaptation import AdaptConfig, adapted_folder
from core.train.feature_store import store_key
from core.train.pretrain import adapt, texts_for
from tests.helpers import hand_runs_frame, wait_for, write_jsonl

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))


def tiny_adapt(tiny_backbone, **kw) -> AdaptConfig:
    return AdaptConfig(**{"data": DATA, "backbone": str(tiny_backbone), "max_len": 48, "batch_size": 16,
                          "lr": 1e-3, "epochs": 3, **kw})


def test_adapting_lowers_the_masked_lm_loss_and_gives_a_backbone_every_method_can_use(tiny_backbone, tmp_path,
                                                                                       studio_home):
    config = tiny_adapt(tiny_backbone)
    out = adapted_folder(config, studio_home)
    record = adapt(config, out, studio_home)
    assert record["mlm_loss_after"] < record["mlm_loss_before"] - 0.1  # measured on one fixed masking
    assert record["texts"] == {"train": 180} and not record["reads_test"] and record["steps"] == 36
    assert {"model.safetensors", "config.json", "tokenizer.json", "adapted.json"} <= {p.name for p in out.iterdir()}
    assert not list(out.glob("*.bin")) and [p for p, _ in adapted_backbones(studio_home)] == [out]
    backbone = resolve_backbone(str(out), home=studio_home)
    assert backbone.adapted["base"]["folder"] == str(tiny_backbone)
    assert backbone_label(str(out)) == (f"{tiny_backbone} adapted to built-in (synthetic) (train texts, 180; 3 epochs "
                                        "at 0.001)")  # two adaptations to the same texts told apart
    base = resolve_backbone(str(tiny_backbone), home=studio_home)
    assert store_key(backbone, 48, "layers", False) != store_key(base, 48, "layers", False)  # features apart

    run = resolve(TrainConfig(data=DATA, backbone=str(out), method="finetune", frozen=True, fraction=None,
                              per_class=5, steps=5, evaluations=1, max_len=48), studio_home)
    result = train_into(run, RunFolder(tmp_path / "run"), studio_home, lambda e: None, lambda: False)
    assert result["test"]["n"] == 60
    predicted = classify(RunFolder(tmp_path / "run").load_model(studio_home), ["a text about gardens"])[0]
    assert abs(sum(predicted.probabilities.values()) - 1) < 1e-5

    # Compare pairs the two backbones by seed and says what adapting adds
    runs = [(TrainConfig(data=DATA, backbone=b, method="features-lr", frozen=True, fraction=0.1, seed=s),
             0.5 + s / 100 + (0.05 if b == str(out) else 0)) for b in (str(tiny_backbone), str(out)) for s in (0, 1, 2)]
    frame = hand_runs_frame(runs)
    frame["backbone"] = [backbone_label(c.backbone) for c, _ in runs]
    summary = compare.summarize(frame, "accuracy", compare.METRICS)
    assert len(summary.adapted) == 1 and summary.adapted[0].difference.mean == pytest.approx(0.05)
    assert "adapted to built-in (synthetic)" in summary.adapted[0].a


def test_an_adaptation_reads_validation_or_test_texts_only_when_asked(tmp_path, studio_home):
    write_jsonl(tmp_path / "train.jsonl", [{"text": f"train text {i}", "label": i % 2} for i in range(8)])
    write_jsonl(tmp_path / "dev.jsonl", [{"text": f"dev text {i}", "label": i % 2} for i in range(4)])
    write_jsonl(tmp_path / "test.jsonl", [{"text": f"test text {i}", "label": i % 2} for i in range(4)])
    data = DataSpec(train=str(tmp_path))
    texts, counts = texts_for(AdaptConfig(data=data), studio_home)
    assert counts == {"train": 8} and not any(t.startswith(("dev", "test")) for t in texts)
    texts, counts = texts_for(AdaptConfig(data=data, splits=("train", "test")), studio_home)
    assert counts == {"train": 8, "test": 4} and sum(t.startswith("test") for t in texts) == 4
    with pytest.raises(Exception, match="reads train's texts"):
        AdaptConfig(data=data, splits=("test",))


@pytest.mark.slow
def test_an_adaptation_runs_in_the_background_and_a_second_one_cancels(tiny_backbone, studio_home):
    registry = Registry(studio_home)
    first, = enqueue(registry, [tiny_adapt(tiny_backbone, max_steps=3)])
    done = wait_for(lambda: registry.get(first).status == Status.DONE and registry.get(first), timeout=180,
                    what="the adaptation to finish")
    assert done.kind == "adapt" and done.metrics["backbone"] == str(adapted_folder(done.config, studio_home))
    assert [r.id for r in registry.list(kind="adapt")] == [first] and registry.list() == []  # not a training run
    assert "done: the adapted backbone is" in registry.folder(first).tail_log()
    second, = enqueue(registry, [tiny_adapt(tiny_backbone, epochs=200, seed=1)])
    wait_for(lambda: registry.get(second).status == Status.RUNNING, timeout=120, what="the second to start")
    assert cancel_all(registry, [second])[second] == Status.CANCELLED
    assert not (adapted_folder(registry.get(second).config, studio_home) / "adapted.json").exists()


def test_adapt_from_the_cli_ends_with_the_backbone_and_its_cpu_time(tiny_backbone, studio_home, capsys):
    argv = ["adapt", "--train", "builtin", "--backbone", str(tiny_backbone), "--max-steps", "2", "--max-len", "32"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["status"] == "done" and out["cpu_seconds"] > 0
    assert resolve_backbone(out["backbone"], home=studio_home).adapted
    assert main(argv) == 0  # the same adaptation again: found, not made twice
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])["reused"] and "already adapted" in captured.err
    assert main(["adapt", "--train", "builtin", "--epochs", "0"]) == 2
    assert "epochs must be in [1, 1000]" in capsys.readouterr().err


def test_one_adaptation_of_the_same_texts_is_one_backbone_however_the_data_was_named(tmp_path, tiny_backbone,
                                                                                     studio_home):
    """The Train page names L2R by its folder, the CLI by its train file: the same texts, settings and base give
    one backbone, made once; other texts (or cleaning them) another."""
    from core.data import CleaningConfig
    from core.train.adaptation import pinned

    write_jsonl(tmp_path / "train.jsonl", [{"text": f"train text {i}", "label": i % 2} for i in range(8)])
    write_jsonl(tmp_path / "test.jsonl", [{"text": f"test text {i}", "label": i % 2} for i in range(4)])
    by_folder = pinned(AdaptConfig(data=DataSpec(train=str(tmp_path)), backbone=str(tiny_backbone)), studio_home)
    by_file = pinned(AdaptConfig(data=DataSpec(train=str(tmp_path / "train.jsonl")), backbone=str(tiny_backbone)),
                     studio_home)
    assert by_folder.texts == by_file.texts and by_folder.folder_name == by_file.folder_name
    cleaned = pinned(by_file.with_(cleaning=CleaningConfig(lowercase=True), texts=None), studio_home)
    assert cleaned.folder_name == by_file.folder_name  # lowercase changes none of these texts
    other = pinned(by_file.with_(cleaning=CleaningConfig(strip_special=True), texts=None), studio_home)
    assert other.texts != by_file.texts and other.folder_name != by_file.folder_name
    assert by_file.with_(epochs=2).folder_name != by_file.folder_name
    # an upload read by its own label column lost that column from its name; its adapted backbone's folder keeps it
    from core.data import ColumnMapping
    from core.train.adaptation import slug

    upload = AdaptConfig(data=DataSpec(train=str(tmp_path / "small_train.csv"), mapping=ColumnMapping(label="author")),
                         backbone=str(tiny_backbone))
    assert upload.data.short_name == "small_train.csv"
    assert f"-tapt-{slug('small_train.csv · author')}-" in upload.folder_name


def test_an_adaptations_time_comes_from_the_ones_made_here_else_the_laptop_figure():
    """The walk's Adapt section said "34,263 texts through the encoder" and nothing of how long they take."""
    from core.train.adaptation import FALLBACK_MLM_SPEED, adapt_seconds

    config = AdaptConfig(epochs=2, max_len=256)
    assert adapt_seconds(config, 1000, []) == pytest.approx(2000 / (FALLBACK_MLM_SPEED / 2))
    made = [{"steps": 100, "batch_size": 32, "seconds": 80.0, "max_len": 128}]  # 40 texts/s at 128 tokens here
    assert adapt_seconds(config, 1000, made) == pytest.approx(2000 / 20)
    assert adapt_seconds(config.with_(max_steps=10), 1000, made) == pytest.approx(320 / 20)  # stops at 10 steps


def test_the_bench_makes_a_recorded_adaptation_again_in_a_home_that_lacks_it(tiny_backbone, studio_home, tmp_path,
                                                                             monkeypatch):
    """A fresh bench home has the records of an adaptation, not its weights: the report still reads it, and a run
    about to train on it gets it made again (it had stopped with "backbone folder not found")."""
    import shutil

    import bench.studies.tapt
    monkeypatch.setattr(bench.studies.tapt, "ADAPT_RECORDS", tmp_path / "adapt.jsonl")
    registry, config = Registry(studio_home), tiny_adapt(tiny_backbone, epochs=1)
    out, record = bench.studies.tapt.adapted(registry, config, train=True)
    assert (out / "adapted.json").is_file() and list(bench.studies.tapt.recorded_adaptations()) == [out.name]
    shutil.rmtree(out)  # another session's home: the records travel, the weights do not

    assert bench.studies.tapt.adapted(registry, config, train=False) == (out, {"folder": out.name, **record})
    assert bench.studies.tapt.on_disk(registry, config) == out
    assert (out / "model.safetensors").is_file() and resolve_backbone(str(out), home=studio_home).adapted
    assert len((tmp_path / "adapt.jsonl").read_text().splitlines()) == 1  # the first making stays the record
