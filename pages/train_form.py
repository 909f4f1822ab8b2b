"""The Train page's form kept: its Methods field, one per mode, that keeps the choice across a switch, and the
whole form remembered in the studio home, so a reload (a new session) opens on the user's last form."""

import streamlit as st

from core.runs import Registry, recall_form, remember_form
from core.data import Dataset
from core.train import DEFAULT_METHODS, METHODS, TrainConfig, grid_labels, options, starved_note, unlabeled_read

# the options chosen in the form's first rows, not among the option widgets below them
CHOSEN_ABOVE = ("method", "generator", "fraction", "per_class", "seed", "frozen", "backbone")


def methods_key(frozen: bool) -> str:
    """The Methods field of one mode."""
    return "tr_methods_frozen" if frozen else "tr_methods_full"


# the form's widgets, kept in the studio home: a reload opened on the defaults' 60-run grid
FORM_KEYS = ("tr_frozen", methods_key(True), methods_key(False), "tr_amount", "tr_fractions", "tr_custom",
             "tr_per_class", "tr_seeds", *(f"tr_{n}" for n in options() if n not in CHOSEN_ABOVE),
             *dict.fromkeys(f"tr_{f}s" for m in METHODS.values() for f in m.variants))


def recall(registry: Registry) -> None:
    """Once a session, before any widget draws: the form as the user last left it in this studio home."""
    if "tr_form_recalled" in st.session_state:
        return
    st.session_state.tr_form_recalled = True
    for key, value in recall_form(registry).items():
        if key in FORM_KEYS and key not in st.session_state:
            st.session_state[key] = [m for m in value if m in METHODS] if key.startswith("tr_methods") else value


def remember(registry: Registry) -> None:
    remember_form(registry, {k: st.session_state[k] for k in FORM_KEYS if k in st.session_state})


def methods_field(column, frozen: bool) -> list[str]:
    """The methods, their chips named for the mode ("BERT fine-tuning" is a head when frozen). One field whose
    labels changed under it kept stale chips and then lost every method: a field per mode, the choice carried
    over on a switch."""
    shown, hidden = methods_key(frozen), methods_key(not frozen)
    if hidden in st.session_state:
        st.session_state[shown] = st.session_state.pop(hidden)
    return column.multiselect("Methods", list(METHODS), key=shown, wrap=True, persist_state="session",
                              default=None if shown in st.session_state else list(DEFAULT_METHODS),
                              format_func=lambda m: METHODS[m].label(frozen))


def extra(ds: Dataset) -> int:
    """The unlabeled set beside the train pool."""
    return 0 if ds.unlabeled is None else len(ds.unlabeled)


def unlabeled_words(ds: Dataset) -> str:
    return f", {extra(ds):,} unlabeled" if extra(ds) else ""


def what_runs_read(configs: list[TrainConfig], ds: Dataset) -> None:
    """Before launch: the labels each run reads, the unlabeled texts GAN-BERT reads, and a warning where it reads
    none."""
    if not configs:
        return
    train, val = ds.class_sizes("train"), ds.class_sizes("val")
    if note := starved_note(configs, train, val, extra(ds)):
        st.warning(f"{note}.")
    st.caption(grid_labels(configs, train, val))
    if read := unlabeled_read(configs, train, val, extra(ds)):
        st.caption(read)


def settle_notes(methods: list[str], frozen: bool, values: dict) -> list[str]:
    """What each method changes in the chosen settings (adapters are never frozen; a preset's pooled CLS on a
    backbone that never trained its pooler), one line each."""
    chosen = {k: v for k, v in values.items() if k in ("backbone", "gan_preset", "finetune_preset", "pooling")}
    return [n for n in (METHODS[m].settle_note(TrainConfig(frozen=frozen, method=m, **chosen)) for m in methods) if n]
