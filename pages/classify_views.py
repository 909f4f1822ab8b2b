"""Classify's callbacks and views: a drawn test example, and a prediction's probabilities with the classes the
model cannot predict."""

import random

import streamlit as st

from core.compare import charts
from core.train import unlearned_note
from pages.markdown import plain


def draw_example(test) -> None:
    """A random test text into the text field, with its true label."""
    row = test.iloc[random.randrange(len(test))]
    st.session_state.cl_text = row["text"]
    st.session_state.cl_drawn = (row["text"], st.session_state.dataset.labels[row["label"]] if row["label"] >= 0
                                 else None)


def probabilities(prediction, model_labels: tuple[str, ...], dataset_labels: tuple[str, ...]) -> None:
    """The class probabilities, and a caption naming the dataset's classes the model never had a labeled row of:
    they are not among its bars, and a text of one of them is always an error (TREC's fine classes)."""
    st.altair_chart(charts.probabilities(prediction.probabilities, model_labels, dataset_labels))
    if note := unlearned_note(model_labels, dataset_labels):
        st.caption(plain(note))


def strongest_tokens(why) -> str:
    """An explanation's strongest tokens toward its label and against it, quoted (a token may be a comma), as plain
    text: a label or a token may hold what Markdown reads."""
    def listed(toward: bool) -> str:
        return ", ".join(f"“{t['token']}” ({t['score']:+.3f})" for t in why.top(toward))
    return plain(f"{why.method}: toward {why.label}, {listed(True)}; against: {listed(False)}")
