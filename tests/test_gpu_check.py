"""The GPU check's parts that can be judged without a GPU (the whole of it runs in CI as `make gpu-check CPU=1`):
its environment sees the machine's packages and hides the absent ones, its plan cuts into whole seeds, pytest's
closing line is read, and GPU records stay apart from CPU ones in the report."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

import pytest

from bench import sample_runs
from bench.gpu import check as gpu_check
from bench.report import restore, studies
from core.runs import Registry


def test_the_checks_environment_sees_the_machines_packages_and_not_the_hidden_ones(tmp_path):
    python = gpu_check.make_venv(tmp_path / "venv", hide=("streamlit",))
    seen = subprocess.run([str(python), "-c", "import sys, pytest; print(sys.prefix); import streamlit"],
                          capture_output=True, text=True)
    assert seen.stdout.strip() == str(tmp_path / "venv")  # its own environment, with this one's pytest in sight
    assert "No module named 'streamlit' (hidden: the GPU machine has none)" in seen.stderr
    gpu_check.make_venv(tmp_path / "venv", hide=())  # made again without hiding: the hider goes
    assert subprocess.run([str(python), "-c", "import streamlit"], capture_output=True).returncode == 0


def test_the_study_runs_seed_by_seed_every_pool_for_ganbert_and_once_for_the_others():
    plan = gpu_check.study_plan(adapters=True)
    assert len(plan) == 5 * 2 * (2 + 5 * 3)  # seeds × amounts × (fine-tuning, adapters, 5 GAN-BERTs × 3 pools)
    assert [seed for *_, seed in plan] == sorted(seed for *_, seed in plan)  # a cut leaves whole seeds
    per_method = Counter(name for name, *_ in plan)
    assert per_method["finetune"] == 10 and per_method["ganbert-noise-tf"] == 30
    assert {pool for name, pool, *_ in plan if name == "ganbert-control"} == {"0", "1,000", "all"}
    assert "adapter" not in {name for name, *_ in gpu_check.study_plan(adapters=False)}


@pytest.mark.parametrize("line, counts", [
    ("12 passed, 1 skipped, 2 deselected, 2 warnings in 47.54s", {"passed": 12, "skipped": 1, "deselected": 2}),
    ("1 failed, 3 passed, 1 error in 9.01s", {"failed": 1, "passed": 3, "errors": 1}),
    ("(stopped after 120 s)", {}),
])
def test_pytests_closing_line_is_read(line, counts):
    assert gpu_check.pytest_counts(f"....\n{line}\n") == counts


def test_gpu_records_are_reported_apart_from_cpu_ones(tmp_path, monkeypatch):
    entry = json.loads(sample_runs.CORPORA["l2r"].records.read_text().splitlines()[0])
    (tmp_path / "l2r.jsonl").write_text(json.dumps(entry) + "\n")
    on_gpu = {**entry, "id": "20261201-000000-abcdef", "device": "GPU: NVIDIA H200 (139 GiB)",
              "config": {**entry["config"], "device": "cuda"}}
    (tmp_path / "l2r-gpu.jsonl").write_text(json.dumps(on_gpu) + "\n")
    monkeypatch.setattr(sample_runs, "RECORDS_DIR", tmp_path)
    monkeypatch.setattr(studies, "RECORDS_DIR", tmp_path)
    cpu = restore.restored("l2r", Registry(tmp_path / "cpu"))
    gpu = restore.restored("l2r", Registry(tmp_path / "gpu"), gpu=True)
    assert [r.device for r in cpu] == [entry["device"]] and [r.device for r in gpu] == [on_gpu["device"]]
    assert "regime study on a GPU" in studies.gpu_section(gpu)
    assert "No GPU has run the check yet" in studies.gpu_section([])


def test_the_trained_encoder_study_is_reported_beside_the_frozen_one(tmp_path):
    """bench/studies/regime.py --part full in docs/results.md: the seed report of the trained-encoder runs, and GAN-BERT
    − its control with the encoder trained beside the frozen study's on the same amount and pool. Trained runs are made
    here from the frozen records (encoder training on, accuracies set), G1 ahead of its control by 0.05."""
    def frozen_at(entry: dict, method: dict) -> bool:
        c = entry["config"]
        return (c["backbone"] is None and c["frozen"] and c["per_class"] == 5 and c["unlabeled_limit"] is None
                and c["seed"] < 3 and c["method"] == "ganbert" and c["generator"] == "noise"
                and c["adversarial"] == method["adversarial"] and c["gan_preset"] == "studio")

    entries = [json.loads(line) for line in sample_runs.CORPORA["l2r"].records.read_text().splitlines()]
    registry, runs = Registry(tmp_path / "home"), []
    for adversarial, accuracy in ((True, 0.35), (False, 0.30)):
        for entry in [e for e in entries if frozen_at(e, {"adversarial": adversarial})]:
            runs.append(sample_runs.restore(registry, entry, sample_runs.CORPORA["l2r"].folder))
            seed = entry["config"]["seed"]
            trained = {**entry, "config": {**entry["config"], "frozen": False, "lr": 5e-5, "batch_size": 16},
                       "metrics": {**entry["metrics"], "test": {**entry["metrics"]["test"],
                                                               "accuracy": accuracy + 0.01 * seed}}}
            runs.append(sample_runs.restore(registry, trained, sample_runs.CORPORA["l2r"].folder))
    section = studies.regime_section(runs)
    assert "With the encoder trained (bench/studies/regime.py --part full)" in section
    side = section.split("beside frozen features")[1]
    # these records ran before the floor on batches without labels, which would have added copies at 5/class over
    # the whole pool: their pool is named so, apart from today's runs
    row = next(line for line in side.splitlines()
               if line.startswith("| 5/class | all (the authors' copies alone) | G1 |"))
    assert "+0.050 [+0.050, +0.050] (n=3), 3 / 0" in row.split("|")[4]
    assert "(n=3)" in row.split("|")[5]  # the frozen study's pair on the same rows


def test_the_regime_tables_leave_the_smollm2_studys_runs_to_its_own_section(tmp_path):
    """The SmolLM2 study (bench/studies/smollm2_trained.py) records into L2R's file at 256 tokens; the regime
    study's rows at 128 tokens had averaged its seed 0 in as a sixth seed (n=6). Its runs stay in its own section."""
    from bench.studies.smollm2_trained import TAG

    entries = [json.loads(line) for line in sample_runs.CORPORA["l2r"].records.read_text().splitlines()]
    regime = [e for e in entries if e["config"]["backbone"] == "smollm2-135m" and e["config"]["features"] == "both"
              and e["config"]["method"] == "features-lr" and e["config"]["per_class"] == 20
              and "regime" in e["config"]["tags"]]
    assert len(regime) == 5
    study = {**regime[0], "id": "20990101-000000-abcdef",
             "config": {**regime[0]["config"], "tags": [TAG], "max_len": 256},
             "metrics": {**regime[0]["metrics"], "test": {**regime[0]["metrics"]["test"], "accuracy": 0.999}}}
    registry = Registry(tmp_path / "home")
    runs = [sample_runs.restore(registry, e, sample_runs.CORPORA["l2r"].folder) for e in [*regime, study]]
    row = next(line for line in studies.regime_section(runs).splitlines()
               if line.startswith("| Frozen features + LR | smollm2-both |"))
    assert "(n=5)" in row and "0.999" not in row
    assert study["id"] not in {r.id for r in studies.regime_runs(runs)}
