"""The real-sample benches reuse finished runs (bench/sample_runs.py): a run stored before rates were written
into configs must match the setting it ran at, not today's default, or a table mixes two rates in one row;
a run recorded in one home is restored into another instead of trained again; and records made at another
precision than this machine's are named, not silently missing from a report."""

from __future__ import annotations

import argparse
import json

import pytest

import bench.sample_runs
from bench.sample_runs import (
    FINETUNE_LR_UNTIL_MEASURED,
    RECORDS,
    as_ran,
    open_home,
    other_precisions,
    recorded,
    run_once,
    sample_spec,
    twin_gaps,
)
from core.runs import Registry, Status
from core.train import TrainConfig, method_for, resolve
from tests.helpers import need_shared, running_on_a_dead_process


def test_a_finetuning_run_stored_without_its_rate_ran_at_the_rate_of_its_day():
    stored = TrainConfig(method="finetune")  # the encoder trains; rate, batch and attention dropout left
    today = method_for(stored).settle(stored)
    assert today.lr != FINETUNE_LR_UNTIL_MEASURED and today.attention_dropout == 0.0  # the defaults have moved since
    assert as_ran(stored) == today.with_(lr=FINETUNE_LR_UNTIL_MEASURED, attention_dropout=0.1)  # MiniLM's own


def test_other_stored_runs_take_the_defaults_they_ran_at_and_a_written_rate_stays():
    for stored in (TrainConfig(method="finetune", frozen=True), TrainConfig(method="adapter"),
                   TrainConfig.of(method="ganbert", gan_preset="tf")):
        assert as_ran(stored) == method_for(stored).settle(stored)
    # GAN-BERT's studio preset, stored before its floor on batches without labels (and its attention dropout) were
    # written in, repeated its labeled rows by the authors' rule alone and ran at the backbone's attention dropout
    frozen = TrainConfig(method="ganbert", frozen=True)
    assert as_ran(frozen) == method_for(frozen).settle(frozen).with_(batches_without_labels=None)
    assert method_for(frozen).settle(frozen).params.batches_without_labels == 0.05
    assert as_ran(TrainConfig(method="ganbert")) == method_for(TrainConfig(method="ganbert")).settle(
        TrainConfig(method="ganbert")).with_(attention_dropout=0.1, batches_without_labels=None)
    assert as_ran(TrainConfig.of(method="ganbert", batches_without_labels=0.05)).params.batches_without_labels == 0.05
    assert as_ran(TrainConfig(method="ganbert", attention_dropout=0.0)).attention_dropout == 0.0
    assert as_ran(TrainConfig(method="finetune", lr=1e-4)).lr == 1e-4
    written_today = method_for(TrainConfig(method="finetune")).settle(TrainConfig(method="finetune"))
    assert as_ran(written_today).lr == written_today.lr == 1e-4


def test_a_finished_run_is_recorded_once_and_restored_into_a_home_that_never_ran_it(tmp_path, m4_dir):
    records = tmp_path / "records.jsonl"
    config = TrainConfig(data=sample_spec(), method="tfidf-lr", fraction=None, per_class=5, seed=3)
    trained = run_once(Registry(tmp_path / "first"), config, records=records)
    assert trained.status == "done"
    again = run_once(Registry(tmp_path / "first"), config, records=records)  # found in the registry
    assert again.id == trained.id and len(recorded(records)) == 1
    entry = recorded(records)[0]
    assert entry["config"]["data"]["train"] == "train.jsonl"  # the sample's files by name, not this checkout's path

    fresh = Registry(tmp_path / "second")
    assert run_once(fresh, config.with_(seed=4), train=False, records=records) is None  # another seed: not recorded
    restored = run_once(fresh, config, train=False, records=records)
    assert restored.status == "done" and restored.id != trained.id
    assert restored.metrics == trained.metrics and restored.config == trained.config
    assert f"run {trained.id}" in restored.message
    assert [r.id for r in fresh.list(statuses=("done",))] == [restored.id] and len(recorded(records)) == 1


def test_a_cancelled_run_stops_the_bench_and_is_not_recorded(tmp_path, m4_dir, monkeypatch):
    """A SIGTERM to the bench cancelled the run it was on, and the bench went on to the next one."""
    def stopped_by_sigterm(registry: Registry, run_id: str) -> str:  # as execute_run ends a run on SIGTERM
        registry.mark_running(run_id, 1, "cpu")
        registry.finish(run_id, Status.CANCELLED, "cancelled by request", None)
        return Status.CANCELLED
    monkeypatch.setattr(bench.sample_runs, "execute_run", stopped_by_sigterm)
    records = tmp_path / "records.jsonl"
    config = TrainConfig(data=sample_spec(), method="tfidf-lr", fraction=None, per_class=5, seed=3)
    with pytest.raises(SystemExit, match="was cancelled .* resumes from the records"):
        run_once(Registry(tmp_path / "home"), config, records=records)
    assert not recorded(records)


def test_a_run_left_running_by_a_bench_that_died_reads_interrupted_when_a_bench_opens_the_home(
        tmp_path, m4_dir, capsys):
    """A machine stopped under a bench left its run "running" at 7% in the bench's home, and nothing ended it."""
    config = TrainConfig(data=sample_spec(), method="tfidf-lr", fraction=None, per_class=5, seed=3)
    run_id = running_on_a_dead_process(Registry(tmp_path), config)
    opened = open_home(argparse.Namespace(home=str(tmp_path), precision="auto", any_precision=False))
    assert opened is not None and opened[1].get(run_id).status == Status.INTERRUPTED
    assert f"run {run_id} was left running by a process that is gone" in capsys.readouterr().err


def test_records_at_another_precision_are_counted_and_encoder_free_runs_have_none():
    records = [{"config": {"precision": p}} for p in ("bf16", "bf16", "fp32", "auto")]  # auto: TF-IDF + LR's
    assert other_precisions("fp32", records) == {"bf16": 2}
    assert other_precisions("bf16", records) == {"fp32": 1}


def test_a_precision_asked_of_a_method_without_an_encoder_resolves_away_so_its_runs_match_on_any_machine(studio_home):
    asked = [resolve(TrainConfig(method="tfidf-lr", precision=p), studio_home) for p in ("auto", "fp32", "bf16")]
    assert {c.precision for c in asked} == {"auto"} and asked[0] == asked[1] == asked[2]
    assert resolve(TrainConfig(method="finetune", frozen=True, precision="bf16"), studio_home).precision == "bf16"


def test_either_precision_reuses_a_run_at_the_other_one_only_when_none_ran_at_this_one(tmp_path, studio_home):
    records = tmp_path / "records.jsonl"
    bf16 = TrainConfig(method="finetune", frozen=True, fraction=None, per_class=5, precision="bf16")
    entry = {"id": "r-bf16", "device": "CPU (2 threads)", "config": json.loads(resolve(bf16, studio_home).to_json()),
             "metrics": {"test": {"accuracy": 0.5}}}
    records.write_text(json.dumps(entry) + "\n")
    fp32 = bf16.with_(precision="fp32")
    assert run_once(Registry(tmp_path / "home"), fp32, train=False, records=records) is None
    found = run_once(Registry(tmp_path / "home"), fp32, train=False, records=records, any_precision=True)
    assert found.config.precision == "bf16" and found.metrics["test"]["accuracy"] == 0.5

    twin = {**entry, "id": "r-fp32", "config": json.loads(resolve(fp32, studio_home).to_json()),
            "metrics": {"test": {"accuracy": 0.6}}}
    records.write_text(json.dumps(entry) + "\n" + json.dumps(twin) + "\n")
    exact = run_once(Registry(tmp_path / "other"), fp32, train=False, records=records, any_precision=True)
    assert exact.config.precision == "fp32"  # this precision first
    assert twin_gaps(recorded(records), studio_home) == [pytest.approx(0.1)]
    assert twin_gaps([entry], studio_home) == []


def test_every_record_names_the_classes_of_its_confusion_matrix_in_label_order():
    """The records are written with sorted keys, which reorders per_class; the matrix's own order is `classes`
    (added to the records of 2026-11-25/26 after checking each row sum against its class's support)."""
    for entry in recorded(RECORDS):
        test = entry["metrics"].get("test") or {}
        if "confusion" in test:
            assert test["classes"] == ["human", "chatGPT", "cohere", "davinci", "bloomz", "dolly"], entry["id"]
            supports = [test["per_class"][c]["support"] for c in test["classes"]]
            assert [sum(row) for row in test["confusion"]] == supports, entry["id"]


def test_a_run_stored_before_attention_dropout_0_was_the_default_is_found_and_recorded_as_it_ran(tmp_path, m4_dir,
                                                                                                   studio_home):
    """A fine-tuning run recorded with attention dropout left to the backbone (None, before 0 became the default)
    stands for the same config at MiniLM's 0.1, from the records and from a registry, and is never recorded twice;
    today's default (0) is another run."""
    records = tmp_path / "records.jsonl"
    asked = resolve(TrainConfig(data=sample_spec(), method="finetune", fraction=None, per_class=2, seed=0, steps=1,
                                evaluations=1, max_len=32), studio_home)
    assert asked.attention_dropout == 0.0
    registry = Registry(tmp_path / "home")
    before = registry.create(asked.with_(attention_dropout=None))  # as an earlier version stored it
    registry.claim(before)
    registry.mark_running(before, 1, "cpu")
    registry.finish(before, Status.DONE, "ran", {"test": {"accuracy": 0.5}, "seconds": 1.0})
    bench.sample_runs.record(registry.get(before), records, registry.home)  # as it was recorded then
    found = run_once(registry, asked.with_(attention_dropout=0.1), train=False, records=records)
    assert found is not None and found.id == before and found.config.attention_dropout == 0.1
    assert run_once(registry, asked.with_(attention_dropout=0.1), train=False, records=records).id == before
    assert [r["id"] for r in recorded(records)] == [before]  # recorded once
    assert run_once(registry, asked, train=False, records=records) is None  # 0 never ran
    restored = run_once(Registry(tmp_path / "other"), asked.with_(attention_dropout=0.1), train=False, records=records)
    assert restored is not None and restored.metrics["test"]["accuracy"] == 0.5


def test_the_trec_study_puts_the_papers_comparison_first_and_the_notebooks_long_runs_where_they_fit():
    """bench/studies/trec.py: frozen first; at each amount (2% first) the paper's BERT, then G1 and its control at the
    authors' budget; the notebook's 920-step runs on fine at 2% for seeds 0-2 first, the rest of them last; and the
    GPU check's order, seed by seed over every MiniLM run."""
    from bench.studies import trec

    stages = trec.plan(list(trec.TASKS), list(trec.AMOUNTS), [0, 1, 2, 3, 4], ["frozen", "trained"])
    titles = [[title for title, _ in stage] for stage in stages]
    assert titles[0] == ["frozen features and TF-IDF"] and len(stages) == 4
    assert titles[1][:2] == ["fine-tuning, paper preset, 2%", "G1 and its control, tf preset, 2%"]
    notebook = dict(stages[1])["G1 and its control, notebook preset, fine, 2%, seeds 0-2"]
    assert {run[:3] for run in notebook} == {("fine", "2%", s) for s in (0, 1, 2)} and len(notebook) == 6
    assert titles[3] == ["G1 and its control, notebook preset, the rest"] and len(stages[3][0][1]) == 34
    runs = [run for stage in stages for _, part in stage for run in part]
    assert len(runs) == len(set(runs)) == 2 * 2 * 5 * (len(trec.FROZEN) + len(trec.SMOLLM2_METHODS) + len(trec.TRAINED))
    pairs = [(a, b) for a, b, _ in trec.PAIRS]
    assert ("ganbert-noise-tf", "ganbert-control-tf") in pairs and ("ganbert-noise-tf", "finetune-paper") in pairs
    on_gpu = trec.seed_by_seed(list(trec.TASKS), list(trec.AMOUNTS), [0, 1, 2, 3, 4])
    assert [seed for _, _, seed, *_ in on_gpu] == sorted(seed for _, _, seed, *_ in on_gpu)  # a cut leaves seeds whole
    assert {column for *_, column in on_gpu} == {"minilm"}  # SmolLM2 is frozen-only off a GPU and not in the kit
    ordered = trec.costly_first(on_gpu)
    notebook = [r for r in ordered if "notebook" in r[3]]
    assert sorted(ordered) == sorted(on_gpu) and ordered[:20] == [r for r in notebook if r[1] == "2%"]
    assert {(r[0], r[2]) for r in ordered[:20]} == {(t, s) for t in trec.TASKS for s in range(5)}


@pytest.mark.corpus
def test_the_trec_study_names_its_runs_from_their_configs():
    from bench.studies import trec

    # its configs name the split's files: a clone without ../shared had failed here on an AttributeError, unmarked
    need_shared(trec.TASKS["fine"].folder / "train.jsonl", "the GAN-BERT authors' TREC split")
    for name in (*trec.FROZEN, *trec.TRAINED):
        config = trec.config_of("fine", "1%", 3, name, "minilm", "fp32")
        assert trec.name_of(config) == name and trec.task_of(config) == "fine" and trec.amount_of(config) == "1%"
        assert config.validation == "none" and config.max_len == 64 and config.fraction == 0.5
    before = trec.config_of("fine", "2%", 0, "ganbert-noise-tf", "minilm", "fp32").with_(pooling="pooled")
    assert trec.name_of(before) == "ganbert-noise-tf+pooler"  # MiniLM's untrained pooler, as runs read it before
    assert trec.title_of("ganbert-noise-tf+pooler") == "GAN-BERT G1, tf preset, MiniLM's untrained pooler"
    smollm2 = trec.config_of("coarse", "2%", 0, "features-lr", "smollm2", "fp32")
    assert trec.name_of(smollm2) == "features-lr@smollm2" and trec.task_of(smollm2) == "coarse"
    for name in trec.SMOLLM2_TRAINED:  # every layer of its cut, as recorded, or its top K beside them
        config = trec.config_of("coarse", "2%", 0, name, "smollm2", "fp32")
        assert trec.name_of(config) == f"{name}@smollm2" and config.train_layers == (trec.TOP if "top" in name else 0)


def test_a_trec_run_at_a_budget_since_replaced_gives_way_to_the_runs_at_the_measured_one():
    """SmolLM2's LoRA on its top 4 layers went from lr 5e-4 to 1e-3 (`Packaged.budgets`): the runs at 5e-4 leave the
    study's tables, where they had been averaged with the new ones; a rate measured for no budget stays."""
    from bench.studies import trec
    from core.backbone.packaged import SMOLLM2
    def settled(method: str, **settings) -> TrainConfig:
        config = TrainConfig.of(method, **{"backbone": SMOLLM2, **settings})
        return method_for(config).settle(config)

    assert trec.superseded(settled("lora", lr=5e-4)) and not trec.superseded(settled("lora"))
    assert trec.superseded(settled("lora").with_(steps=None))  # at 1e-3 for 150 steps, before 300 was measured
    assert not trec.superseded(settled("lora", train_layers=0, lr=5e-4))  # every layer: no budget measured there
    assert not trec.superseded(settled("finetune")) and not trec.superseded(settled("adapter", lr=5e-4))
    assert not trec.superseded(settled("lora", backbone="minilm-l6", lr=5e-4))


def test_the_smollm2_study_runs_each_seeds_every_layer_run_last():
    """An every-layer run took 20 times the others on the M4 sample: a study cut short in a seed keeps the comparisons
    at the chosen K, the frozen references first."""
    from bench.studies import smollm2_trained as study

    (_, runs), = study.plan(["m4-20"], [1, 2])
    names = [r[3] for r in runs]
    assert names[:3] == ["features-lr", "features-lr-both", "head"] and names[8] == names[-1] == "finetune-all"
    assert [r[2] for r in runs] == [1] * 9 + [2] * 9  # seed by seed


def test_the_smollm2_study_names_the_runs_at_another_precision_or_on_another_device():
    """A CPU without native bf16 trains the missing runs at fp32 beside bf16 ones, on another machine's threads: the
    report says which, since a paired row then mixes precisions and a mean of seconds machines."""
    import pandas as pd

    from bench.studies import smollm2_trained as study

    rows = [{"corpus": "m4-sample", "per_class": 20, "name": name, "seed": seed, "accuracy": 0.8, "macro_f1": 0.8,
             "seconds": 1.0, "labels_read": 128, "k": 4 if name == "finetune-top" else 0, "max_len": 256,
             "precision": "fp32" if (name, seed) in {("finetune-all", 1), ("finetune-all", 2)} else "bf16",
             "device": "CPU (2 threads)" if name == "finetune-all" and seed else "CPU (1 thread)"}
            for name in ("finetune-top", "finetune-all") for seed in (0, 1, 2)]
    frame = pd.DataFrame(rows)
    assert study.machine_note(frame) == ("Every run at bf16 on CPU (1 thread) but these: fine-tuning, every layer "
                                         "(20), m4-sample 20/class, seeds 1, 2 at fp32 on CPU (2 threads).")
    assert study.machine_note(frame) in study.report(frame)
    assert study.machine_note(frame.assign(precision="bf16")).endswith("seeds 1, 2 at bf16 on CPU (2 threads).")
    assert study.machine_note(frame.assign(precision="bf16", device="CPU (1 thread)")) == ""
