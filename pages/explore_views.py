"""The Explore page's export: the report `core explore` writes, built on request and downloaded as one file."""

import re

import streamlit as st

from core.backbone.encode import load_tokenizer
from core.data import Dataset
from core.explore import VIEWS, report_html

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
