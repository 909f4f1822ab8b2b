"""Classify's callbacks and views: a drawn test example, a prediction's probabilities with the classes the
model cannot predict, its explanation, and a batch file's column mapping."""

import random

import streamlit as st

from core.compare import charts
from core.data import ColumnMapping, columns_of
from core.train import explain, unlearned_note
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


KEPT = 64  # explanations kept in a session: a rerun (a toggle, a new model) shows them again at once


def explanation(model, run_id: str, text: str):
    """The model's explanation of its prediction on `text`, with a bar over integrated gradients' steps: 36 s for
    SmolLM2 at 512 tokens on a CPU had passed under a spinner (issue 95 item 5). Kept in the session, not in a
    cached function, which would replay the bar into a later run."""
    kept = st.session_state.setdefault("cl_explained", {})
    if (run_id, text) not in kept:
        bar = st.progress(0.0, text="Attributing the prediction to tokens…")
        try:
            kept[(run_id, text)] = explain(model, text, on_progress=lambda done, total: bar.progress(
                done / total, text=f"Attributing the prediction to tokens: step {done} of {total} of integrated "
                                   "gradients…"))
        finally:
            bar.empty()
        while len(kept) > KEPT:
            kept.pop(next(iter(kept)))
    return kept[(run_id, text)]


def strongest_tokens(why) -> str:
    """An explanation's strongest tokens toward its label and against it, quoted (a token may be a comma), as plain
    text: a label or a token may hold what Markdown reads."""
    def listed(toward: bool) -> str:
        return ", ".join(f"“{t['token']}” ({t['score']:+.3f})" for t in why.top(toward))
    return plain(f"{why.method}: toward {why.label}, {listed(True)}; against: {listed(False)}")


def column_mapping(raw: bytes, name: str) -> ColumnMapping:
    """The file's own columns to choose from, preset to the usual names (afresh for every file)."""
    columns, file = columns_of(raw, name), f"{name}-{len(raw)}"
    usual = "text" in columns
    with st.expander("Column mapping", expanded=not usual):
        c1, c2, c3 = st.columns(3)
        text = c1.selectbox("Text column", columns, index=columns.index("text") if usual else 0,
                            key=f"cl_text_col_{file}")
        optional = [None, *columns]
        label = c2.selectbox("Label column (optional)", optional, key=f"cl_label_col_{file}",
                             index=optional.index("label") if "label" in columns else 0,
                             format_func=lambda c: "(none)" if c is None else c)
        ids = c3.selectbox("Id column (optional; else rows are numbered)", optional, key=f"cl_id_col_{file}",
                           index=optional.index("id") if "id" in columns else 0,
                           format_func=lambda c: "(none)" if c is None else c)
    return ColumnMapping(text=text, label=label, id=ids, source=None, split=None)
