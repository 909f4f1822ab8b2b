"""Widgets the pages share: one for any `TrainConfig` option, read from its field metadata, and the
backbone picker."""

import streamlit as st

from core.backbone import BUNDLED, cached_models
from core.train.config import Option

OTHER = "other"


def widget(column, o: Option):
    """The widget an option asks for. A number or text whose default is 'the method's own' takes 0 or
    empty for that default."""
    key, default_is_none = f"tr_{o.name}", o.default is None
    if o.kind == "bool":
        return column.toggle(o.label, value=o.default, key=key, help=o.help)
    if o.choices:
        values = [None, *o.choices] if default_is_none else list(o.choices)
        return column.selectbox(o.label, values, index=values.index(o.default), key=key, help=o.help,
                                format_func=lambda v: "default" if v is None else o.choices[v])
    if o.kind in ("int", "float"):
        cast = int if o.kind == "int" else float
        low = cast(0 if default_is_none or o.low is None else o.low)
        high = None if o.high is None else cast(o.high)
        value = o.default if not default_is_none else cast(0)
        chosen = column.number_input(f"{o.label} (0: default)" if default_is_none else o.label, low, high, value,
                                     key=key, help=o.help, format="%.0e" if o.name == "lr" else None)
        return (chosen or None) if default_is_none else chosen
    text = column.text_input(f"{o.label} (empty: default)" if default_is_none else o.label, o.default or "",
                             key=key, help=o.help)
    return text.strip() or None


def backbone_picker(column, o: Option) -> tuple[str | None, bool]:
    """The bundled MiniLM, every encoder model in the local Hugging Face cache (with its size), or a folder
    or hub id typed in; and whether a missing hub model may be downloaded."""
    found = {m.hub_id: m.label for m in cached_models()}
    names = {None: BUNDLED, **found, OTHER: "Other: a folder or hub id…"}
    choice = column.selectbox("Backbone", list(names), format_func=names.get, key="tr_backbone_pick",
                              help=o.help + ". Cached models are found in the local Hugging Face cache.")
    if choice != OTHER:
        return choice, False
    typed = column.text_input("Folder or hub id", key="tr_backbone", placeholder="bert-base-cased or /path/to/model")
    allow = column.checkbox("Download if missing", key="tr_download",
                            help="Offer to fetch a hub id that is not cached into the Hugging Face cache: the only "
                                 "time the studio uses the network.")
    return typed.strip() or None, allow
