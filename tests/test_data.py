"""Loaders, validation errors, splits and labeled-subset sampling."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.data import (
    SEMEVAL_LABELS,
    UNLABELED,
    Amount,
    ColumnMapping,
    CorpusConfig,
    DataError,
    DataSpec,
    load_dataset,
    load_file,
    load_frame,
    official_files,
    sample_labeled,
    split_off,
    store_upload,
)
from core.errors import InputError
from core.train import TrainConfig
from tests.helpers import semeval_rows, write_jsonl

# ---------------------------------------------------------------- loaders

def test_semeval_jsonl_ids_map_to_official_names(tmp_path):
    frame, labels = load_file(write_jsonl(tmp_path / "t.jsonl", semeval_rows(labels=(0, 3, 5))))
    assert labels == SEMEVAL_LABELS
    assert sorted(set(frame["label"])) == [0, 3, 5]
    assert list(frame.columns) == ["id", "text", "label", "source"]
    assert frame.loc[frame["id"] == "3-0", "label"].item() == 3


def test_label_names_accepted_case_insensitively(tmp_path):
    rows = [{"text": f"t{i}", "label": name} for i, name in enumerate(["Human", "chatgpt", "DOLLY", "human"])]
    frame, labels = load_file(write_jsonl(tmp_path / "t.jsonl", rows))
    assert labels == SEMEVAL_LABELS
    assert frame["label"].tolist() == [0, 1, 5, 0]


def test_model_field_stands_in_for_missing_label(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "label"} for r in semeval_rows()]
    frame, _ = load_file(write_jsonl(tmp_path / "t.jsonl", rows))
    assert sorted(set(frame["label"])) == [0, 1, 2]


def test_test_file_without_labels_is_unlabeled(tmp_path):
    rows = [{"id": str(i), "text": f"essay {i}"} for i in range(4)]
    frame, _ = load_file(write_jsonl(tmp_path / "t.jsonl", rows), labels=SEMEVAL_LABELS, require_labels=False)
    assert (frame["label"] == UNLABELED).all()


def test_official_directory_with_gold_labels(tmp_path, studio_home):
    write_jsonl(tmp_path / "subtaskB_train.jsonl", semeval_rows(4, (0, 1, 2, 3)))
    write_jsonl(tmp_path / "subtaskB_dev.jsonl", semeval_rows(2, (0, 1, 2, 3)))
    write_jsonl(tmp_path / "subtaskB_test.jsonl", [{"id": f"x{i}", "text": f"essay {i}"} for i in range(4)])
    write_jsonl(tmp_path / "subtaskB_gold.jsonl", [{"id": f"x{i}", "text": "-", "label": i} for i in range(4)])
    assert set(official_files(tmp_path)) == {"train", "val", "test", "gold"}
    ds = load_dataset(DataSpec(train=str(tmp_path)), studio_home)
    assert len(ds.train) == 16 and len(ds.val) == 8
    assert ds.test["label"].tolist() == [0, 1, 2, 3]


def test_generic_csv_with_column_mapping_and_string_labels(tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame({"body": ["a b", "c d", "e f", "g h"], "who": ["bot", "person", "bot", "person"],
                  "domain": ["x", "y", "x", "y"]}).to_csv(path, index=False)
    frame, labels = load_file(path, ColumnMapping(text="body", label="who", source="domain"))
    assert labels == ("bot", "person")
    assert frame["label"].tolist() == [0, 1, 0, 1]
    assert frame["source"].tolist() == ["x", "y", "x", "y"]


def test_generic_integer_labels_keep_their_numbers(tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame({"text": list("abcd"), "label": [10, 2, 10, 2]}).to_csv(path, index=False)
    frame, labels = load_file(path)
    assert labels == ("2", "10")
    assert frame["label"].tolist() == [1, 0, 1, 0]


def test_parquet_and_split_column(tmp_path, studio_home):
    path = tmp_path / "d.parquet"
    n = 30
    pd.DataFrame({"text": [f"doc {i}" for i in range(n)], "label": [i % 2 for i in range(n)],
                  "split": ["train"] * 20 + ["dev"] * 4 + ["test"] * 6}).to_parquet(path)
    ds = load_dataset(DataSpec(train=str(path)), studio_home)
    assert (len(ds.train), len(ds.val), len(ds.test)) == (20, 4, 6)
    assert ds.labels == ("0", "1")


def test_upload_bytes_take_the_same_path_as_files(tmp_path, studio_home):
    raw = "".join(json.dumps(r) + "\n" for r in semeval_rows()).encode()
    frame, labels = load_frame(raw, "upload.jsonl")
    stored = store_upload(raw, "../../evil name.jsonl", studio_home / "uploads")
    assert stored.parent.parent == studio_home / "uploads" and stored.name == "evil_name.jsonl"  # the user's name
    assert load_file(stored)[0].equals(frame)
    assert store_upload(raw, "My Essays (v2).JSONL", studio_home / "uploads").name == "My_Essays_v2_.jsonl"


def test_real_m4_sample_loads_with_absent_bloomz(m4_dir, studio_home):
    ds = load_dataset(DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl")), studio_home)
    counts = ds.class_counts()
    assert counts.loc["bloomz"].sum() == 0
    assert counts["train"].sum() == 128 and counts["test"].sum() == 65
    assert ds.val is None and "val" not in counts  # nothing set aside: each run draws its validation rows
    assert set(ds.train["source"]) == {"arxiv", "reddit"}
    assert ds.name == "m4-sample"  # a file named for its split goes by its folder


# ---------------------------------------------------------------- every validation error

@pytest.mark.parametrize("content, name, message", [
    (b"", "e.jsonl", "is empty"),
    (b"\n\n  \n", "e.jsonl", "is empty"),
    (b'{"text": "a", "label": 0}\n{"text": "b", "label": 1\n', "m.jsonl", "malformed JSON on line 2"),
    (b'{"text": "a", "label": 0}\n[1, 2]\n', "m.jsonl", "line 2 is a JSON list"),
    (b'{"text": "caf\xe9", "label": 0}\n', "enc.jsonl", "not UTF-8 text: byte 0xe9 on line 1"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "bin.jsonl", "binary file"),
    (b'{"body": "a", "label": 0}\n', "c.jsonl",
     "no text column 'text'; the columns are body, label. Name the right one with --text-col"),
    (b'{"text": "a", "who": 0}\n', "c.jsonl",
     "no label column 'label'; the columns are text, who. Name the right one with --label-col"),
    (b'{"text": "a", "label": 0}\n{"text": "  ", "label": 1}\n', "t.jsonl",
     "empty or missing text (the first on line 2)"),
    (b'{"text": "a", "label": 0}\n{"text": null, "label": 1}\n', "t.jsonl", "empty or missing text"),
    (b'{"text": "a", "label": 0}\n{"text": "b", "label": 9, "model": "x"}\n', "u.jsonl",
     "1 unknown label(s) in 1 row(s): '9' (1 row) (the first on line 2)"),
    (b'{"text": "a", "label": "human", "model": "human"}\n{"text": "b", "label": "gpt4", "model": "gpt4"}\n',
     "u.jsonl", "unknown label(s) in 1 row(s): 'gpt4' (1 row) (the first on line 2); the classes are 'human', "
                "'chatGPT'"),
    (b"text,label\na,0\n", "x.txt", "unknown file type"),
    (b"not parquet at all", "p.parquet", "not a readable Parquet file"),
])
def test_bad_input_gets_a_specific_message(content, name, message):
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_frame(content, name)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="File not found"):
        load_file(tmp_path / "nope.jsonl")


def test_file_over_the_size_limit(tmp_path):
    from core.data import read_bytes

    path = write_jsonl(tmp_path / "big.jsonl", semeval_rows(50))
    with pytest.raises(DataError, match="over the 0 MB limit"):
        read_bytes(path, max_bytes=100)


def test_single_class_is_refused(tmp_path, studio_home):
    path = write_jsonl(tmp_path / "one.jsonl", semeval_rows(5, (2,)))
    with pytest.raises(DataError, match=r"only one class \(cohere\)"):
        load_dataset(DataSpec(train=str(path)), studio_home)


def test_a_test_class_no_train_row_shows_is_kept_unless_the_classes_are_declared(tmp_path, studio_home):
    """As the GAN-BERT authors score TREC's fine classes: a test class without a train text is a class of the
    dataset, its texts errors for every model; declared classes leave it unknown, named whole with its rows."""
    train = write_jsonl(tmp_path / "train.csv.jsonl", [{"text": f"t{i}", "label": "ab"[i % 2]} for i in range(6)])
    test = write_jsonl(tmp_path / "test.jsonl", [{"text": "t", "label": "ENTY:color"}, {"text": "u", "label": "a"},
                                                 {"text": "v", "label": "ENTY:color"}])
    ds = load_dataset(DataSpec(train=str(train), test=str(test)), studio_home)
    assert ds.labels == ("ENTY:color", "a", "b") and ds.absent == ["ENTY:color"]
    assert ds.absent_note() == ("1 class has no labeled example in train (ENTY:color): no model can learn it; its 2 "
                                "test texts count as errors, so the best possible test accuracy is 0.33")
    with pytest.raises(DataError, match=r"1 unknown label\(s\) in 2 row\(s\): 'ENTY:color' \(2 rows\) \(the first "
                                        r"on line 1\); the classes are 'a', 'b'"):
        load_dataset(DataSpec(train=str(train), test=str(test), labels=("a", "b")), studio_home)


def test_official_directory_without_train_file(tmp_path, studio_home):
    with pytest.raises(DataError, match="no subtaskB_train.jsonl"):
        load_dataset(DataSpec(train=str(tmp_path)), studio_home)


# ---------------------------------------------------------------- splits and sampling

def test_split_off_is_stratified_and_reproducible(small_builtin):
    train, val = split_off(small_builtin.train, 0.25, seed=3)
    again = split_off(small_builtin.train, 0.25, seed=3)[1]
    assert val["id"].tolist() == again["id"].tolist()
    assert set(train["id"]).isdisjoint(val["id"])
    assert val["label"].value_counts().nunique() == 1  # the same share of every class


def test_sample_labeled_by_fraction():
    labels = np.repeat(np.arange(4), [100, 200, 50, 10])
    mask = sample_labeled(labels, Amount(fraction=0.1), seed=0)
    assert [int(mask[labels == c].sum()) for c in range(4)] == [10, 20, 5, 1]
    assert np.array_equal(mask, sample_labeled(labels, Amount(fraction=0.1), seed=0))
    assert not np.array_equal(mask, sample_labeled(labels, Amount(fraction=0.1), seed=1))


def test_sample_labeled_keeps_one_row_of_rare_classes_and_caps_per_class():
    labels = np.repeat(np.arange(3), [1000, 5, 2])
    assert sample_labeled(labels, Amount(fraction=0.01))[labels == 2].sum() == 1
    per = sample_labeled(labels, Amount(per_class=4))
    assert [int(per[labels == c].sum()) for c in range(3)] == [4, 4, 2]


@pytest.mark.parametrize("kwargs, says", [({}, "exactly one"), ({"fraction": 0.1, "per_class": 2}, "exactly one"),
                                          ({"fraction": 0}, r"\(0, 1\]"), ({"fraction": 1.5}, r"\(0, 1\]"),
                                          ({"per_class": 0}, "at least 1"), ({"per_class": 2.5}, "whole number")])
def test_a_labeled_amount_is_exactly_one_of_fraction_and_per_class_in_range(kwargs, says):
    """The one place the rule lives: configs, the sampler, sweeps, the CLI and the Train page all build an Amount."""
    with pytest.raises(InputError, match=says):
        Amount(**kwargs)
    with pytest.raises(InputError, match=says):
        TrainConfig.of(**{"fraction": None, **kwargs})
    assert Amount(per_class=5.0).per_class == 5 and Amount(per_class=5.0).label == "5/class"
    assert Amount.chosen(0.1, None) == Amount(fraction=0.1) and Amount.chosen(0.1, 3) == Amount(per_class=3)


def test_a_count_per_class_beyond_a_class_is_named_with_what_the_class_holds():
    from core.train import capped_note

    sizes = {"human": 1800, "chatGPT": 30, "cohere": 12, "bloomz": 0}
    assert Amount(per_class=20).short_classes(sizes) == {"cohere": 12}  # an absent class asks for nothing
    assert Amount(fraction=0.5).short_classes(sizes) == {} and capped_note([Amount(per_class=5)], sizes) is None
    note = capped_note([Amount(per_class=20), Amount(fraction=0.1), Amount(per_class=5000)], sizes)
    assert note.startswith("5,000 and 20 per class ask for more than any class holds in the train pool "
                           "(human 1,800, chatGPT 30, cohere 12): ")
    assert capped_note([Amount(per_class=20)], sizes).startswith(
        "20 per class asks for more than 1 of the 3 classes hold in the train pool (cohere 12)")


def test_the_labeled_amount_rule_is_written_once():
    """It was checked or rebuilt in six places (config, sampler, CLI options and commands, Train page, sweep)."""
    from core.paths import REPO_ROOT

    rule = "exactly one of fraction"
    sources = [p for p in [*(REPO_ROOT / "core").rglob("*.py"), *(REPO_ROOT / "pages").glob("*.py")]
               if rule in p.read_text()]
    assert [p.name for p in sources] == ["sampling.py"]


def test_fingerprint_follows_content(tmp_path, studio_home):
    a = load_dataset(DataSpec(train=str(write_jsonl(tmp_path / "a.jsonl", semeval_rows()))), studio_home)
    b = load_dataset(DataSpec(train=str(write_jsonl(tmp_path / "b.jsonl", semeval_rows()))), studio_home)
    rows = semeval_rows()
    rows[0]["text"] += "!"
    c = load_dataset(DataSpec(train=str(write_jsonl(tmp_path / "c.jsonl", rows))), studio_home)
    assert a.fingerprint == b.fingerprint != c.fingerprint


def test_the_builtin_corpus_has_no_validation_split_to_hide_labels_in(studio_home):
    ds = load_dataset(DataSpec(builtin=CorpusConfig(train_per_class=50, test_per_class=10)), studio_home)
    assert ds.val is None and len(ds.train) == 300 and len(ds.test) == 60


# ---------------------------------------------------------------- files read as they are

def test_jsonl_records_end_at_newline_only(tmp_path):
    """U+0085, U+2028, U+2029, form feed and a lone carriage return are text inside a record: `str.splitlines()`
    broke a valid file there and misnumbered the lines after."""
    inside = ["next\u0085line", "line\u2028sep", "para\u2029sep", "form\ffeed", "vertical\vtab", "group\x1dsep"]
    rows = [{"text": t, "label": i % 2} for i, t in enumerate(inside)]
    raw = ("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n").encode()
    path = tmp_path / "odd.jsonl"
    path.write_bytes(raw)
    frame, _ = load_file(path)
    assert frame["text"].tolist() == inside
    bad = raw + '{"text": "a\u0085b", "label": 0\n'.encode()  # the 7th line is broken; U+0085 must not add a line
    path.write_bytes(bad)
    with pytest.raises(DataError, match="malformed JSON on line 7"):
        load_file(path)


def test_csv_keeps_quoted_line_breaks_and_numbers_lines_as_the_file_does(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('text,label\n"two\nlines",a\n"next\u0085line and\u2028sep",b\n\n"c",\n', encoding="utf-8")
    with pytest.raises(DataError, match="no label \\(the first on line 6\\)"):
        load_file(path)
    path.write_text('text,label\n"two\nlines",a\n"next\u0085line",b\n', encoding="utf-8")
    frame, labels = load_file(path)
    assert frame["text"].tolist() == ["two\nlines", "next\u0085line"] and labels == ("a", "b")
    path.write_text('text,label\n"x",a\n"y",b,extra\n', encoding="utf-8")
    with pytest.raises(DataError, match="line 3 has 3 fields"):
        load_file(path)


def test_parquet_keeps_special_characters(tmp_path):
    path = tmp_path / "d.parquet"
    pd.DataFrame({"text": ["a\u0085b", "c\u2028d"], "label": ["x", "y"]}).to_parquet(path)
    assert load_file(path)[0]["text"].tolist() == ["a\u0085b", "c\u2028d"]


def test_a_folder_of_split_files_loads_by_their_names(tmp_path, studio_home):
    for split, n in (("train", 6), ("dev", 2), ("test", 3)):  # each split's own texts: a shared one is set aside
        rows = semeval_rows(n, (0, 1, 2))
        write_jsonl(tmp_path / f"{split}.jsonl", [r | {"text": f"{split}: {r['text']}"} for r in rows])
    ds = load_dataset(DataSpec(train=str(tmp_path)), studio_home)
    assert (len(ds.train), len(ds.val), len(ds.test)) == (18, 6, 9)
    assert ds.name == tmp_path.name
    (tmp_path / "train.jsonl").unlink()
    with pytest.raises(DataError, match="no subtaskB_train.jsonl or train.jsonl"):
        load_dataset(DataSpec(train=str(tmp_path)), studio_home)


@pytest.mark.integration
def test_the_raw_l2r_pool_loads(l2r_dir, studio_home):
    """11,421 real texts, two of them holding U+0085: the file a user brings, read as it is."""
    frame, labels = load_file(l2r_dir / "train.jsonl")
    assert len(frame) == 11_421 and len(labels) == 5
    assert frame["text"].str.contains("\u0085").sum() == 2
    ds = load_dataset(DataSpec(train=str(l2r_dir)), studio_home)
    assert ds.name == "l2r" and (len(ds.train), len(ds.val), len(ds.test)) == (11_421, 1_242, 1_867)
