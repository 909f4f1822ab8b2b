"""Classify's callbacks: a drawn test example."""

import random

import streamlit as st


def draw_example(test) -> None:
    """A random test text into the text field, with its true label."""
    row = test.iloc[random.randrange(len(test))]
    st.session_state.cl_text = row["text"]
    st.session_state.cl_drawn = (row["text"], st.session_state.dataset.labels[row["label"]] if row["label"] >= 0
                                 else None)
