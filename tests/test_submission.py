"""Predictions a SemEval participant can submit: the official format, checked by a reader written from the
Subtask B scorer's published rules, the CSV beside it, where files go, and what is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, f1_score

from core.cli import main
from core.runs import Registry

TASK_IDS = range(6)  # Subtask B: human 0, chatGPT 1, cohere 2, davinci 3, bloomz 4, dolly 5


def score_submission(pred: Path, gold: Path) -> tuple[float, float]:
    """The scorer's rules (mbzuai-nlp/SemEval2024-task8, subtaskB/scorer): JSON lines; `id` and `label`
    columns; labels among the task's integer ids; ids matching the gold file's one to one. Then accuracy and
    macro-F1 (scikit-learn's, zero_division=1) on the rows merged by id. Fails on any broken rule."""
    rows = [json.loads(line) for line in pred.read_text(encoding="utf-8").splitlines()]
    assert rows and all({"id", "label"} <= set(r) for r in rows), "every line needs id and label"
    assert all(type(r["label"]) is int and r["label"] in TASK_IDS for r in rows), "labels are the task's ids"
    gold_rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines()]
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids) and set(ids) == {r["id"] for r in gold_rows}, "ids match gold one to one"
    merged = pd.DataFrame(rows).merge(pd.DataFrame(gold_rows)[["id", "label"]], on="id", suffixes=("_pred", "_gold"))
    return (accuracy_score(merged["label_gold"], merged["label_pred"]),
            f1_score(merged["label_gold"], merged["label_pred"], average="macro", zero_division=1))


@pytest.fixture
def run_id(m4_dir, tiny_backbone, capsys) -> str:
    """A reference on the real sample (fp32, so its reload predicts exactly what the run scored)."""
    assert main(["train", "--train", str(m4_dir / "train.jsonl"), "--test", str(m4_dir / "dev.jsonl"), "--method",
                 "features-lr", "--per-class", "5", "--precision", "fp32", "--backbone", str(tiny_backbone)]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_id"]


def test_the_submission_file_passes_the_scorers_rules_with_the_runs_own_scores(run_id, m4_dir, tmp_path, capsys,
                                                                               studio_home):
    out = tmp_path / "p.jsonl"
    assert main(["predict", run_id, "--file", str(m4_dir / "dev.jsonl"), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["predictions"] == str(out) and summary["format"].startswith("SemEval submission")
    assert len(out.read_text().splitlines()) == 65
    assert all(set(json.loads(line)) == {"id", "label"} for line in out.read_text().splitlines())
    accuracy, macro_f1 = score_submission(out, m4_dir / "dev.jsonl")
    test = Registry(studio_home).get(run_id).metrics["test"]
    assert accuracy == pytest.approx(test["accuracy"]) and macro_f1 == pytest.approx(test["macro_f1"])
    assert summary["accuracy"] == pytest.approx(accuracy)


def test_the_csv_names_gold_and_predicted_apart(run_id, m4_dir, tmp_path, capsys):
    out = tmp_path / "p.csv"
    assert main(["predict", run_id, "--file", str(m4_dir / "dev.jsonl"), "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert list(frame.columns[:3]) == ["id", "gold", "predicted"] and "label" not in frame.columns
    assert [c for c in frame.columns if c.startswith("p_")] == ["p_human", "p_chatGPT", "p_cohere", "p_davinci",
                                                                 "p_dolly"]
    gold = pd.read_json(m4_dir / "dev.jsonl", lines=True)
    names = ["human", "chatGPT", "cohere", "davinci", "bloomz", "dolly"]
    assert frame["gold"].tolist() == [names[i] for i in gold["label"]]  # the gold labels, by name


def test_without_out_the_predictions_go_to_the_runs_folder(run_id, m4_dir, tmp_path, capsys, monkeypatch, studio_home):
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["predict", run_id, "--file", str(m4_dir / "dev.jsonl")]) == 0
    written = Path(json.loads(capsys.readouterr().out)["predictions"])
    assert written.parent.parent == Registry(studio_home).folder(run_id).path and written.name == "dev.predictions.csv"
    assert written.exists() and list(here.iterdir()) == []  # nothing in the current folder
    assert oct(os.stat(written).st_mode & 0o777) == "0o644"


def test_a_file_without_ids_is_named_by_row_and_says_so(run_id, m4_dir, tmp_path, capsys):
    rows = [json.loads(line) for line in (m4_dir / "dev.jsonl").read_text().splitlines()][:4]
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in rows))
    out = tmp_path / "p.jsonl"
    assert main(["predict", run_id, "--file", str(plain), "--out", str(out)]) == 0
    assert "no id column" in capsys.readouterr().err
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [0, 1, 2, 3]


def test_numeric_ids_stay_numbers(run_id, m4_dir, tmp_path, capsys):
    rows = [json.loads(line) for line in (m4_dir / "dev.jsonl").read_text().splitlines()][:3]
    numbered = tmp_path / "numbered.jsonl"
    numbered.write_text("".join(json.dumps({"id": 100 + i, "text": r["text"]}) + "\n" for i, r in enumerate(rows)))
    out = tmp_path / "p.jsonl"
    assert main(["predict", run_id, "--file", str(numbered), "--out", str(out)]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [100, 101, 102]


def test_a_format_the_studio_cannot_write_exits_2(run_id, m4_dir, tmp_path, capsys):
    assert main(["predict", run_id, "--file", str(m4_dir / "dev.jsonl"), "--out", str(tmp_path / "p.xlsx")]) == 2
    assert "give a .jsonl file (the SemEval submission format) or a .csv file" in capsys.readouterr().err
    assert not (tmp_path / "p.xlsx").exists()


def test_a_model_of_other_classes_writes_their_names_and_says_so(tmp_path, tiny_backbone, capsys):
    """L2R's classes (a human and four models) have no Subtask B ids: its .jsonl had written integers by a
    mapping it never stated."""
    names = ["human", "gpt-4o", "llama-3-70b"]
    rows = [{"id": f"r{i}", "text": f"text {i} " + "word " * (i % 5), "label": names[i % 3]} for i in range(30)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["train", "--train", str(tmp_path / "train.jsonl"), "--test", str(tmp_path / "train.jsonl"),
                 "--method", "tfidf-lr", "--per-class", "3"]) == 0
    run_id = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_id"]
    out = tmp_path / "p.jsonl"
    assert main(["predict", run_id, "--file", str(tmp_path / "train.jsonl"), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 30 and {line["label"] for line in lines} <= set(names)  # the names, not guessed ids
    assert json.loads(captured.out)["format"].startswith("id, label: the class names (")
    assert "not Subtask B's" in captured.err


def test_labels_of_classes_the_model_never_learned_are_not_scored(tmp_path, run_id, capsys):
    """L2R's models on the M4 sample's dev file had been scored 0.154, with a confusion matrix over the file's
    classes that dropped the rows predicted as L2R's."""
    rows = [{"id": f"r{i}", "text": f"a text of {i} words " * 3, "label": ["human", "gpt-4o"][i % 2]}
            for i in range(6)]
    (tmp_path / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "p.csv"
    assert main(["predict", run_id, "--file", str(tmp_path / "other.jsonl"), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["rows"] == 6 and "accuracy" not in summary and len(pd.read_csv(out)) == 6
    assert "Not scored: 3 of the file's 6 labeled rows are of classes the model was never trained on (gpt-4o)" in (
        captured.err)
