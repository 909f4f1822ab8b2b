"""Widgets of the Train page: one for any `TrainConfig` option, read from its field metadata, and where the runs
go (`run_place`); and tabs that reopen where the user left them (`kept_tabs`). Every one keeps its value for the
session (`persist_state`): Streamlit drops a widget's value when the user leaves its page, which reset the form."""

from dataclasses import dataclass

import streamlit as st

from core.errors import InputError
from core.runs import RAY_HINT, Registry, ray_available
from core.train.settings import Option
from core.train.sweep import parse_limits


def initial(key: str, value, none=None):
    """A field's value on its first draw: its default, or what means none to the field (`none`) where the session
    holds a value already (the form recalled from the last session): given both, Streamlit warns in the log."""
    return none if key in st.session_state else value


def kept_tabs(labels: list[str], key: str) -> list:
    """Tabs that track which one is open (each tab's `.open`, so a page can run only that one) and reopen on it
    after a visit to another page: Streamlit drops the tabs' state then, and they take no `persist_state`, so
    the open one is also kept under a key of its own and put back. Not through `default`: it is part of the
    tabs' identity, and changing it reset them to the first tab on the next click."""
    kept = f"{key}_kept"
    if key not in st.session_state and kept in st.session_state:
        st.session_state[key] = st.session_state[kept]
    tabs = st.tabs(labels, key=key, on_change="rerun")
    st.session_state[kept] = next((label for label, tab in zip(labels, tabs) if tab.open), labels[0])
    return tabs


def widget(column, o: Option, disabled: bool = False):
    """The widget an option asks for, greyed out when no run of the grid reads it. A number or text whose
    default is 'the method's own' takes 0 or empty for that default."""
    key, default_is_none = f"tr_{o.name}", o.default is None
    if o.kind == "bool":
        return column.toggle(o.label, value=initial(key, o.default, False), key=key, help=o.help, disabled=disabled,
                             persist_state="session")
    if o.kind == "tags":
        text = column.text_input(f"{o.label} (comma-separated)", initial(key, ", ".join(o.default)), key=key,
                                 help=o.help, disabled=disabled, persist_state="session")
        return tuple(t.strip() for t in text.split(",") if t.strip())
    if o.choices:  # "" for the method's default: a kept None reads as no choice at all ("Choose an option")
        values = ["", *o.choices] if default_is_none else list(o.choices)
        return column.selectbox(o.label, values, index=initial(key, values.index(o.default or ""), 0), key=key,
                                help=o.help, format_func=lambda v: o.choices.get(v, "default"), disabled=disabled,
                                persist_state="session") or None
    if o.kind in ("int", "float"):
        cast = int if o.kind == "int" else float
        high = None if o.high is None else cast(o.high)
        number = dict(key=key, help=o.help, format="%g" if o.kind == "float" else None, disabled=disabled,
                      persist_state="session")
        if default_is_none and o.low is not None and o.low <= 0:  # 0 is a value (attention dropout 0): empty is unset
            return column.number_input(f"{o.label} (empty: {o.unset})", cast(o.low), high, None, placeholder=o.unset,
                                       **number)
        low = cast(0 if default_is_none or o.low is None else o.low)
        value = o.default if not default_is_none else cast(0)
        chosen = column.number_input(f"{o.label} (0: {o.unset})" if default_is_none else o.label, low, high,
                                     initial(key, value), **number)
        return (chosen or None) if default_is_none else chosen
    text = column.text_input(f"{o.label} (empty: default)" if default_is_none else o.label,
                             initial(key, o.default or ""), key=key, help=o.help, disabled=disabled,
                             persist_state="session")
    return text.strip() or None


def variant_widget(column, o: Option, disabled: bool = False) -> list:
    """The values a sweep crosses for one of a method's variants: its choices to pick from, or numbers typed as a
    list (the unlabeled pool sizes: '0, 1000, all')."""
    if o.choices:
        return column.multiselect(o.variant_label, list(o.choices), default=initial(f"tr_{o.name}s", o.variant_default),
                                  format_func=o.choices.get, key=f"tr_{o.name}s", help=o.help, wrap=True,
                                  disabled=disabled, persist_state="session")
    text = column.text_input(f"{o.variant_label} ({o.unset}: no limit)", initial(f"tr_{o.name}s", ", ".join(
        o.unset if v is None else str(v) for v in o.variant_default)), key=f"tr_{o.name}s", disabled=disabled,
        help=o.help + ". Several values cross the grid with each", persist_state="session")
    try:
        return parse_limits(text, o.unset)
    except InputError as e:
        column.error(str(e))
        return []


@dataclass(frozen=True)
class Place:
    """Where a grid runs: this machine, or a Ray cluster with its address, storage and share per run."""
    backend: str = "local"
    address: str = ""
    storage: str = ""
    cpus: float = 1.0
    gpu_fraction: float = 1.0


def run_place(registry: Registry, frozen: bool) -> Place:
    """This machine, or (with Ray installed) a Ray cluster: its address and storage default to the last used."""
    c1, c2, c3, c4 = st.columns(4)
    backend = c1.radio("Run on", ["local", "ray"], horizontal=True, key="tr_backend", persist_state="session",
                       format_func={"local": "this machine", "ray": "Ray cluster"}.get, disabled=not ray_available(),
                       help="Ray spreads a sweep over a cluster's CPUs and GPUs; results come back here.")
    if not ray_available():
        c2.caption(f"{RAY_HINT}, then restart the app.")
    if backend != "ray" or not ray_available():
        return Place()
    return Place("ray", c2.text_input("Ray address (empty: RAY_ADDRESS or a local Ray)",
                                      registry.setting("ray_address") or "", key="tr_ray_address",
                                      persist_state="session"),
                 c2.text_input("Storage for results (empty: sent back directly)", registry.setting("ray_storage") or "",
                               key="tr_ray_storage", persist_state="session",
                               help="An absolute folder every node shares, or a URI such as s3://bucket/studio; "
                                    "results are copied from there into this machine's run folders."),
                 c3.number_input("CPUs per run", 0.5, 64.0, 1.0, step=0.5, key="tr_ray_cpus", persist_state="session"),
                 c4.number_input("GPU share per run (frozen only)", 0.05, 1.0, 1.0, step=0.05, key="tr_ray_gpu",
                                 disabled=not frozen, persist_state="session"))
