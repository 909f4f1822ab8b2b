"""The Explore page's longer parts: its backbone-embedding map, and the report `core explore` writes, built on
request and downloaded as one file."""

import re

import streamlit as st

from core.backbone.encode import load_tokenizer
from core.data import Dataset
from core.explore import VIEWS, charts, report_html
from core.explore import stats as explore
from core.train.view_features import view_features

STEPS = dict(zip(VIEWS, ("counting lengths", "counting words", "counting word pairs", "counting word triples",
                         "weighing words for the clouds", "mapping the texts", "measuring the train/test shift",
                         "counting sources"))) | {"report": "drawing the charts and word clouds"}


def show_export(ds: Dataset, cache) -> None:
    """A button that builds the report (each step named as it runs) and, once built, its download."""
    held = f"ex_report_{ds.fingerprint}"
    if st.button("Build the HTML report", key="ex_build", help="The same self-contained report as `python -m core "
                 "explore`: every chart of this page, opened offline in any browser"):
        with st.status("Building the report…") as status:
            def step(name: str) -> None:
                status.update(label=f"Building the report: {STEPS.get(name, name)}…")
            st.session_state[held] = report_html(ds, load_tokenizer(), cache=cache, on_step=step)
            status.update(label="Report ready", state="complete", expanded=False)
    if held in st.session_state:
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", ds.name).strip("-.") or "dataset"
        st.download_button("Download the report (HTML)", st.session_state[held], file_name=f"explore-{name}.html",
                           mime="text/html", key="ex_download")


def show_embeddings(ds: Dataset, labels, cache) -> None:
    """The texts on the frozen features runs read, mapped by PCA, on request."""
    st.subheader("Backbone embeddings")
    e1, e2 = st.columns([2, 1])
    per_split = e2.number_input("Embedding sample per split", 100, 5000, 500, step=100, key="ex_emb_n",
                                persist_state="session")
    if e1.toggle("Map backbone embeddings too (PCA)", key="ex_emb", persist_state="session",
                 help="The frozen features runs read: texts a run encoded are read from its cache, the others "
                      "encoded once (1,500 took 17 s on 2 idle cores) and kept for the runs."):
        bar = st.progress(0.0, text="Reading the features runs have cached…")
        # not st.cache_data: it replays the bar's updates into a block a later page visit no longer has (an
        # error); core caches the map on disk, so a repeat call only reads it
        embed, features = view_features(ds.spec, st.session_state.registry.home,
                                        on_progress=lambda done, total: bar.progress(
            done / max(total, 1), text=f"Encoding {done:,} of the {total:,} texts no run has encoded yet"))
        emb = explore.embedding_map(ds, embed, features, per_split=int(per_split), cache=cache)
        bar.empty()
        st.altair_chart(charts.scatter_map(emb, labels, "Backbone features (as frozen runs read them), PCA"))
