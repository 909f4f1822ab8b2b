"""Home: what the studio is, the current dataset, recent runs, and where to go next (the device is in the
sidebar)."""

import streamlit as st

from core import compare
from core.runs import pump

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
ds = st.session_state.dataset

st.title("GAN-BERT Studio")
st.markdown(
    "Who wrote this text: a person, or which language model? The studio explores a labeled corpus and "
    "trains classifiers that learn from **few labels** (BERT fine-tuning, adapters, GAN-BERT)."
)

c1, c2 = st.columns([3, 2])
with c1:
    st.subheader("Current dataset")
    if ds.synthetic:
        st.info("This is the **built-in synthetic corpus**: six invented writers named after the SemEval-2024 "
                "Task 8 Subtask B classes, so the studio works offline. Load the official files on the Data page.")
    absent = ds.absent  # counted once
    pronoun = "it" if len(absent) == 1 else "them"
    missing = f" ({', '.join(absent)} without train texts: no model learns {pronoun})" if absent else ""
    st.markdown(f"**{ds.name}** — {len(ds.labels)} classes{missing}")
    st.dataframe(ds.class_counts(), width="content", placeholder="–")
with c2:
    st.subheader("Recent runs")
    registry = st.session_state.registry
    pump(registry)
    runs = registry.list()
    recent, names = runs[-5:][::-1], compare.distinct_names(runs)
    if not recent:
        st.caption("No runs yet: start one on the Train page.")
    for run in recent:
        test = (run.metrics or {}).get("test", {})
        score = f" · macro-F1 {test['macro_f1']:.3f}" if test else ""
        st.markdown(f"`{run.status}` {names[run.id]}{score}")

st.subheader("Next steps")
st.page_link("pages/data.py", label="Load a dataset (official Subtask B files, JSONL, CSV or Parquet)",
             icon=":material/folder_open:")
st.page_link("pages/explore.py", label="Explore lengths, words, maps and train/test shift", icon=":material/query_stats:")
st.page_link("pages/train.py", label="Train low-label classifiers in the background", icon=":material/model_training:")
st.page_link("pages/compare.py", label="Compare runs against the labeled fraction", icon=":material/compare_arrows:")
st.page_link("pages/classify.py", label="Classify a text with a trained model", icon=":material/label:")
