"""The Label page's parts: where the texts come from, the features with their progress, the labels so far, the
text to label, and the export."""

from pathlib import Path

import streamlit as st

from core.backbone import cached_models
from core.backbone.packaged import installed_packaged
from core.data import MAX_FILE_BYTES, ColumnMapping, DataSpec, declared_labels, load_texts, store_upload
from core.label.features import feature_config, features
from core.label.rounds import Labeling, Round
from core.label.simulate import schedule, simulate
from core.label.simulations import keep
from core.label.strategies import STRATEGIES
from core.train.feature_store import cached_share, feature_store
from pages.backbone_views import converted
from pages.markdown import plain

SIMULATION_START = schedule(1000)[0]  # a simulation's first batch


def source_spec(home) -> DataSpec | None:
    """The loaded dataset's texts (its labels never shown), or a file of texts whose classes the user names."""
    ds = st.session_state.dataset
    # fixed words: a label naming the dataset changed with it and the kept choice showed unselected
    choice = st.radio("Texts to label", ["loaded", "file"], horizontal=True, key="lb_source", persist_state="session",
                      format_func={"loaded": "The loaded dataset's train texts (their labels kept hidden)",
                                   "file": "A file of texts (no labels needed)"}.get)
    if choice == "loaded":
        return ds.spec
    left, right = st.columns([3, 2])
    upload = left.file_uploader("JSONL, CSV or Parquet", type=["jsonl", "json", "csv", "parquet"], key="lb_upload",
                                max_upload_size=MAX_FILE_BYTES // 2**20)
    text_col = right.text_input("Text column", value="text", key="lb_text_col", persist_state="session")
    classes = right.text_input("Classes, comma-separated", key="lb_classes", persist_state="session",
                               placeholder="human, chatGPT, cohere")
    if upload is None:
        st.info("Upload a file of texts: one text a row, in a column named as above. Labels are not needed.")
        return None
    if len(declared_labels(classes) or ()) < 2:
        st.info("Name the classes you will label with, at least two, comma-separated.")
        return None
    path = store_upload(upload.getvalue(), upload.name, home / "uploads")
    return DataSpec(train=str(path), mapping=ColumnMapping(text=text_col.strip() or "text"),
                    labels=declared_labels(classes))


@st.cache_resource(show_spinner="Reading the texts…", max_entries=4)
def corpus(key: str, _spec: DataSpec, home: Path):
    return load_texts(_spec, home)


def backbone_choice() -> str | None:
    names = {**installed_packaged(), **{m.hub_id: m.label for m in cached_models()}}
    choice = st.selectbox("Features of", list(names), format_func=names.get, key="lb_backbone",
                          persist_state="session", help="The frozen features the strategy scores texts on and the "
                          "guess is made from: the same store the runs' features come from.")
    converted(choice, st.session_state.registry.home)
    return choice


def labeling(ds, backbone: str | None, home) -> Labeling:
    """The texts' features, encoded with a bar where the store lacks them, then the session's labeling (kept per
    server for the dataset and backbone). Once this session has it, a click reads neither the tokenizer (max length
    `auto`) nor the store's hashes again."""
    ready = st.session_state.setdefault("lb_ready", set())
    key = (ds.fingerprint, backbone)
    config = config_for(ds.fingerprint, backbone, ds, home)
    if key not in ready:
        texts = ds.train["text"].tolist() + (ds.test["text"].tolist() if ds.test is not None else [])
        store = feature_store(home, config.resolved_backbone(home), config.max_len, config.resolved_pooling,
                              config.precision == "bf16", config.encoder_engine)
        if cached_share(store, texts) < 1:
            bar = st.progress(0.0, text="Encoding the texts' features, once: later sessions read them from the "
                                        "store…")
            features(config, ds, home, lambda done, total: bar.progress(
                done / max(total, 1), text=f"Encoding the texts' features, once: {done:,} of {total:,} texts…"))
            bar.empty()
    lab = prepared(ds.fingerprint, backbone, config, ds, home)
    ready.add(key)
    return lab


@st.cache_resource(show_spinner="Reading the backbone's tokenizer…", max_entries=4)
def config_for(fingerprint: str, backbone: str | None, _ds, home: Path):
    return feature_config(_ds, backbone, home)


@st.cache_resource(show_spinner="Reading the features…", max_entries=2)
def prepared(fingerprint: str, backbone: str | None, _config, _ds, home: Path) -> Labeling:
    pool, test = features(_config, _ds, home)
    return Labeling(_ds, pool, test)


def progress(r: Round, lab: Labeling) -> None:
    left, right = st.columns([3, 2])
    left.markdown(f"**{len(r.labels)} label(s)** of {len(lab.ids):,} texts · " + " · ".join(  # a class and its
        f"{plain(name)}\u00a0{n}" for name, n in r.per_class.items()))  # count on one line
    if r.scores:
        right.metric(f"Accuracy on {r.scores.n:,} labeled test texts", f"{r.scores.accuracy:.3f}",
                     help=f"A logistic regression on these labels' features; macro-F1 {r.scores.macro_f1:.3f}.")
    elif lab.ds.test is None:
        right.caption("No labeled test split: the accuracy the labels reach is not measured.")
    else:
        right.caption("The accuracy shows once two classes have a label.")


def text_card(r: Round, lab: Labeling) -> None:
    st.caption(f"Text {plain(lab.ids[r.next])}")
    with st.container(border=True, height=360):  # a long text scrolls inside, the buttons stay in sight
        st.text(lab.ds.train["text"].iloc[r.next])
    if r.guess is None:
        st.caption("No guess yet: the model needs labels of two classes.")
    else:
        best = int(r.guess.argmax())
        st.caption(f"The model's guess: **{plain(lab.classes[best])}** ({r.guess[best]:.0%}), from "
                   f"{len(r.labels)} label(s).")


def simulate_section(home, session, lab: Labeling) -> None:
    """Strategies run with the corpus's own train labels as the oracle, kept for Compare's chart."""
    known = lab.ds.train["label"].to_numpy()
    if (known >= 0).sum() < SIMULATION_START or not (lab.test_y >= 0).any():  # too few answers to start on
        return
    with st.expander("Simulate strategies with this corpus's own labels"):
        st.caption("What each strategy would have reached, label by label, had you labeled the texts it picks: the "
                   "corpus's train labels answer, the test split scores. A simulation picks its first 10 texts "
                   "together, then 5 at a time up to 100 labels and 25 at a time beyond; this page picks one text at "
                   "a time, so a session's texts and accuracy differ from a simulation's. Compare draws them over "
                   "seeds (with 2 or 3 the intervals are wide; 5 make them useful).")
        left, middle, right = st.columns([3, 1, 1])
        chosen = left.multiselect("Strategies", list(STRATEGIES), default=["random", "stratified", "margin"],
                                  format_func=lambda n: STRATEGIES[n].title, key="lb_sim_strategies", wrap=True)
        seeds = int(middle.number_input("Seeds", 1, 10, 3, key="lb_sim_seeds"))
        answers = int((known >= 0).sum())
        budget = int(right.number_input("Labels", SIMULATION_START, answers, min(200, answers), key="lb_sim_budget"))
        if st.button("Simulate", key="lb_simulate", disabled=not chosen):
            bar, runs = st.progress(0.0), [(name, seed) for name in chosen for seed in range(seeds)]
            for i, (name, seed) in enumerate(runs):
                points = simulate(lab.space, known, lab.test_x, lab.test_y, len(lab.classes), name, seed, budget,
                                  on_progress=lambda done, total, i=i, name=name, seed=seed: bar.progress(
                                      (i + done / total) / len(runs), text=f"{STRATEGIES[name].title}, seed {seed}: "
                                      f"round {done} of {total}"))
                keep(home, session, name, session.backbone, seed, points)
            bar.empty()
            st.success(f"{len(runs)} simulation(s) kept: the Compare page draws them.")
