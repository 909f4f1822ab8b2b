"""Home: what the studio is, the current dataset, recent runs, and where to go next (the device is in the
sidebar)."""

import streamlit as st

from core import compare
from core.runs import ACTIVE, Status, pump
from pages.markdown import plain

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
ds = st.session_state.dataset

st.title("GAN-BERT Studio")
st.markdown(
    "Who wrote this text: a person, or which language model? The studio explores a labeled corpus and trains "
    "classifiers that learn from **few labels**: BERT fine-tuning, adapters, LoRA and GAN-BERT (with its control, the "
    "same model without the adversarial game), beside SetFit, the few-shot method practitioners reach for, and the "
    "converged references they must beat (TF-IDF + LR, frozen features + LR). It can also adapt the backbone to a "
    "corpus's unlabeled texts first."
)

c1, c2 = st.columns([3, 2])
with c1:
    st.subheader("Current dataset")
    if ds.synthetic:
        st.info("This is the **built-in synthetic corpus**: six invented writers named after the SemEval-2024 "
                "Task 8 Subtask B classes, so the studio works offline. Load the official files on the Data page.")
    st.markdown(f"**{plain(ds.name)}** — {len(ds.labels)} classes")
    if note := ds.absent_note():
        st.caption(plain(note))
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
        score = (f" · accuracy {test['accuracy']:.3f}, macro-F1 {test['macro_f1']:.3f}"  # the verdict's too
                 if test else "")
        st.markdown(f"`{run.status}` {plain(names[run.id])}{score}")

st.subheader("Next steps")
here = [r for r in runs if r.config.data == ds.spec.absolute()]  # the current dataset's runs (stored from the root)
going, done = [r for r in here if r.status in ACTIVE], [r for r in here if r.status == Status.DONE]
if ds.synthetic:
    st.page_link("pages/data.py", label="Load your corpus: the official Subtask B files, or JSONL, CSV or Parquet "
                                        "(the built-in one is synthetic)", icon=":material/folder_open:")
if not here:
    st.page_link("pages/explore.py", label=f"Explore {plain(ds.name)}: lengths, words, maps, train/test shift",
                 icon=":material/query_stats:")
    st.page_link("pages/train.py", label=f"Train your first runs on {plain(ds.name)} (frozen features take minutes "
                                         "on a CPU)", icon=":material/model_training:")
if going:
    st.page_link("pages/train.py", label=f"Watch the {len(going)} run(s) going", icon=":material/model_training:")
if done:
    summary = compare.summarize(compare.runs_frame(done), "accuracy", compare.METRICS)
    newest = max(done, key=lambda r: r.ended or 0).config.amount  # the amount of the run that ended last
    found = summary.verdicts[summary.verdicts["amount"] == newest]
    if not found.empty:
        st.markdown(f"Latest verdict (test accuracy): {compare.verdict_line(found.iloc[0].to_dict())}")
    st.page_link("pages/compare.py", label=f"Compare the {len(done)} finished run(s) on {plain(ds.name)}",
                 icon=":material/compare_arrows:")
    st.page_link("pages/classify.py", label="Classify a text with one of them", icon=":material/label:")
