"""GAN-BERT Studio: navigation and the shared sidebar (current dataset, device)."""

import streamlit as st

import core  # noqa: F401  (sets the offline environment before anything loads a model)
from core.backbone import describe_device
from core.cleaning import CleaningConfig
from core.data import builtin_dataset

st.set_page_config(page_title="GAN-BERT Studio", page_icon=":material/fingerprint:", layout="wide")


@st.cache_resource(show_spinner="Generating the built-in synthetic corpus…")
def default_dataset():
    return builtin_dataset()


@st.cache_resource
def device() -> str:
    return describe_device()


if "dataset" not in st.session_state:
    st.session_state.dataset = default_dataset()
if "cleaning" not in st.session_state:
    st.session_state.cleaning = CleaningConfig()

pages = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/data.py", title="Data", icon=":material/folder_open:"),
    st.Page("pages/explore.py", title="Explore", icon=":material/query_stats:"),
    st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("pages/classify.py", title="Classify", icon=":material/label:"),
]
nav = st.navigation(pages)

with st.sidebar:
    ds = st.session_state.dataset
    st.markdown("**Dataset**")
    st.caption(ds.name + (" — synthetic, for trying the studio offline" if ds.synthetic else ""))
    st.caption(" · ".join(f"{split} {len(frame):,}" for split, frame in ds.splits.items()))
    if st.session_state.cleaning.active:
        st.caption("Cleaning on: " + ", ".join(k.replace("_", " ") for k, v in vars(st.session_state.cleaning).items() if v))
    st.markdown("**Device**")
    st.caption(device())

nav.run()
