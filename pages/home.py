"""Home: what the studio is, the current dataset, and where to go next."""

import streamlit as st

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
ds = st.session_state.dataset

st.title("GAN-BERT Studio")
st.markdown(
    "Who wrote this text: a person, or which language model? The studio explores a labeled corpus and "
    "trains classifiers that learn from **few labels** (BERT fine-tuning, adapters, GAN-BERT)."
)

st.subheader("Current dataset")
if ds.synthetic:
    st.info("This is the **built-in synthetic corpus**: six invented writers named after the SemEval-2024 "
            "Task 8 Subtask B classes, so the studio works offline. Load the official files on the Data page.")
st.markdown(f"**{ds.name}** — {len(ds.labels)} classes")
st.dataframe(ds.class_counts(), width="content")

st.subheader("Next steps")
st.page_link("pages/data.py", label="Load a dataset (official Subtask B files, JSONL, CSV or Parquet)", icon=":material/folder_open:")
st.page_link("pages/explore.py", label="Explore lengths, words, maps and train/test shift", icon=":material/query_stats:")
