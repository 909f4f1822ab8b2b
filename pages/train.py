"""Train: choose a grid of runs, see its size and estimated time, launch it, and watch the runs. The methods come
from the method table and every option widget from `TrainConfig`'s field metadata."""

import time

import streamlit as st

from core import compare
from core.backbone import BackboneError, is_hub_id, prepare_backbone
from core.backbone.device import describe_device
from core.errors import InputError
from core.runs import ACTIVE, cancel_all, concurrency, enqueue, not_yet_run, pump, set_concurrency
from core.runs.ray.backend import ray_resources, use_address, use_storage
from core.train import METHODS, Sweep, amounts, capped_note, idle_options, option_sections, parse_numbers
from core.train.config import TrainConfig, options
from pages import train_form
from pages.adapt_views import adapt_section
from pages.backbone_views import backbone_picker, offer_download, truncation
from pages.markdown import plain
from pages.run_views import MONITOR_COLUMNS, keep_selection_on_runs, monitor_key, offer_undo, run_card, states_section
from pages.tracking_views import live_setting
from pages.widgets import run_place, variant_widget, widget

OPTIONS = options()

COMMON = ("steps", "epochs", "selection", "evaluations", "lr", "batch_size", "max_len", "device", "precision",
          "encoder_engine", "patience", "train_layers")
# generated from TrainConfig: whatever the widgets above and the methods' own sections do not offer
ADVANCED = [n for n in OPTIONS
            if n not in (*COMMON, *train_form.CHOSEN_ABOVE) and not any(n in m.options for m in METHODS.values())]

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
ds, registry = st.session_state.dataset, st.session_state.registry
gpu = describe_device().startswith("GPU")

reset = train_form.recall(registry, ds)
st.title("Train")
st.caption(f"Data: **{plain(ds.name)}** · {len(ds.train):,} train-pool texts, "
           f"{'no validation split' if ds.val is None else f'{len(ds.val):,} in the validation split'}, "
           f"{0 if ds.test is None else len(ds.test):,} test{train_form.unlabeled_words(ds)}. "
           + ("A GPU is here: the encoder trains by default." if gpu else "On a CPU the form opens in frozen-feature "
              "mode, where the encoder runs once and only heads (and GAN-BERT's generator) train."))
if ds.test is None:
    st.info("This dataset has no test split; load one with a test file on the Data page.")
    st.stop()

# open on a first visit, then as the user leaves it: tracked, as an edit's rerun folds an untracked one again
with st.expander("New runs", expanded=st.session_state.setdefault("tr_form_open", not registry.list()), key="tr_form",
                 on_change="rerun"):
    c1, c2 = st.columns([3, 1])  # the mode first: it names the methods ("BERT fine-tuning" is a head when frozen)
    train_form.say_reset(reset)
    st.session_state.setdefault("tr_frozen", not gpu)  # a recalled form sets it too: a value here as well warned
    frozen = c2.toggle(OPTIONS["frozen"].label, key="tr_frozen", help=OPTIONS["frozen"].help, persist_state="session")
    methods = train_form.methods_field(c1, frozen)
    fields = list(dict.fromkeys(f for m in methods for f in METHODS[m].variants))
    # greyed: what no run reads, with the variants as last chosen (so the control greys the generators drawn first)
    idle = idle_options(methods, {f: st.session_state.get(f"tr_{f}s", OPTIONS[f].variant_default) for f in fields},
                        frozen)
    variants, columns = {}, st.columns(3)
    for i, field in enumerate(fields):
        variants[field] = variant_widget(columns[i % 3], OPTIONS[field], field in idle)
    fractions, custom, per_class_text, seeds_text = train_form.amount_fields()
    columns = st.columns(4)
    values = {name: widget(columns[i % 4], OPTIONS[name], name in idle) for i, name in enumerate(COMMON)}
    values["backbone"], allow_download = backbone_picker(columns[len(COMMON) % 4], OPTIONS["backbone"], registry.home)
    train_form.remember(registry)  # before the slow part below: a reload while a new backbone's texts are tokenized
    try:  # what the max length cuts of this dataset's training texts; `auto` resolved here, once, for the grid
        chosen = truncation(ds, repr(ds.spec), values["backbone"], values["max_len"], registry.home)
        if "max_len" not in idle:
            st.caption(f"Max length: {chosen.why}.")
        values["max_len"] = chosen.tokens
    except InputError:
        pass  # a backbone that does not resolve is reported below, with how to get it
    for owners, own in (sections := option_sections(methods, values)):  # LR's C, shared, is offered once
        st.markdown("**" + " · ".join(METHODS[m].label(frozen) for m in owners) + "**")
        columns = st.columns(4)
        values |= {o: widget(columns[i % 4], OPTIONS[o], o in idle) for i, o in enumerate(own)}
    with st.expander("Advanced: every other option"):
        columns = st.columns(4)
        values |= {o: widget(columns[i % 4], OPTIONS[o], o in idle) for i, o in enumerate(ADVANCED)}
    if greyed := [OPTIONS[o].label for o in (*fields, *COMMON, *(o for _, own in sections for o in own)) if o in idle]:
        st.caption(f"Greyed out, as no run of this grid reads them: {', '.join(greyed)}.")
    cols = st.columns(4)
    concurrency_n = cols[0].number_input("Local runs at once", 1, 16, concurrency(registry), key="tr_conc",
                                    persist_state="session", help="On a CPU they split its cores: not faster")
    live_setting(registry, cols[1])

    place = run_place(registry, frozen)

    configs, missing = [], False
    try:
        try:
            # made where the picker's conversion failed: its error said again, and nothing launched
            prepare_backbone(values["backbone"], home=registry.home)
        except BackboneError:
            missing = allow_download and is_hub_id(values["backbone"])
            if not missing:
                raise
        if not missing:
            base = TrainConfig.of(data=ds.spec, cleaning=st.session_state.cleaning, frozen=frozen, foreign=True,
                                  **values)
            chosen = amounts(fractions + parse_numbers(custom, "fraction"),
                             parse_numbers(per_class_text, "per-class count"))
            if note := capped_note(chosen, ds.class_counts()["train"].to_dict()):
                st.warning(f"{note}.")
            configs = Sweep(tuple(methods), variants, chosen, tuple(int(s) for s in parse_numbers(seeds_text, "seed")),
                            values).configs(base, registry.home)
            resources = ray_resources(base, place.cpus, place.gpu_fraction) if place.backend == "ray" else None
    except InputError as e:
        st.error(str(e))
    for note in train_form.settle_notes(methods, frozen, values):
        st.caption(f"{note}; the other runs stay as chosen.")
    if missing:
        offer_download(values["backbone"])
    new = not_yet_run(registry, configs)
    if new:
        estimate = train_form.say_estimate(registry, new, len(configs), ds, place.backend == "ray")
    elif configs:
        st.caption(f"Every run of this grid ({len(configs)}) is done or queued here already; change it to launch more.")
    train_form.what_runs_read(configs, ds)
    if st.button("Launch", type="primary", disabled=not new, key="tr_launch"):
        set_concurrency(registry, int(concurrency_n))
        try:
            if place.backend == "ray":
                use_address(registry, place.address)
                use_storage(registry, place.storage)
        except InputError as e:
            st.error(str(e))
        else:
            # the grid read again (a double click); each run keeps its estimate, its time left until one like it ends
            ids = enqueue(registry, not_yet_run(registry, new), place.backend, resources, estimate.each)
            st.session_state.pop("tr_deleted", None)  # a delete's Undo is for the moment after it
            st.session_state.tr_queued = len(ids)
            st.rerun()  # the grid's line and the button above say at once that it is queued
    if (queued := st.session_state.pop("tr_queued", None)) is not None:
        st.success(f"Queued {queued} run(s); they run in the background and survive page reloads.")

adapt_section(registry, ds, st.session_state.cleaning, values["backbone"])  # its base: the Backbone chosen above
refreshing = any(r.status in ACTIVE for r in registry.list())


@st.fragment(run_every="2s" if refreshing else None)  # refreshes while runs go, and not once they have ended
def monitor() -> None:
    pump(registry)
    states_section(registry.home)  # refreshed with the runs: a run stores its states as it starts
    runs = registry.list()
    if not runs:
        st.info("No runs yet: choose methods and labeled amounts above, then Launch.")
        return
    if refreshing != any(r.status in ACTIVE for r in runs):
        st.rerun()  # runs began (Run again) or the last ended: the whole page, which turns the refresh on or off
    table, key = compare.monitor_frame(runs, time.time(), concurrency(registry)), monitor_key()
    keep_selection_on_runs(key, table["run_id"].tolist())
    event = st.dataframe(table, key=key, hide_index=True, on_select="rerun", selection_mode="multi-row",
                         placeholder="–", column_config=MONITOR_COLUMNS)
    offer_undo(registry)  # below the table: an element above it would move the table in the page and reset it
    st.caption(compare.queue_words(runs, time.time(), concurrency(registry)) or "")
    rows = event.selection.rows if event else []
    picked = [registry.get(table.iloc[i]["run_id"]) for i in rows]
    if not picked:
        st.caption("Select runs to cancel them, or one to see its curves and log.")
        return
    active = [r for r in picked if r.status in ACTIVE]
    if active:  # a finished run has nothing to cancel
        st.button(f"Cancel {len(active)} selected run(s) still going", key="tr_cancel", on_click=cancel_all,
                  args=(registry, [r.id for r in active]))
    run_card(registry, picked[0], table.iloc[rows[0]]["run"])

st.subheader("Runs")
monitor()
