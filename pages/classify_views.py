"""Classify's callbacks: a drawn test example, and explanations switched off for every new text."""

import random

import streamlit as st


def explain_afresh() -> None:
    """A new text starts with its explanations off: left on, each toggle re-ran integrated gradients on every
    text typed or drawn after it, minutes for a long one. Set off in a callback, before the toggles draw: a key
    deleted in the page's flow left a toggle shown on that showed nothing."""
    for key in [k for k in st.session_state if k.startswith("cl_why_")]:
        st.session_state[key] = False


def draw_example(test) -> None:
    """A random test text into the text field, with its true label, and the explanations off."""
    row = test.iloc[random.randrange(len(test))]
    st.session_state.cl_text = row["text"]
    st.session_state.cl_drawn = (row["text"], st.session_state.dataset.labels[row["label"]] if row["label"] >= 0
                                 else None)
    explain_afresh()
