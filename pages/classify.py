"""Classify: try one or more finished runs on a text, or a whole file."""

import math

import streamlit as st

from core import plotting
from core.compare import distinct_names
from core.data import MAX_FILE_BYTES, load_frame
from core.errors import InputError
from core.runs import Status
from core.train import (
    FAKE_MEANING,
    calibration,
    classify,
    classify_frame,
    download_stem,
    fake_class_note,
    is_subtask_b,
    jsonl_format,
    near_chance,
    readable_frame,
    submission_jsonl,
    unsure,
)
from pages import classify_views
from pages.markdown import plain

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
registry = st.session_state.registry


@st.cache_resource(show_spinner=False, max_entries=8)  # its spinner is drawn where the model is used
def model_for(run_id: str):
    return registry.folder(run_id).load_model(registry.home)


@st.cache_data(show_spinner=False, max_entries=64)
def calibration_for(run_id: str):
    """How far the run's probabilities held on its own test texts (None without scored predictions)."""
    folder = registry.folder(run_id)
    return calibration(folder.predictions()) if folder.has_predictions() else None


st.title("Classify")
finished = registry.list(statuses=(Status.DONE,))
done = [r for r in finished if registry.folder(r.id).has_checkpoint()]  # a restored record keeps no model
if not done:
    st.info("No finished runs with a saved model yet. Train a model on the Train page, then come back."
            if not finished else f"None of the {len(finished)} finished runs kept a saved model (its files were "
            "removed, or the run was restored from a record of its metrics). Train one on the Train page.")
    st.stop()
if len(done) < len(finished):
    st.caption(f"{len(finished) - len(done)} finished run(s) without a saved model (files removed, or restored "
               "from a record of their metrics) are not offered.")
distinct = distinct_names(registry.list())
tested = {r.id: (r.metrics or {}).get("test", {}) for r in done}
scores = {i: test.get("macro_f1", float("nan")) for i, test in tested.items()}
names = {i: f"{distinct[i]} · test accuracy {tested[i].get('accuracy', float('nan')):.3f}, macro-F1 {f1:.3f}"
         for i, f1 in scores.items()}  # both: the near-chance caution reads accuracy
ds = st.session_state.dataset
here = [r.id for r in done if r.config.data == ds.spec]  # runs on the current dataset come first
best = max(here or list(names), key=lambda i: -1.0 if math.isnan(scores[i]) else scores[i])  # offered first
# one choice per dataset: back on another, the models trained on it are offered afresh, not the last ones
picked = st.multiselect("Models", here + [i for i in names if i not in here], default=[best],
                        format_func=names.get, key=f"cl_runs_{ds.fingerprint}", persist_state="session")
elsewhere = [distinct[i] for i in picked if i not in here]
if st.button("Draw a random test example", key="cl_draw", disabled=ds.test is None,
             on_click=classify_views.draw_example, args=(ds.test,)) and elsewhere:
    trained = "they were" if len(elsewhere) > 1 else "it was"
    st.warning(f"Trained on another dataset than {plain(ds.name)}: {'; '.join(elsewhere)}. The drawn text comes from "
               f"this dataset's test split, not from the one {trained} trained on.")
# an explanation switched on follows each new text, typed or drawn (a walk had found it on and showing nothing)
text = st.text_area("Text", key="cl_text", height=160, placeholder="Type or paste a text…", persist_state="session")
drawn, truth = st.session_state.get("cl_drawn", (None, None))
if truth and text == drawn:  # not under a text the user typed since
    st.caption(f"True label of the drawn example: **{plain(truth)}**")

if text.strip() and picked:
    cols = st.columns(min(3, len(picked)))
    for i, run_id in enumerate(picked):
        with cols[i % len(cols)]:  # the spinner inside its column: drawn above the page's flow, it overlaid "Batch"
            st.markdown(f"**{plain(distinct[run_id])}**")
            with st.spinner("Loading the model…"):
                model = model_for(run_id)
                pred = classify(model, [text])[0]
            st.metric("Predicted", plain(pred.label))
            classify_views.probabilities(pred, model.labels, ds.labels)
            if caution := near_chance(tested[run_id].get("accuracy"), len(model.labels)):
                st.warning(caution)
            elif unsure(pred.probabilities):
                st.warning("Unsure: the top probability is close to uniform over the classes.")
            if (held := calibration_for(run_id)) is not None:  # how far its probabilities can be trusted
                (st.warning if held.overconfident else st.caption)(
                    f"Calibration: {held.sentence()}" + (". Overconfident: read its probabilities as a ranking of "
                                                         "the classes, not as chances." if held.overconfident else "."))
            if pred.fake_probability is not None:
                line, warning = fake_class_note(pred.fake_probability)
                st.markdown(line)
                st.caption(FAKE_MEANING)
                if warning:
                    st.warning(warning)
            st.caption(f"{pred.seconds * 1000:.0f} ms")
            if st.toggle(f"Why {plain(pred.label)}?", key=f"cl_why_{run_id}",
                         help="Token attributions (integrated gradients; n-gram weights for TF-IDF + LR; for "
                              "token-probability features, their statistics in words)"):
                try:
                    why = classify_views.explanation(model, run_id, text)
                except InputError as e:
                    st.info(str(e))
                    continue
                if shaded := why.as_html():
                    st.html(shaded)
                if why.words:  # a model reading token-probability statistics: what it saw, in sentences
                    st.markdown("\n".join(f"- {sentence}" for sentence in why.words))
                if why.unread_from is not None:
                    st.caption(f"The model reads the first {model.config.max_len} tokens (its max length); the "
                               "grey rest of the text played no part in this prediction.")
                st.caption(classify_views.strongest_tokens(why))

st.subheader("Batch")
TEST, UPLOAD = "test", "upload"
sources = [UPLOAD, TEST] if ds.test is not None and len(ds.test) else [UPLOAD]  # a file first: nothing runs
source = st.radio("Texts", sources, horizontal=True, key="cl_source", format_func=lambda s: (
    f"{plain(ds.name)}'s test split ({len(ds.test):,} texts)" if s == TEST else "a file"))
upload = st.file_uploader("A JSONL, CSV or Parquet file with a text column (labels optional)",
                          type=["jsonl", "json", "csv", "parquet"], key="cl_upload",
                          max_upload_size=MAX_FILE_BYTES // 2**20) if source == UPLOAD else None
if (upload is not None or source == TEST) and picked:
    try:
        if source == TEST:  # the loaded split itself: nothing to upload again
            frame, file_labels, key = ds.test, ds.labels, (TEST, ds.fingerprint)
        else:
            mapping = classify_views.column_mapping(upload.getvalue(), upload.name)
            frame, file_labels = load_frame(upload.getvalue(), upload.name, mapping, require_labels=False)
            key = (upload.file_id, mapping)
    except InputError as e:
        st.error(f"Could not read this file: {e}")
    else:
        # a file's predictions are kept for the session: a toggle elsewhere on the page classified it again
        batch = st.session_state.get("cl_batch")
        if batch is None or batch["file"] != key:
            batch = st.session_state.cl_batch = {"file": key, "runs": {}}
        of = download_stem(TEST if source == TEST else upload.name)  # two files' downloads had shared one name
        for run_id in picked:  # every selected model, each with its scores when the file has labels
            label = distinct[run_id]
            with st.spinner(f"Loading {label}…"):
                model = model_for(run_id)
            if run_id not in batch["runs"]:
                bar = st.progress(0.0, text=f"Classifying {len(frame):,} texts with {label}…")
                batch["runs"][run_id] = classify_frame(model, frame, file_labels, on_progress=lambda done, total:
                                                       bar.progress(done / total, text=f"Classifying with {label}: "
                                                                    f"{done:,} of {total:,}"))
                bar.empty()
            out, metrics = batch["runs"][run_id]
            st.markdown(f"**{plain(label)}**")
            if "unscored" in out.attrs:
                st.warning(out.attrs["unscored"])
            if metrics:
                st.caption(f"accuracy {metrics['accuracy']:.3f} · macro-F1 {metrics['macro_f1']:.3f} · "
                           f"{metrics['rows']:,} labeled rows")
                st.altair_chart(plotting.confusion(plotting.confusion_cells(metrics), metrics["classes"], label, False),
                                width="content")  # a step per class: stretched full width, cells turn to bands
            st.dataframe(readable_frame(out), hide_index=True, placeholder="–")  # at most 10 rows high, no filler
            c1, c2 = st.columns(2)
            c1.download_button("Download predictions (CSV: id, gold, predicted, probabilities)",
                               out.to_csv(index=False), f"predictions-{run_id}-{of}.csv", "text/csv",
                               key=f"cl_csv_{run_id}")
            c2.download_button("Download a SemEval submission (JSONL: id, label)" if is_subtask_b(model.labels) else
                               "Download predictions as JSONL (id, label: class names)",
                               submission_jsonl(out, frame, model.labels),
                               f"{'submission' if is_subtask_b(model.labels) else 'predictions'}-{run_id}-{of}.jsonl",
                               "application/jsonl", key=f"cl_jsonl_{run_id}", help=jsonl_format(model.labels))
            if frame.attrs.get("ids") == "row":
                st.caption("The file has no id column: the submission numbers its rows from 0.")
