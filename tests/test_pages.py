"""AppTest of the dashboard pages on the built-in corpus and on the real M4 sample."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from streamlit.testing.v1 import AppTest

from core.data import DataSpec, load_dataset
from tests.helpers import REPO_ROOT, open_page, write_jsonl


def test_home_shows_the_synthetic_corpus():
    at = open_page("pages/home.py")
    assert at.title[0].value == "GAN-BERT Studio"
    assert any("synthetic" in i.value for i in at.info)
    assert "synthetic" in " ".join(c.value for c in at.caption)


def open_tab(at: AppTest, label: str) -> AppTest:
    """What a click on an Explore tab does: the tab's state, then a rerun."""
    at.session_state["ex_tab"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def test_explore_on_builtin_corpus(small_builtin):
    """Only the open tab runs: a first visit drew every map, n-gram table and word cloud before showing the
    class counts."""
    at = open_page("pages/explore.py", small_builtin)
    assert [t.label for t in at.tabs] == ["Overview", "Lengths", "Words", "Maps", "Train/test shift"]
    assert len(at.get("vega_lite_chart")) == 2 and not at.metric and not at.get("image")  # counts, sources
    assert open_tab(at, "Lengths").metric[0].label == "Train texts truncated at this max length"
    assert len(open_tab(at, "Words").get("image")) == 6  # one word cloud per class
    assert len(open_tab(at, "Maps").get("vega_lite_chart")) == 2  # the TF-IDF map and its hexbins
    assert open_tab(at, "Train/test shift").metric[0].label.startswith("KL")


def test_explore_exports_the_report_core_explore_writes(small_builtin, tmp_path):
    """Issue 84, item 6: the guide spoke of "the exported Explore report", and the page had no export. A button
    builds the same report as `core explore` (its steps named in a status) and offers it for download."""
    from core.backbone.encode import load_tokenizer
    from core.explore import write_report

    at = open_page("pages/explore.py", small_builtin)
    assert not at.get("download_button")  # built on request only: a first visit computes no report
    at.button(key="ex_build").click().run()
    assert not at.exception, at.exception
    assert at.get("download_button") and at.status[0].label == "Report ready"
    built = at.session_state[f"ex_report_{small_builtin.fingerprint}"]
    write_report(small_builtin, load_tokenizer(), tmp_path)
    assert built == (tmp_path / "report.html").read_text()


@pytest.mark.parametrize("n, sentences", [(4, False), (8, False), (12, False), (4, True)])
def test_explore_on_a_few_short_rows_says_what_it_cannot_draw(tmp_path, n, sentences, capsys, studio_home):
    """Issue 87: 4 to 12 rows of a word or a short sentence each had ended in sklearn's "empty vocabulary" and
    "n_components=2 must be ..." on every tab and in `core explore`."""
    from core.cli import main

    words = ["the cat sat on the mat", "a dog ran to the park", "the park cat", "a mat"]
    rows = [{"text": words[i % 4] if sentences else f"w{i}", "label": i % 2} for i in range(n)]
    train, test = write_jsonl(tmp_path / "train.jsonl", rows), write_jsonl(tmp_path / "test.jsonl", rows)
    assert main(["explore", str(train), "--test", str(test), "--out", str(tmp_path / "out"), "--no-cache"]) == 0
    assert (tmp_path / "out" / "report.html").exists()
    at = open_page("pages/explore.py", load_dataset(DataSpec(train=str(train), test=str(test)), studio_home))
    for tab in ("Lengths", "Words", "Maps", "Train/test shift"):
        assert not open_tab(at, tab).exception, tab


def test_the_map_method_is_chosen_per_dataset(small_builtin):
    """UMAP chosen on one dataset had started minutes of fitting on the next one opened."""
    at = open_page("pages/explore.py", small_builtin)
    at.session_state["ex_map_another-dataset"] = "umap"  # chosen on another dataset
    maps = open_tab(at, "Maps")
    assert maps.radio(key=f"ex_map_{small_builtin.fingerprint}").value == "pca"
    assert [s.label for s in maps.status] == ["Map ready"] and len(maps.get("vega_lite_chart")) == 2
    maps.radio(key=f"ex_map_{small_builtin.fingerprint}").set_value("umap").run()
    maps = open_tab(at, "Maps")
    assert not at.exception and [s.label for s in maps.status] == ["Map ready"]
    assert not maps.get("progress")  # UMAP's epoch bar, drawn above the status while it ran, is gone once done


def test_explore_on_real_m4_sample(m4_dir, studio_home):
    ds = load_dataset(DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl")), studio_home)
    home = open_page("pages/home.py", ds)
    assert any(m.value == "**m4-sample** — 6 classes" for m in home.markdown)
    assert "Declared but absent from every split: bloomz; no model can learn it" in [c.value for c in home.caption]
    at = open_page("pages/explore.py", ds)
    assert "Data: **m4-sample**." in [c.value for c in at.caption]  # which dataset, as for the built-in one
    assert any("bloomz" in w.value for w in at.warning)  # declared but absent
    assert len(open_tab(at, "Words").get("image")) == 5
    # its Lengths open at the max length `auto` picks, the Data page's 512, not a fixed 128 (issue 95 item 8)
    assert open_tab(at, "Lengths").number_input(key="ex_maxlen").value == 512
    kl_metric = [m for m in open_tab(at, "Train/test shift").metric if m.label.startswith("KL")]
    assert kl_metric and float(kl_metric[0].value.split()[0]) > 0


def test_changing_max_length_updates_truncation(small_builtin):
    at = open_tab(open_page("pages/explore.py", small_builtin), "Lengths")
    before = at.metric[0].value
    at.number_input(key="ex_maxlen").set_value(16).run()
    assert not at.exception
    assert at.metric[0].value == "100.0%" != before
    # bins of 16 tokens on multiples of 16: the cut at 16 is the first edge, marked by its rule, not a caption
    assert not any("lies before the bars" in c.value for c in at.caption)
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/explore.py").run()  # a visit elsewhere keeps the open tab and the page's settings
    assert at.number_input(key="ex_maxlen").value == 16 and at.metric[0].value == "100.0%"


@pytest.mark.slow
def test_the_home_page_loads_what_the_next_page_imports_in_the_background(tmp_path):
    """The Data page's first open spent 3.5 of its 4 s importing transformers; Home, which imports none of it, starts
    that import while the user reads it. A fresh interpreter, since this one has long imported them."""
    code = ("import sys, threading; from streamlit.testing.v1 import AppTest; "
            "from core.environment import HEAVY_MODULES;AppTest.from_file('app.py', default_timeout=180).run();"
            "[t.join() for t in threading.enumerate() if t.name == 'preload'];"
            "print(all(m in sys.modules for m in HEAVY_MODULES))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "STUDIO_HOME": str(tmp_path)}, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "True", out.stderr[-2000:]


def test_data_page_keeps_previous_dataset_on_bad_path(small_builtin):
    at = open_page("pages/data.py", small_builtin)
    at.text_input(key="lp_train").set_value("/no/such/file.jsonl")  # a form: sent with its button
    at.button(key="lp_load").click().run()
    assert not at.exception
    assert "File not found" in at.error[0].value
    assert f"**{small_builtin.name}** is still the loaded dataset" in at.error[0].value  # the Current line's
    assert at.session_state["dataset"] is small_builtin and at.text_input(key="lp_train").value == "/no/such/file.jsonl"
    assert at.text_input(key="lp_train").form_id == "lp_form"  # a form: Enter in the field loads (tests/test_browser)
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/data.py").run()
    assert "File not found" in at.error[0].value  # still said while the field holds the failed path
    at.button(key="bi_load").click().run()  # the next load that works clears it
    assert not at.error


def test_a_second_failed_load_replaces_the_first_ones_message(small_builtin, tmp_path):
    """Issue 61: after a bad path, a bad file showed its error while the old banner, about another file, stayed;
    and "Save the file as UTF-8.." ended in two stops."""
    latin = tmp_path / "latin.csv"
    latin.write_bytes("text,label\ncafé,0\n".encode("latin-1"))
    at = open_page("pages/data.py", small_builtin)
    at.text_input(key="lp_train").set_value("/no/such/file.jsonl")
    at.button(key="lp_load").click().run()
    at.text_input(key="lp_train").set_value(str(latin))
    at.button(key="lp_load").click().run()
    assert len(at.error) == 1 and "latin.csv is not UTF-8 text" in at.error[0].value
    assert "File not found" not in at.error[0].value and ".." not in at.error[0].value


def test_data_page_loads_local_m4_file(m4_dir, small_builtin):
    at = open_page("pages/data.py", small_builtin)
    # a path relative to where the server runs is kept from the root, as runs store it
    at.text_input(key="lp_train").set_value(os.path.relpath(m4_dir / "train.jsonl"))  # a form: sent with its button
    at.text_input(key="lp_test").set_value(str(m4_dir / "dev.jsonl"))  # a form: sent with its button
    at.button(key="lp_load").click().run()
    assert not at.exception and at.success
    assert at.session_state["dataset"].name == "m4-sample"
    assert at.session_state["dataset"].spec.train == str((m4_dir / "train.jsonl").resolve())
    warnings = " ".join(w.value for w in at.warning)  # the check after loading
    assert "absent from every split: bloomz" in warnings
    # what the max length cuts: the figure the Train page gives, at the length `auto` picks
    assert any(c.value.startswith(
        "Max length for MiniLM (bundled), the default backbone — auto: 512 tokens, the smallest of 128, 256, 512 that "
        "cuts at most 25% of the training texts (14.1% of the 128 training texts cut). The Train page says it")
        for c in at.caption)
    assert {"**First train rows**", "**Label ids**", "**Texts per class and split**"} <= {m.value for m in at.markdown}


def test_the_checks_class_names_are_whole(small_builtin, tmp_path):
    """Issue 61: the Data check cut "gpt-3.5-turbo" to "gpt-3.5-tu" in its texts per class and split."""
    import json

    names = ("gpt-3.5-turbo", "llama-3-70b-instruct")
    for split in ("train", "test"):
        (tmp_path / f"{split}.csv").write_text("text,label\n" + "".join(
            f"a {split} text number {i} by {name},{name}\n" for i in range(4) for name in names))
    at = open_page("pages/data.py", small_builtin)
    at.text_input(key="lp_train").set_value(str(tmp_path / "train.csv"))
    at.text_input(key="lp_test").set_value(str(tmp_path / "test.csv"))
    at.button(key="lp_load").click().run()
    counts = next(d for d in at.dataframe if set(names) <= set(d.value.iloc[:, 0]) and "train" in d.value.columns)
    width = json.loads(counts.proto.columns)[counts.value.columns[0]]["width"]
    assert width >= 9 * len("llama-3-70b-instruct")


def test_a_dataset_without_test_rows_asks_before_it_replaces_one_with_them(m4_dir, small_builtin):
    """A 2-row CSV replaced the loaded workspace with only warnings."""
    at = open_page("pages/data.py", small_builtin)
    # no test file given
    at.text_input(key="lp_train").set_value(str(m4_dir / "train.jsonl"))  # a form: sent with its button
    at.button(key="lp_load").click().run()
    assert not at.exception and at.session_state["dataset"] is small_builtin  # not replaced yet
    question = next(w.value for w in at.warning if "has no test rows" in w.value)
    assert f"Replace **{small_builtin.name}** ({len(small_builtin.test):,} test rows)" in question
    at.button(key="dt_keep").click().run()
    assert at.session_state["dataset"] is small_builtin and not any("has no test rows" in w.value for w in at.warning)
    at.button(key="lp_load").click().run()
    at.button(key="dt_replace").click().run()
    assert not at.exception and at.session_state["dataset"].name == "m4-sample"
    assert at.session_state["dataset"].test is None and "Loaded m4-sample" in at.success[0].value


@pytest.mark.parametrize("key", ["cl_lower"])
def test_cleaning_toggle_is_kept_in_session(key, small_builtin):
    at = open_page("pages/data.py", small_builtin)
    at.toggle(key=key).set_value(True).run()
    assert at.session_state["cleaning"].lowercase


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def test_a_loaded_dataset_and_its_cleaning_outlive_the_session(m4_dir):
    """A reload starts a new session: it must open on the data the user loaded, not the built-in corpus.
    (AppTest does not render the sidebar; the browser test checks it there, before and after a reload.)"""
    at = open_page("pages/data.py")
    at.text_input(key="lp_train").set_value(str(m4_dir / "train.jsonl"))  # a form: sent with its button
    at.text_input(key="lp_test").set_value(str(m4_dir / "dev.jsonl"))  # a form: sent with its button
    at.button(key="lp_load").click().run()
    assert not at.exception and "Loaded m4-sample" in at.success[0].value
    assert any(c.startswith("Current: **m4-sample**") for c in captions(at))
    at.toggle(key="cl_lower").set_value(True).run()
    assert at.session_state["cleaning"].lowercase

    again = open_page("pages/train.py")  # a new session on the same studio home
    assert again.session_state["dataset"].name == "m4-sample" and again.session_state["cleaning"].lowercase
    assert any(c.startswith("Data: **m4-sample**") for c in captions(again))
    data = open_page("pages/data.py")  # the new session's Data page names the files it reads, and offers them again
    spec = data.session_state["dataset"].spec
    assert spec.train.endswith("m4-sample/train.jsonl") and f"train: `{spec.train}`" in " ".join(captions(data))
    assert (data.text_input(key="lp_train").value, data.text_input(key="lp_test").value) == (spec.train, spec.test)


def test_a_workspace_whose_files_are_gone_falls_back_to_the_built_in_corpus(tmp_path, studio_home):
    from core.data import CleaningConfig
    from core.runs import Registry, Workspace, remember

    remember(Registry(studio_home), Workspace(DataSpec(train=str(tmp_path / "gone.jsonl")), CleaningConfig()))
    at = open_page("pages/home.py")
    assert at.session_state["dataset"].synthetic
    assert "could not be loaded again" in at.warning[0].value and "gone.jsonl" in at.warning[0].value


def test_a_file_name_is_shown_as_written_never_as_markdown_or_two_lines(tmp_path, capsys, studio_home):
    """Issue 95 item 13: a dataset named `![x](http:\\…)` became an <img> in the sidebar on every page and on the
    Train page (Home escaped it), and a path holding a newline kept it in the run name and broke `core runs`."""
    from core.cli import main
    from core.data import load_dataset

    folder = tmp_path / "![x](http:\\\\example.invalid\\x.png)\nsecond line"
    folder.mkdir()
    for split in ("train", "test"):
        (folder / f"{split}.csv").write_text("text,label\n" + "".join(
            f"a {split} text number {i} of {c},{c}\n" for i in range(4) for c in ("a", "b")))
    ds = load_dataset(DataSpec(train=str(folder / "train.csv"), test=str(folder / "test.csv")), studio_home)
    assert "\n" not in ds.name and ds.name.startswith("![x]")
    assert main(["train", "--train", str(folder / "train.csv"), "--test", str(folder / "test.csv"),
                 "--method", "tfidf-lr", "--per-class", "2"]) == 0  # a run named after it, on Compare and Classify
    for page in ("pages/home.py", "pages/data.py", "pages/explore.py", "pages/train.py", "pages/compare.py",
                 "pages/classify.py"):
        at = open_page(page, ds)
        shown = [re.sub(r"(`+).*?\1", "", e.value)  # what a code span holds is shown as written
                 for e in (*at.caption, *at.markdown, *at.info, *at.warning, *at.success)]
        assert not [v for v in shown if "![x](" in v or "\n" in v], page  # escaped: `!\[x\](`, one line
    capsys.readouterr()
    assert main(["runs"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2  # the header and the run, one line each
