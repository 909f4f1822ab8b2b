"""The Train page's backbone: the picker (bundled, packaged, adapted, cached or typed), a packaged one's conversion
on first use with each stage shown, a hub model's opt-in download, and what the max length cuts on it."""

from pathlib import Path

import streamlit as st

from core.backbone import (
    DEFAULT_TITLE,
    BackboneError,
    adapted_backbones,
    adapted_name,
    cached_models,
    prepare_backbone,
    resolve_backbone,
)
from core.backbone.download import download
from core.backbone.locate import check_ready
from core.backbone.packaged import DEFAULT_BACKBONE, PACKAGED, converts, installed_packaged, is_converted
from core.data.schema import one_line
from core.errors import InputError
from core.train.maxlen import MaxLength, max_length_for
from core.train.settings import Option
from pages.markdown import plain

OTHER = "other"


@st.cache_data(show_spinner="Reading the backbone's tokenizer and what the max length cuts…")
def truncation(_ds, spec: str, backbone: str | None, max_len: int | None, home: Path) -> MaxLength:
    """What the max length cuts of this dataset's training texts (`spec` names the dataset for the cache)."""
    return max_length_for(_ds, check_ready(resolve_backbone(backbone, home=home)), max_len)


def converted(backbone: str | None, home: Path) -> None:
    """A packaged backbone converted from its GGUF file before anything reads it, each stage shown: choosing SmolLM2
    had frozen the page under one spinner for 52 s (issue 95 item 5). Once per studio home; else nothing."""
    if not converts(backbone) or is_converted(backbone, home):
        return
    title = PACKAGED[backbone].short
    with st.status(f"Converting {title} from its GGUF file, once for this studio home (20 to 50 s)…",
                   expanded=True) as status:  # its bar in sight, not in a box to open
        bar = st.progress(0.0)
        try:
            prepare_backbone(backbone, home=home, on_stage=lambda done, total, what: bar.progress(
                done / total, text=f"Converting {title}: {what} (stage {done + 1} of {total})…"))
        except InputError as e:  # a full disk, a damaged file: said here, and by the form below
            status.update(label=plain(one_line(str(e))), state="error")
            return
        finally:
            bar.empty()
        status.update(label=f"{title} converted: later choices of it are read at once", state="complete",
                      expanded=False)


def backbone_picker(column, o: Option, home) -> tuple[str | None, bool]:
    """The backbones the studio names (MiniLM, the default; SmolLM2, a causal LM that keeps style), those adapted here
    to a dataset's texts, every encoder model in the local Hugging Face cache (with its size), or a folder or hub id
    typed in; and whether a missing hub model may be downloaded."""
    found = {m.hub_id: m.label for m in cached_models()}
    adapted = {str(folder): f"{adapted_name(record)}, {record['cpu_seconds'] / 60:.0f} CPU min"
               for folder, record in adapted_backbones(home)}
    names = {**installed_packaged(), **adapted, **found, OTHER: "Other: a folder or hub id…"}
    if (kept := st.session_state.get("tr_backbone_pick")) not in (None, *names):  # removed since it was chosen
        column.caption(f"The backbone chosen last ({kept}) is no longer here: {DEFAULT_TITLE} instead.")
        st.session_state["tr_backbone_pick"] = DEFAULT_BACKBONE
    choice = column.selectbox("Backbone", list(names), format_func=names.get, key="tr_backbone_pick",
                              persist_state="session",
                              help=o.help + ". The list holds the packaged models and the cached ones.")
    if choice != OTHER:
        converted(choice, home)
        return choice, False
    typed = column.text_input("Folder or hub id", key="tr_backbone", placeholder="bert-base-cased or /path/to/model",
                              persist_state="session")
    allow = column.checkbox("Download if missing", key="tr_download", persist_state="session",
                            help="Offer to fetch a hub id that is not cached into the Hugging Face cache: the only "
                                 "time the studio uses the network.")
    converted(typed.strip(), home)  # a packaged one's name typed in: converted in sight, as when picked
    return typed.strip() or None, allow


def offer_download(name: str) -> None:
    """A button that fetches a hub model that is not cached, with its progress, then reruns to use it."""
    st.info(f"{name} is not in the local Hugging Face cache. Download it to launch runs with it.")
    if st.button(f"Download {name}", key="tr_download_now"):
        bar = st.progress(0.0, text=f"Downloading {name}…")
        try:
            download(name, None, lambda done, total: bar.progress(
                done / total, text=f"Downloading {name}: {done / 2**20:,.0f} of {total / 2**20:,.0f} MB"))
        except BackboneError as e:
            st.error(str(e))
        else:
            st.rerun()
