"""The Train page's "Stored states": what top-K runs keep of each text below the layers they train, its size against
the bound, and a button that clears it."""

from pathlib import Path

import pandas as pd
import streamlit as st

from core.train.state_store import LIMIT_ENV, clear, size_words, store_limit, summaries


def states_section(home: Path) -> None:
    stores = summaries(home)
    if not stores and "tr_states_cleared" not in st.session_state:
        return  # no top-K run has stored anything: nothing to say
    size, texts = sum(s.bytes for s in stores), sum(s.texts for s in stores)
    with st.expander(f"Stored states: {texts:,} texts, {size_words(size)} of at most {size_words(store_limit())}",
                     key="tr_states_open"):
        st.caption("A run that trains only the top layers of its backbone keeps each text's states below them here, "
                   "so every later step, seed and method reads them instead of running those layers again. Past the "
                   f"bound ({LIMIT_ENV}) the states read least recently are deleted; a run that needs them computes "
                   "them again.")
        if stores:
            st.dataframe(pd.DataFrame([{"backbone": s.backbone, "after layer": s.boundary, "precision": s.precision,
                                        "texts": s.texts, "size": size_words(s.bytes)} for s in stores]),
                         hide_index=True, placeholder="–")
        if (freed := st.session_state.pop("tr_states_cleared", None)) is not None:
            st.success(f"Cleared the stored states: {size_words(freed)} freed.")
        if stores and st.button("Clear the stored states", key="tr_states_clear"):
            st.session_state.tr_states_cleared = clear(home)
            st.rerun()
