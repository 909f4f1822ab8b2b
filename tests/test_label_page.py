"""The Label page (issue 96): each label saved at once, found by a fresh session, taken back, exported and loaded as
the dataset; a file without labels starts a session."""

from __future__ import annotations

import pytest

from core.label import session as sessions
from tests.helpers import open_page

pytestmark = pytest.mark.slow  # a whole page, encoding its corpus: over 8 s each


def labels_line(at) -> str:
    """The labels so far, a class and its count joined by a no-break space (one line whatever the width)."""
    return next(m.value for m in at.markdown if "label(s)**" in m.value).replace("\u00a0", " ")


def test_each_label_is_saved_at_once_and_a_fresh_session_finds_it(small_builtin, studio_home):
    at = open_page("pages/label.py", small_builtin)
    shown = next(c.value for c in at.caption if c.value.startswith("Text "))
    assert labels_line(at).startswith("**0 label(s)** of 360 texts")
    at.button(key="lb_class_1").click().run()
    assert not at.exception, at.exception
    s = sessions.sessions(studio_home)[0]
    assert list(sessions.given(studio_home, s).values()) == ["chatGPT"]  # on disk before the next click
    assert list(sessions.given(studio_home, s))[0] == shown.removeprefix("Text ")
    again = open_page("pages/label.py", small_builtin)  # a reload: a new session of the app
    assert labels_line(again).startswith("**1 label(s)**") and "chatGPT 1" in labels_line(again)
    again.button(key="lb_undo").click().run()
    assert labels_line(again).startswith("**0 label(s)**") and not sessions.given(studio_home, s)


def test_a_click_labels_the_text_it_was_shown_beside(small_builtin, studio_home):
    """Another tab labels the text first: the click still names the text this tab showed, not the next one."""
    at = open_page("pages/label.py", small_builtin)
    shown = next(c.value for c in at.caption if c.value.startswith("Text ")).removeprefix("Text ")
    s = sessions.sessions(studio_home)[0]
    sessions.label(studio_home, s, shown, "human")  # the other tab
    at.button(key="lb_class_2").click().run()
    assert sessions.given(studio_home, s) == {shown: "cohere"}


def test_the_labels_load_as_the_dataset_the_train_page_reads(small_builtin, studio_home):
    at = open_page("pages/label.py", small_builtin)
    assert at.button(key="lb_export").disabled  # no labels of two classes yet
    for i in range(4):
        at.button(key=f"lb_class_{i % 2}").click().run()
    assert any("The model's guess" in c.value for c in at.caption)
    assert any("Accuracy on 120 labeled test texts" in m.label for m in at.metric)
    at.button(key="lb_export").click().run()
    assert not at.exception, at.exception
    ds = at.session_state["dataset"]
    assert len(ds.train) == 4 and len(ds.unlabeled) == 356 and len(ds.test) == 120
    assert ds.name.startswith("labels-")
    assert any("Loaded labels-" in s.value for s in at.success)
    assert labels_line(at).startswith("**4 label(s)** of 360 texts")  # labeling goes on in the corpus they came from
    assert any("labeling goes on in the texts they came from" in c.value for c in at.caption)
    at.switch_page("pages/train.py").run()
    assert not at.exception, at.exception


def test_simulated_strategies_are_kept_and_compare_draws_them(small_builtin, studio_home):
    at = open_page("pages/label.py", small_builtin)
    at.multiselect(key="lb_sim_strategies").set_value(["random", "stratified"]).run()
    at.number_input(key="lb_sim_seeds").set_value(2).run()
    at.number_input(key="lb_sim_budget").set_value(30).run()
    at.button(key="lb_simulate").click().run()
    assert not at.exception, at.exception
    assert any("4 simulation(s) kept" in s.value for s in at.success)
    at.switch_page("pages/compare.py").run()  # no run yet: the simulations are drawn all the same
    assert not at.exception, at.exception
    assert any("Random (unstratified) (2 seeds)" in m.value for m in at.markdown), [m.value for m in at.markdown]
    assert len(at.get("vega_lite_chart")) == 1


def test_a_file_without_labels_starts_a_labeling_session(small_builtin, studio_home):
    at = open_page("pages/label.py", small_builtin)
    at.radio(key="lb_source").set_value("file").run()
    raw = "".join(f'{{"text": "text number {i} by someone"}}\n' for i in range(8)).encode()
    at.file_uploader(key="lb_upload").set_value(("texts.jsonl", raw, "application/json")).run()
    assert any("Name the classes" in i.value for i in at.info)
    at.text_input(key="lb_classes").set_value("human, machine").run()
    assert not at.exception, at.exception
    assert labels_line(at).startswith("**0 label(s)** of 8 texts")
    assert any("No labeled test split" in c.value for c in at.caption)
    at.button(key="lb_class_1").click().run()
    assert list(sessions.given(studio_home, sessions.sessions(studio_home)[0]).values()) == ["machine"]
