"""Classify: try one or more finished runs on a text, or a whole file."""

import random

import pandas as pd
import streamlit as st

from core.compare import charts
from core.data import MAX_FILE_BYTES, load_frame
from core.errors import InputError
from core.train import classify

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
registry = st.session_state.registry


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def model_for(run_id: str):
    return registry.folder(run_id).load_model()


st.title("Classify")
done = [r for r in registry.list(statuses=("done",))]
if not done:
    st.info("No finished runs yet. Train a model on the Train page, then come back.")
    st.stop()
names = {r.id: f"{r.label} · test macro-F1 {(r.metrics or {}).get('test', {}).get('macro_f1', float('nan')):.3f}"
         for r in done}
picked = st.multiselect("Models", list(names), default=[done[-1].id], format_func=names.get, key="cl_runs")

ds = st.session_state.dataset
if st.button("Draw a random test example", key="cl_draw", disabled=ds.test is None):
    row = ds.test.iloc[random.randrange(len(ds.test))]
    st.session_state.cl_text = row["text"]
    st.session_state.cl_truth = ds.labels[row["label"]] if row["label"] >= 0 else None
text = st.text_area("Text", key="cl_text", height=160, placeholder="Type or paste a text…")
if st.session_state.get("cl_truth") and text:
    st.caption(f"True label of the drawn example: **{st.session_state.cl_truth}**")

if text.strip() and picked:
    cols = st.columns(min(3, len(picked)))
    for i, run_id in enumerate(picked):
        model = model_for(run_id)
        pred = classify(model, [text])[0]
        with cols[i % len(cols)]:
            st.markdown(f"**{registry.get(run_id).label}**")
            st.metric("Predicted", pred.label)
            st.altair_chart(charts.probabilities(pred.probabilities, model.labels))
            fake = f" · fake-class probability {pred.fake_probability:.1%}" if pred.fake_probability is not None else ""
            st.caption(f"{pred.seconds * 1000:.0f} ms{fake}")

st.subheader("Batch")
upload = st.file_uploader("A JSONL, CSV or Parquet file with a text column (labels optional)",
                          type=["jsonl", "json", "csv", "parquet"], key="cl_upload",
                          max_upload_size=MAX_FILE_BYTES // 2**20)
if upload is not None and picked:
    try:
        frame, _ = load_frame(upload.getvalue(), upload.name, require_labels=False)
    except InputError as e:
        st.error(f"Could not read this file: {e}")
    else:
        model = model_for(picked[0])
        bar = st.progress(0.0, text=f"Classifying {len(frame):,} texts with {registry.get(picked[0]).label}…")
        preds = []
        for start in range(0, len(frame), 64):
            preds += classify(model, frame["text"].iloc[start:start + 64].tolist())
            bar.progress(min(1.0, (start + 64) / len(frame)))
        out = pd.DataFrame({"id": frame["id"], "predicted": [p.label for p in preds]})
        for name in model.labels:
            out[f"p_{name}"] = [p.probabilities[name] for p in preds]
        st.dataframe(out.head(20), hide_index=True)
        st.download_button("Download predictions (CSV)", out.to_csv(index=False), "predictions.csv", "text/csv",
                           key="cl_csv")
