"""GAN-BERT Studio: navigation first, then the session's state (registry, dataset), then the shared sidebar."""

from pathlib import Path

import streamlit as st

st.set_page_config(page_title="GAN-BERT Studio", page_icon=":material/fingerprint:", layout="wide")

# Navigation before any import or slow work, so the sidebar lists the pages from the first paint; the pages/
# folder's own file list, which a fresh server shows first, stays off (.streamlit/config.toml).
st.set_option("client.showSidebarNavigation", True)
nav = st.navigation([
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/data.py", title="Data", icon=":material/folder_open:"),
    st.Page("pages/label.py", title="Label", icon=":material/edit_note:"),
    st.Page("pages/explore.py", title="Explore", icon=":material/query_stats:"),
    st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("pages/classify.py", title="Classify", icon=":material/label:"),
])

from core.environment import preload, prepare  # noqa: E402

prepare()  # before anything loads a model
from core.backbone.device import describe_device  # noqa: E402
from core.data import CleaningConfig, CorpusConfig, builtin_dataset, load_dataset  # noqa: E402
from core.errors import InputError  # noqa: E402
from core.paths import home_from_environment  # noqa: E402
from core.runs import Registry, recall  # noqa: E402
from pages.markdown import plain  # noqa: E402


@st.cache_resource(show_spinner=False)
def default_dataset(home: Path):
    """Generated once per server (kept under the studio `home`); the first session sees the generation's progress on
    the page."""
    bar = st.progress(0.0, text="Generating the built-in synthetic corpus…")
    dataset = builtin_dataset(CorpusConfig(), home, on_progress=lambda done, total: bar.progress(
        done / total, text=f"Generating the built-in synthetic corpus… ({done} of {total} writer-splits)"))
    bar.empty()
    return dataset


@st.cache_resource(show_spinner=False)
def preloaded():
    """The pages' slow imports, begun once per server while the user reads the first page."""
    return preload()


@st.cache_resource
def device() -> str:
    return describe_device()


def restored_workspace() -> None:
    """A new session opens on the dataset and cleaning this studio home last worked on (kept in the
    registry), or on the built-in corpus when there is none or its files are gone (saying so)."""
    registry = st.session_state.registry
    workspace = recall(registry)
    st.session_state.cleaning = workspace.cleaning if workspace else CleaningConfig()
    if workspace is None or workspace.data.builtin == CorpusConfig():
        st.session_state.dataset = default_dataset(registry.home)
        return
    try:
        with st.spinner("Loading the dataset you were working on…"):
            st.session_state.dataset = load_dataset(workspace.data, registry.home)
    except InputError as e:
        st.session_state.dataset = default_dataset(registry.home)
        st.warning(f"The dataset you were working on could not be loaded again ({e}); the built-in corpus is "
                   "loaded instead.")


loading = preloaded()
if "registry" not in st.session_state:  # one per session: opening it checks the schema
    try:  # the studio home, read here alone: the pages find it as `registry.home`
        st.session_state.registry = Registry(home_from_environment())
    except InputError as e:  # a damaged studio.db, or a full disk on a fresh home
        st.error(f"The studio cannot open its registry: {e}")
        st.stop()
    if migrated := st.session_state.registry.migrated:  # an older home, upgraded once as it opened
        st.toast("The studio home was upgraded for this version (migration " + "; ".join(migrated) + ").")
if "dataset" not in st.session_state:
    restored_workspace()
if "cleaning" not in st.session_state:
    st.session_state.cleaning = CleaningConfig()

with st.sidebar:
    ds = st.session_state.dataset
    st.markdown("**Dataset**")
    st.caption(plain(ds.name) + (" — for trying the studio offline" if ds.synthetic else ""))
    st.caption(" · ".join(f"{split} {len(frame):,}" for split, frame in ds.splits.items()))
    if st.session_state.cleaning.active:
        st.caption("Cleaning on: " + ", ".join(k.replace("_", " ")
                                               for k, v in vars(st.session_state.cleaning).items() if v))
    st.markdown("**Device**")
    st.caption(device())
    try:
        unreadable = st.session_state.registry.unreadable()
    except InputError as e:
        unreadable = []
        st.error(str(e))
    if unreadable:
        st.warning(f"{len(unreadable)} run(s) cannot be read and are left out of every list:\n\n"
                   + "\n".join(f"- {reason}" for _, reason in unreadable))

if nav.title != "Home" and loading.is_alive():  # transformers cannot be imported from two threads at once
    with st.spinner("Loading the studio's libraries…"):
        loading.join()
nav.run()
