"""A studio home written before the restructure (tests/fixtures/home-v1, made by that code) opens with
today's code: its runs list, compare and predict as they did then."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from core.cli import main
from core.compare import METRICS, confusion_frame, paired_test, runs_frame, summarize
from core.runs import Registry
from core.runs.execute import execute_run
from core.train import TrainConfig, classify, method_for, resolve
from tests.helpers import DATA, make_tiny_backbone, open_page

FIXTURE = Path(__file__).parent / "fixtures" / "home-v1"
TINY = Path("/tmp/gan-bert-studio-v1-tiny-bert")  # where the old code's adapter run found its backbone


@pytest.fixture
def old_home(studio_home: Path) -> Path:
    shutil.copytree(FIXTURE, studio_home)
    if not (TINY / "config.json").exists():
        make_tiny_backbone(TINY)  # the same seeded weights the old run trained on
    return studio_home


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((FIXTURE / "expected.json").read_text())


def test_old_runs_list_as_before(old_home, expected, capsys, studio_home):
    assert main(["runs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for old in expected["runs"]:
        new = next(r for r in rows if r["run_id"] == old["run_id"])
        assert {k: new[k] for k in old} == old  # every old field, unchanged
    registry = Registry(studio_home)
    assert all(r.rows is None for r in registry.list())  # the rows column, added in place, empty for old runs
    assert all(r.estimate is None for r in registry.list())  # so is the launch estimate's
    assert {r.kind for r in registry.list()} == {"train"} and registry.list(kind="adapt") == []  # every one trained
    assert all(r.config.validation == "carve:0.1" and r.labels_read is not None for r in registry.list(
        statuses=("done",)))  # read as the carve they ran with, their validation rows counted
    # each old epoch row is an evaluation now: the same figures, under the evaluation's number, with no step
    assert {r.id: [{"epoch": e.pop("evaluation"), **{k: v for k, v in e.items() if k != "step"}}
                   for e in registry.evaluations(r.id)] for r in registry.list()} == expected["epochs"]


def test_old_runs_compare_as_before(old_home, expected, studio_home):
    registry = Registry(studio_home)
    frame = runs_frame(registry.list())
    assert frame["method"].tolist() == expected["frame_methods"]
    assert frame["amount"].tolist()[:4] == ["5/class", "20%", "20%", "5/class"]
    assert (frame["dataset"] == "built-in (synthetic)").all()
    summary = summarize(frame, "accuracy", METRICS)
    assert set(summary.groups["method"]) == {"Trained head on frozen features",
                                             "GAN-BERT G1 (noise) on frozen features",
                                             "GAN-BERT G2 (bag of words) on frozen features", "BERT + adapters"}
    done = [r.id for r in registry.list(statuses=("done",))]
    test = paired_test(registry, done[0], done[1])  # their predictions files still read, text by text
    a, b = (registry.folder(i).predictions() for i in done[:2])
    right_a, right_b = a["pred"] == a["label"], b["pred"] == b["label"]
    assert (test.only_a, test.only_b) == (int((right_a & ~right_b).sum()), int((~right_a & right_b).sum()))
    assert test.only_a + test.only_b + test.both + test.neither == len(a)
    # their confusion matrices name no classes: per_class, kept in label-id order, names the rows
    for run in registry.list(statuses=("done",)):
        tables = registry.tables(run.id)  # kept in its metrics then: moved apart once, as the registry opened
        matrix, per_class = tables["confusion"], tables["per_class"]
        cells = confusion_frame(tables)
        assert "classes" not in tables and "confusion" not in run.metrics["test"]
        assert cells.groupby("true", sort=False)["value"].sum().to_dict() == {
            c: sum(row) for c, row in zip(per_class, matrix) if sum(row) or c in set(cells["predicted"])}


def test_old_checkpoints_predict_as_before(old_home, expected, studio_home):
    registry = Registry(studio_home)
    for run_id, old in expected["predict"].items():
        new = classify(registry.folder(run_id).load_model(studio_home), [expected["text"]])[0].to_json()
        assert new["label"] == old["label"], run_id
        # the old code renormalised k of k+1 float32 probabilities; today's softmax over the k real logits is
        # the same number up to that float32 rounding (1.5e-5 seen beside a large fake probability)
        assert new["probabilities"] == pytest.approx(old["probabilities"], rel=1e-4, abs=1e-5), run_id
        assert (new["fake_probability"] is None) == (old["fake_probability"] is None)
        if old["fake_probability"] is not None:
            assert new["fake_probability"] == pytest.approx(old["fake_probability"], abs=1e-5)


def test_old_home_opens_on_the_pages(old_home):
    at = open_page("pages/compare.py")
    assert at.dataframe(key="cmp_table").value["amount"].tolist()[:2] == ["5/class", "20%"]
    open_page("pages/classify.py")
    open_page("pages/train.py")


def test_a_run_an_older_version_queued_resolves_as_it_starts(tiny_backbone, studio_home):
    # queued as an older version stored it: learning rate and batch left to the method, max length and
    # precision `auto`, the data path as typed
    old = TrainConfig(data=DATA, backbone=str(tiny_backbone), method="finetune", frozen=True, steps=2, fraction=0.5)
    registry = Registry(studio_home)
    run_id = registry.create(old)
    assert registry.claim(run_id)
    assert execute_run(registry, run_id) == "done"
    stored = registry.get(run_id).config
    assert stored == resolve(old, studio_home) and (stored.lr, stored.batch_size) == (3e-3, 64)  # what it ran with
    assert TrainConfig.from_json((registry.folder(run_id).path / "config.json").read_text()) == stored


def test_old_ganbert_runs_read_as_repeating_their_labels_by_the_authors_rule(old_home, studio_home):
    """A GAN-BERT run stored before the floor on batches without labels has no such setting: it ran the authors'
    int(log2(1/share)) copies, which is what its config says and what its epoch is counted by; launched today the
    same settings take the studio preset's floor."""
    runs = [r for r in Registry(studio_home).list() if r.config.method == "ganbert"]
    assert len(runs) == 2 and all(r.config.params.batches_without_labels is None for r in runs)
    for run in runs:
        method = method_for(run.config)
        assert method.copies(run.config, 10, 10990) == 10  # the authors' rule at 0.09%; a floor would add copies
        assert method.settle(run.config).params.batches_without_labels == (
            None if run.config.params.gan_preset in ("tf", "notebook") else 0.05)


def test_macro_f1_averages_over_the_classes_the_test_texts_hold_and_old_runs_are_rescored(tiny_backbone,
                                                                                           studio_home):
    """Issue 84, item 1: macro-F1 had averaged over the classes in the truth or the predictions, so a run that
    predicted a class no test text holds (TREC fine: 15 of its 44 classes) changed its own denominator. It averages
    over the test set's classes now, and a run stored with the old figure reads the new one, from its confusion."""
    from sklearn.metrics import f1_score

    from core.train.metrics import classification_metrics
    from tests.helpers import cfg

    truth, guessed, stayed = [0, 0, 1, 1], [0, 2, 1, 1], [0, 1, 1, 1]
    labels = ("a", "b", "c")
    wide, narrow = classification_metrics(truth, guessed, labels), classification_metrics(truth, stayed, labels)
    assert wide["macro_f1"] == pytest.approx((2 / 3 + 1) / 2) and wide["macro_f1_classes"] == 2
    assert narrow["macro_f1"] == pytest.approx((2 / 3 + 0.8) / 2)
    assert f1_score(truth, guessed, average="macro") == pytest.approx(5 / 9)  # what was stored before
    reg = Registry(studio_home)
    run_id = reg.create(cfg(tiny_backbone))
    reg.claim(run_id)
    reg.mark_running(run_id, 0, "cpu")
    stored = {"test": {**wide, "macro_f1": 5 / 9}}
    reg.finish(run_id, "done", "finished")
    with sqlite3.connect(reg.path) as db:  # as a studio of then stored it: its tables in its metrics
        db.execute("UPDATE runs SET metrics = ?, tables = NULL WHERE id = ?", (json.dumps(stored), run_id))
        db.execute("PRAGMA user_version = 3")  # before the migration that rescores
    reg = Registry(studio_home)
    assert reg.migrated[0] == "4: test macro-F1 rescored over the test set's classes; per-class tables kept apart"
    assert reg.get(run_id).metrics["test"]["macro_f1"] == pytest.approx(5 / 6)
    assert reg.get(run_id).summary["macro_f1"] == pytest.approx(5 / 6)
    assert reg.tables(run_id)["confusion"] == wide["confusion"] and "confusion" not in reg.get(run_id).metrics["test"]


# ---------------------------------------------------------------- a home written by main before issue 97

@pytest.fixture(scope="module")
def expected_v2() -> dict:
    return json.loads((Path(__file__).parent / "fixtures" / "home-v2" / "expected.json").read_text())


def test_a_home_of_before_the_numbered_migrations_is_migrated_once_and_says_so(home_v2, expected_v2, caplog,
                                                                               studio_home):
    from core.runs.registry_store import MIGRATIONS, VERSION

    with caplog.at_level("WARNING"):
        registry = Registry(studio_home)
    assert registry.migrated == [f"{m.number}: {m.says}" for m in MIGRATIONS if m.says]
    assert [r.getMessage().rsplit("migration ", 1)[1] for r in caplog.records] == registry.migrated
    with sqlite3.connect(registry.path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == VERSION
    caplog.clear()
    assert Registry(studio_home).migrated == [] and not caplog.records  # once


def test_a_home_of_before_lists_compares_and_predicts_as_it_did(home_v2, expected_v2, capsys, studio_home):
    assert main(["runs", "--json"]) == 0
    rows = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    for old in expected_v2["runs"]:
        assert {k: rows[old["run_id"]][k] for k in ("status", "method", "accuracy", "macro_f1", "mcc")} == {
            k: old[k] for k in ("status", "method", "accuracy", "macro_f1", "mcc")}, old["run_id"]
    registry = Registry(studio_home)
    assert len(runs_frame(registry.list())) == len(expected_v2["frame_methods"])
    for run_id, tables in expected_v2["tables"].items():
        assert registry.tables(run_id) == tables, run_id
    for run_id, old in expected_v2["predict"].items():
        new = classify(registry.folder(run_id).load_model(studio_home), [expected_v2["text"]])[0].to_json()
        assert new["label"] == old["label"], run_id
        assert new["probabilities"] == pytest.approx(old["probabilities"], rel=1e-5, abs=1e-6), run_id


def test_a_process_token_does_not_move_with_the_clock(monkeypatch):
    """A worker's identity is its start since boot, with the boot's id: psutil's start time adds the boot time as
    the wall clock has it, and a step of the clock (NTP, a resumed laptop) had made every live worker read as gone
    and a token recorded by the studio before read as another process."""
    import os
    import time

    import psutil

    from core.runs.processes import is_process, process_token

    token = process_token(os.getpid())
    if token is None:
        pytest.skip("no /proc here: the system cannot tell a process's start since boot")
    stepped = psutil.boot_time() + 3600
    monkeypatch.setattr(psutil, "boot_time", lambda: stepped)  # the wall clock stepped an hour, as psutil reads it
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: stepped)
    monkeypatch.setattr(time, "time", lambda: stepped + 100.0)
    assert process_token(os.getpid()) == token and is_process(os.getpid(), token)
    boot, ticks = token.rsplit(":", 1)
    assert not is_process(os.getpid(), f"{boot}:{int(ticks) + 1}")  # another start: a pid reused


def test_migration_6_leaves_the_rows_it_cannot_read_as_they_are(studio_home):
    """A registry row edited by hand must not stop the home from opening: migration 6 skips what it cannot count."""
    Registry(studio_home)
    odd = {"r1": ('{"data": "x", "validation": "carve:0.1"}', '{"labeled": 5}'),
           "r2": ('{"data": {"builtin": {"train_per_class": 10}}, "validation": "carve:inf"}', '{"labeled": 5}'),
           "r3": ('{"data": {"builtin": {"train_per_class": 10}}}', '{"labeled": "five"}'),
           "r4": ('{"data": {"builtin": {"train_per_class": 10}}}', '[1, 2]'),
           "r5": ("not json", '{"labeled": 5}'),
           "r6": ('{"data": {"builtin": {"train_per_class": 10}}}', '{"labeled": 5}')}
    with sqlite3.connect(studio_home / "studio.db") as db:
        for run_id, (config, metrics) in odd.items():
            db.execute("INSERT INTO runs (id, created, status, config, label, metrics, deleted, kind) "
                       "VALUES (?, 0, 'done', ?, '', ?, 0, 'train')", (run_id, config, metrics))
        db.execute("PRAGMA user_version = 5")
    assert Registry(studio_home).migrated[0] == (
        "6: each finished run's labels read, validation included, kept in its record")
    with sqlite3.connect(studio_home / "studio.db") as db:
        after = dict(db.execute("SELECT id, metrics FROM runs"))
    assert {k: after[k] for k in ("r1", "r2", "r4", "r5")} == {k: odd[k][1] for k in ("r1", "r2", "r4", "r5")}
    assert json.loads(after["r3"]) == {"labeled": "five", "val_rows": 6}  # its count, not a sum with a word
    assert json.loads(after["r6"]) == {"labeled": 5, "val_rows": 6, "labels_read": 11}  # carve:0.1 of 10 a class


def test_a_home_at_a_number_that_changed_nothing_opens_as_it_is(studio_home):
    """Homes were written at version 4 while 3 converted process tokens; 3 changes nothing now, and such a home
    opens without a word (the GPU check's kept home had been refused as a newer studio's)."""
    from core.runs.registry_store import VERSION

    Registry(studio_home)
    with sqlite3.connect(studio_home / "studio.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == VERSION == 7
        db.execute("PRAGMA user_version = 2")
    assert Registry(studio_home).migrated == [
        "4: test macro-F1 rescored over the test set's classes; per-class tables kept apart",
        "5: each run's config keeps its own method's settings, not every method's",
        "6: each finished run's labels read, validation included, kept in its record",
        "7: a run that named no backbone names the one it ran: minilm-l6"]


def test_migration_7_names_the_backbone_a_run_that_named_none_ran(studio_home):
    """A run that named no backbone ran MiniLM: its row says so by name, once, and the encoding speed kept for it
    is keyed by the name too; a run that named one, an adaptation, and rows that cannot be read are left as they
    were. A run folder's config of before reads the same (`TrainConfig.from_json`)."""
    from core.runs.encoding_speed import SPEEDS
    from core.train import TrainConfig

    Registry(studio_home)
    rows = {"none": ('{"backbone": null, "method": "finetune"}', "train"),
            "empty": ('{"backbone": "", "method": "finetune"}', "train"),
            "absent": ('{"method": "finetune"}', "train"),
            "smollm2": ('{"backbone": "smollm2-135m", "method": "finetune"}', "train"),
            "adapt": ('{"backbone": null, "epochs": 1}', "adapt"),
            "odd": ('[1, 2]', "train"), "broken": ("not json", "train")}
    speeds = {"|mean|fp32|cpu|torch": 900.0, "smollm2-135m|layer20|bf16|cpu|torch": 120.0}
    with sqlite3.connect(studio_home / "studio.db") as db:
        for run_id, (config, kind) in rows.items():
            db.execute("INSERT INTO runs (id, created, status, config, label, deleted, kind) "
                       "VALUES (?, 0, 'done', ?, '', 0, ?)", (run_id, config, kind))
        db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (SPEEDS, json.dumps(speeds)))
        db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES ('train_form', ?)",
                   (json.dumps({"tr_backbone_pick": "", "tr_seeds": "0"}),))
        db.execute("PRAGMA user_version = 6")
    assert Registry(studio_home).migrated == ["7: a run that named no backbone names the one it ran: minilm-l6"]
    with sqlite3.connect(studio_home / "studio.db") as db:
        after = {k: v for k, v in db.execute("SELECT id, config FROM runs")}
        kept = json.loads(db.execute("SELECT value FROM settings WHERE key = ?", (SPEEDS,)).fetchone()[0])
        form = json.loads(db.execute("SELECT value FROM settings WHERE key = 'train_form'").fetchone()[0])
    for run_id in ("none", "empty", "absent"):
        assert json.loads(after[run_id]) == {"backbone": "minilm-l6", "method": "finetune"}
    assert {k: after[k] for k in ("smollm2", "adapt", "odd", "broken")} == {
        k: rows[k][0] for k in ("smollm2", "adapt", "odd", "broken")}
    assert kept == {"minilm-l6|mean|fp32|cpu|torch": 900.0, "smollm2-135m|layer20|bf16|cpu|torch": 120.0}
    assert form == {"tr_backbone_pick": "minilm-l6", "tr_seeds": "0"}  # the Train form kept had picked the default
    assert Registry(studio_home).migrated == []  # once
    stored = json.loads(TrainConfig().to_json()) | {"backbone": None}
    assert TrainConfig.from_json(json.dumps(stored)).backbone == "minilm-l6" == TrainConfig(backbone="").backbone


def test_the_labels_a_first_registrys_runs_read_are_written_in_once_not_worked_out_at_each_read(old_home,
                                                                                                  studio_home):
    """The first registries kept no count of a run's validation rows: every read worked it out again from the carve
    in its config. Migration 6 writes it, and the labels read, into the run's record, once."""
    with sqlite3.connect(old_home / "studio.db") as db:
        before = {i: (json.loads(c), json.loads(m)) for i, c, m in db.execute(
            "SELECT id, config, metrics FROM runs WHERE metrics IS NOT NULL")}
    assert before and all("val_rows" not in m and "labels_read" not in m for _, m in before.values())
    registry = Registry(studio_home)
    assert registry.migrated[-2].startswith("6: ")
    with sqlite3.connect(old_home / "studio.db") as db:
        after = {i: json.loads(m) for i, m in db.execute("SELECT id, metrics FROM runs WHERE metrics IS NOT NULL")}
    for run_id, (config, metrics) in before.items():
        carved = 6 * round(0.1 * config["data"]["builtin"]["train_per_class"])  # the carve:0.1 they ran with
        assert (after[run_id]["val_rows"], after[run_id]["labels_read"]) == (carved, metrics["labeled"] + carved)
        kept = {k: v for k, v in after[run_id].items() if k not in ("test", "val_rows", "labels_read")}
        assert kept == {k: v for k, v in metrics.items() if k != "test"}, run_id  # its test tables: migration 4
        run = registry.get(run_id)
        assert (run.val_rows, run.labels_read) == (carved, metrics["labeled"] + carved)
    assert Registry(studio_home).migrated == []


def test_a_run_keeps_its_own_methods_settings_once_migrated(home_v2, expected_v2, capsys, studio_home):
    """A config stored before each method had its own settings held every method's (a fine-tuning run's
    `generator`); migration 5 keeps its method's, and the run reads, lists and is named as it was."""
    with sqlite3.connect(home_v2 / "studio.db") as db:
        before = {i: json.loads(c) for i, c in db.execute("SELECT id, config FROM runs WHERE kind = 'train'")}
    assert all("generator" in c and "lora_rank" in c for c in before.values())  # every method's, as written
    registry = Registry(studio_home)
    with sqlite3.connect(home_v2 / "studio.db") as db:
        after = {i: json.loads(c) for i, c in db.execute("SELECT id, config FROM runs WHERE kind = 'train'")}
    params = {"finetune": {"finetune_preset"}, "ganbert": {"generator", "gan_preset", "adversarial", "noise",
                                                            "noise_dim", "batches_without_labels"},
              "lora": {"lora_rank", "lora_alpha"}, "tfidf-lr": {"lr_c"}, "features-lr": {"lr_c"}}
    every = set().union(*params.values(), {"adapter_kind", "reduction_factor", "setfit_features",
                                           "setfit_iterations"})
    for run_id, config in after.items():
        method = before[run_id]["method"]
        assert set(config) & every == params[method], run_id
        assert {k: v for k, v in before[run_id].items() if k not in every - params[method]} == config, run_id
        run = registry.get(run_id)
        assert set(run.config.params.names()) == params[method], run_id
        assert run.config.to_json() == TrainConfig.from_json(json.dumps(before[run_id])).to_json()
    assert main(["runs", "--json"]) == 0
    rows = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert {old["run_id"]: rows[old["run_id"]]["method"] for old in expected_v2["runs"]} == {
        old["run_id"]: old["method"] for old in expected_v2["runs"]}


def test_a_registry_of_a_newer_studio_is_refused_and_left_as_it_is(studio_home):
    from core.runs.registry_store import VERSION, NewerRegistry

    Registry(studio_home)
    path = studio_home / "studio.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {VERSION + 1}")
    with pytest.raises(NewerRegistry, match="newer studio"):
        Registry(studio_home)
    assert main(["runs"]) == 2
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == VERSION + 1


def test_the_app_says_once_that_it_upgraded_a_home(home_v2):
    from core.runs.registry_store import MIGRATIONS

    at = open_page("pages/home.py")
    assert [t.value for t in at.toast] == ["The studio home was upgraded for this version (migration "
                                           + "; ".join(f"{m.number}: {m.says}" for m in MIGRATIONS if m.says) + ")."]
    assert not at.switch_page("pages/compare.py").run().toast  # said on the session's first run alone
    assert not open_page("pages/home.py").toast  # a second session: nothing left to migrate
