"""The Train page's form kept: its Methods field, one per mode, that keeps the choice across a switch, and the
whole form remembered in the studio home, so a reload (a new session) opens on the user's last form."""

import time

import streamlit as st

from core.backbone import DEFAULT_TITLE, adapted_backbones, adapted_name
from core.backbone.packaged import DEFAULT_BACKBONE
from core.compare import backbone_advice, training_notes
from core.data import Dataset
from core.runs import Registry, grid_seconds, outside_work, recall_form, remember_form
from core.runs.estimate import Estimate
from core.train import (
    DEFAULT_FRACTIONS,
    DEFAULT_METHODS,
    DEFAULT_SEEDS,
    METHODS,
    TrainConfig,
    grid_labels,
    options,
    starved_note,
    unlabeled_read,
)
from pages.widgets import initial

# the options chosen in the form's first rows, not among the option widgets below them
CHOSEN_ABOVE = ("method", "generator", "fraction", "per_class", "seed", "frozen", "backbone")


def methods_key(frozen: bool) -> str:
    """The Methods field of one mode."""
    return "tr_methods_frozen" if frozen else "tr_methods_full"


# the form's widgets, kept in the studio home: a reload opened on the defaults' 60-run grid, and on MiniLM where the
# user had picked SmolLM2 (the backbone picker's keys)
FORM_KEYS = ("tr_frozen", methods_key(True), methods_key(False), "tr_amount", "tr_fractions", "tr_custom",
             "tr_per_class", "tr_seeds", *(f"tr_{n}" for n in options() if n not in CHOSEN_ABOVE),
             *dict.fromkeys(f"tr_{f}s" for m in METHODS.values() for f in m.variants),
             "tr_backbone_pick", "tr_backbone", "tr_download")
SET_FOR = "tr_form_dataset"  # the dataset the form was last set for
# settings that belong to the data they were chosen for: an authors' recipe reproduces their own experiment
PRESETS = {"tr_gan_preset": "GAN-BERT preset", "tr_finetune_preset": "Fine-tuning preset"}


def recall(registry: Registry, ds: Dataset) -> list[str]:
    """Before any widget draws: once a session, the form as the user last left it in this studio home; and on
    every visit, the settings that belong to another dataset than the one loaded reset, said in the lines
    returned (an authors' preset chosen for their TREC split had carried over into a grid on L2R)."""
    if "tr_form_recalled" not in st.session_state:
        st.session_state.tr_form_recalled = True
        for key, value in recall_form(registry).items():
            if key in (*FORM_KEYS, SET_FOR) and key not in st.session_state:
                st.session_state[key] = [m for m in value if m in METHODS] if key.startswith("tr_methods") else value
    said = reset_for(registry, ds) if st.session_state.get(SET_FOR) not in (None, ds.spec.short_name) else []
    st.session_state[SET_FOR] = ds.spec.short_name
    return said


def reset_for(registry: Registry, ds: Dataset) -> list[str]:
    """The settings chosen for another dataset put back to their defaults: the authors' presets, and a backbone
    adapted to another dataset's texts."""
    said = []
    for key, words in PRESETS.items():
        if st.session_state.get(key, "studio") != "studio":
            said.append(f"{words} {st.session_state[key]} → studio")
            st.session_state[key] = "studio"
    pick = st.session_state.get("tr_backbone_pick")
    adapted = {str(folder): record for folder, record in adapted_backbones(registry.home)}
    if pick in adapted and adapted[pick].get("dataset") != ds.spec.short_name:
        said.append(f"Backbone {adapted_name(adapted[pick])} → {DEFAULT_TITLE}")
        st.session_state["tr_backbone_pick"] = DEFAULT_BACKBONE
    return [f"Set for {ds.spec.short_name}: {', '.join(said)} (chosen for {st.session_state[SET_FOR]})"] if said \
        else []


def say_reset(lines: list[str]) -> None:
    for line in lines:
        st.info(f"{line}.")


def remember(registry: Registry) -> None:
    remember_form(registry, {k: st.session_state[k] for k in (*FORM_KEYS, SET_FOR) if k in st.session_state})


def amount_fields() -> tuple[list[float], str, str, str]:
    """The labeled amounts (fractions chosen and typed, or counts a class) and the seeds, as chosen."""
    c1, c2, c3 = st.columns(3)
    amount = c1.radio("Labeled data", ["fraction", "per class"], horizontal=True, key="tr_amount",
                      persist_state="session")
    fractions, custom, per_class = [], "", ""
    if amount == "fraction":
        fractions = c2.multiselect("Labeled fractions", [*DEFAULT_FRACTIONS, 1.0], wrap=True, persist_state="session",
                                   default=initial("tr_fractions", list(DEFAULT_FRACTIONS)),
                                   format_func="{:.0%}".format, key="tr_fractions")
        custom = c3.text_input("Custom fractions", placeholder="e.g. 2%, 0.2", key="tr_custom", persist_state="session")
    else:
        per_class = c2.text_input(options()["per_class"].label, initial("tr_per_class", "5, 20"), key="tr_per_class",
                                  persist_state="session")
    seeds = c3.text_input("Seeds", initial("tr_seeds", ", ".join(map(str, DEFAULT_SEEDS))), key="tr_seeds",
                          persist_state="session")
    return fractions, custom, per_class, seeds


def methods_field(column, frozen: bool) -> list[str]:
    """The methods, their chips named for the mode ("BERT fine-tuning" is a head when frozen). One field whose
    labels changed under it kept stale chips and then lost every method: a field per mode, the choice carried
    over on a switch."""
    shown, hidden = methods_key(frozen), methods_key(not frozen)
    if hidden in st.session_state:
        st.session_state[shown] = st.session_state.pop(hidden)
    return column.multiselect("Methods", list(METHODS), key=shown, wrap=True, persist_state="session",
                              default=initial(shown, list(DEFAULT_METHODS)),
                              format_func=lambda m: METHODS[m].label(frozen))


def extra(ds: Dataset) -> int:
    """The unlabeled set beside the train pool."""
    return 0 if ds.unlabeled is None else len(ds.unlabeled)


def unlabeled_words(ds: Dataset) -> str:
    return f", {extra(ds):,} unlabeled" if extra(ds) else ""


def say_estimate(registry: Registry, new: list[TrainConfig], grid: int, ds: Dataset, ray: bool) -> Estimate:
    """The new runs of a `grid`-run grid and their estimated time; other work slowing this machine; and, for a frozen
    grid on MiniLM, what SmolLM2 measured and would take here."""
    sizes = (len(ds.train), None if ds.val is None else len(ds.val), len(ds.test), len(ds.labels))
    texts, test_texts = ds.texts(), list(ds.test["text"])  # the test split is cached apart from the pool
    estimate = grid_seconds(registry, new, *sizes, texts=texts, extra=extra(ds), test_texts=test_texts)
    done = (f" of the grid's {grid} (the other {grid - len(new)} are done or queued here already)"
            if len(new) < grid else "")
    st.markdown(f"**{len(new)} new run(s)** to launch{done}, {estimate.words()} in all, one after another"
                + ("; Ray runs them side by side, as its workers allow." if ray else "."))
    for note in training_notes(new, estimate):
        st.info(note)
    if not ray and (busy := outside_work(registry, time.time())):
        st.caption(busy)
    if advice := backbone_advice(registry, new, estimate.seconds, *sizes, texts, extra(ds), test_texts):
        st.caption(advice)
    return estimate


def what_runs_read(configs: list[TrainConfig], ds: Dataset) -> None:
    """Before launch: the labels each run reads, the unlabeled texts GAN-BERT reads, and a warning where it reads
    none."""
    if not configs:
        return
    train, val = ds.class_sizes("train"), ds.class_sizes("val")
    if note := starved_note(configs, train, val, extra(ds)):
        st.warning(f"{note}.")
    st.caption(grid_labels(configs, train, val, ds.labels))
    if read := unlabeled_read(configs, train, val, extra(ds)):
        st.caption(read)


def settle_notes(methods: list[str], frozen: bool, values: dict) -> list[str]:
    """What each method changes in the chosen settings (adapters are never frozen; a preset's pooled CLS on a
    backbone that never trained its pooler), one line each."""
    chosen = {k: v for k, v in values.items() if k in ("backbone", "gan_preset", "finetune_preset", "pooling")}
    return [n for n in (METHODS[m].settle_note(TrainConfig.of(m, frozen=frozen, foreign=True, **chosen))
                        for m in methods) if n]
