"""Runs on a page: the monitor's columns, a run's card (notes, curves, log, details, delete that asks first,
run again), for every table of runs a selection that stays on its runs, and what top-K runs stored."""

from pathlib import Path

import pandas as pd
import streamlit as st

from core import compare
from core.compare import charts
from core.runs import ACTIVE, Registry, Run, enqueue
from core.train import resolve
from core.train.state_store import LIMIT_ENV, clear, size_words, store_limit, summaries

# the monitor at 1,400 px: what a user watches (status, phase, progress, time left) first and narrow, then the
# run's name whole, with what tells it apart from runs of the same name
MONITOR_COLUMNS = {
    "status": st.column_config.TextColumn(width="small"), "phase": st.column_config.TextColumn(width="small"),
    "progress": st.column_config.ProgressColumn("progress", format="%d%%", min_value=0, max_value=100, width="small",
                                                help="of the current phase: encoding the texts, then training"),
    "time left": st.column_config.TextColumn(width="small", help="from runs like it finished on this machine, else "
                                                                 "from the run's pace"),
    "run": st.column_config.TextColumn(width=440),  # at 540 px, "latest" and "evaluations" were past the edge
    "latest": st.column_config.TextColumn(width="medium"),
    "test macro-F1": st.column_config.NumberColumn(format="%.3f", width=100),  # its header whole
    "seed": st.column_config.NumberColumn(width=50),
    "evaluations": st.column_config.NumberColumn(width="small")}


def keep_selection_on_runs(key: str, run_ids: list[str]) -> None:
    """Call before drawing a selectable table of runs: when its rows have changed since the last draw (a run
    deleted, a filter changed), move the selection to the same runs' new rows, never onto other runs."""
    before, state = st.session_state.get(f"{key}_ids"), st.session_state.get(key)
    if before is not None and before != run_ids and state is not None:
        rows = compare.follow_rows(before, list(state["selection"]["rows"]), run_ids)
        st.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    st.session_state[f"{key}_ids"] = run_ids


def selection_to_restore(key: str, run_ids: list[str]) -> dict | None:
    """The rows of the runs last selected in the table `key`, for its `selection_default`: Streamlit drops a
    table's selection when another page is opened, and Compare came back with none (issue 95 item 8)."""
    rows = [run_ids.index(i) for i in st.session_state.get(f"{key}_chosen", []) if i in run_ids]
    return {"selection": {"rows": rows}} if rows else None


def remember_selection(key: str, run_ids: list[str]) -> None:
    st.session_state[f"{key}_chosen"] = run_ids  # not a widget's key: it outlives a visit to another page


def confirm_delete(run_id: str | None) -> None:
    st.session_state.tr_confirm_delete = run_id


def monitor_key() -> str:
    """The monitor table's widget key. A delete or an undo gives the table a new one: the browser keeps a
    table's selection by row position and can send it back after the rows have moved, which showed another
    run's card in the deleted run's place."""
    version = st.session_state.get("tr_table_version", 0)
    return "tr_table" if not version else f"tr_table_{version}"


def delete(registry: Registry, run_id: str, name: str) -> None:
    registry.set_deleted(run_id)
    confirm_delete(None)
    st.session_state.tr_table_version = st.session_state.get("tr_table_version", 0) + 1  # a new table
    st.session_state.tr_deleted = (run_id, name)


def restore(registry: Registry, run_id: str) -> None:
    registry.set_deleted(run_id, False)
    st.session_state.tr_table_version += 1
    st.session_state.pop("tr_deleted", None)


def offer_undo(registry: Registry) -> None:
    """After a delete: the run is gone from every page, and one click brings it back (delete is a flag)."""
    if "tr_deleted" in st.session_state:
        run_id, name = st.session_state.tr_deleted
        c1, c2 = st.columns([4, 1])
        c1.caption(f"Deleted {name}.")
        c2.button("Undo", key="tr_undo", on_click=restore, args=(registry, run_id))


def delete_with_confirmation(column, registry: Registry, run: Run, name: str) -> None:
    """Delete asks first. It hides the run from every page and comparison; its folder stays, so Undo (or the
    registry's flag) brings it back. The buttons act in callbacks, so the fragment's own rerun shows it."""
    if st.session_state.get("tr_confirm_delete") != run.id:
        column.button("Delete", disabled=run.status in ACTIVE, key="tr_delete", on_click=confirm_delete,
                      args=(run.id,))
        return
    column.warning(f"Delete {name}? It leaves every page and comparison; its files stay until you remove them, "
                   "and Undo brings it back.")
    column.button("Delete it", type="primary", key="tr_delete_yes", on_click=delete, args=(registry, run.id, name))
    column.button("Keep it", key="tr_delete_no", on_click=confirm_delete, args=(None,))


def run_again(registry: Registry, run: Run) -> None:
    """Queue the run's settings once more, resolved anew (a run stored before configs were resolved at launch
    is resolved now)."""
    enqueue(registry, [resolve(run.config, registry.home)], run.backend, run.resources)


def run_card(registry: Registry, run: Run, name: str) -> None:
    """One run (`name`: the one that tells it apart on this page): its notes, curves, log (whole, to
    download) and details, and what can be done with it."""
    st.subheader(name)
    for line in compare.run_notes(run, registry):
        (st.warning if line.startswith("warning") else st.caption)(line)
    evaluations = compare.evaluations_frame(registry, [run], {run.id: name})
    if not evaluations.empty:
        names = evaluations["metric"].unique()
        metrics = sorted(m for m in names if not m.startswith("val_")) + \
            [m for m in ("val_accuracy", "val_macro_f1", "val_mcc", "val_fake_prob") if m in names]
        st.altair_chart(charts.evaluation_curves(evaluations, metrics))
    log, details = st.tabs(["Log", "Details"])
    folder = registry.folder(run.id)
    tail = folder.tail_log(30)
    log.code(tail or ("(no log yet)" if run.status in ACTIVE else "(this run left no log)"), language=None,
             wrap_lines=True)  # a long line whole, not cut at the right
    if tail:  # a run stopped before it wrote a line has nothing to download
        log.download_button("Download the whole log", folder.log.read_bytes(), f"{run.id}.log", key="tr_log")
    details.json(compare.run_details(run), expanded=1)
    c1, c2 = st.columns(2)
    delete_with_confirmation(c1, registry, run, name)
    c2.button("Run again", disabled=run.status in ACTIVE, key="tr_again", on_click=run_again, args=(registry, run),
              help="Queue the same settings once more (finished runs only)")


def states_section(home: Path) -> None:
    stores = summaries(home)
    if not stores and "tr_states_cleared" not in st.session_state:
        return  # no top-K run has stored anything: nothing to say
    size, texts = sum(s.bytes for s in stores), sum(s.texts for s in stores)
    with st.expander(f"Stored states: {texts:,} texts, {size_words(size)} of at most {size_words(store_limit())}",
                     key="tr_states_open"):
        st.caption("A run that trains only the top K of the N layers its backbone runs keeps each text's states below "
                   "them here, after layer N − K, so every later step, seed and method "
                   f"reads them instead of running those layers again. Past the bound ({LIMIT_ENV}) the states read "
                   "least recently are deleted; a run that needs them computes them again.")
        if stores:
            st.dataframe(pd.DataFrame([{"backbone": s.backbone, "states after layer": s.boundary,
                                        "precision": s.precision,
                                        "texts": s.texts, "size": size_words(s.bytes)} for s in stores]),
                         hide_index=True, placeholder="–")
        if (freed := st.session_state.pop("tr_states_cleared", None)) is not None:
            st.success(f"Cleared the stored states: {size_words(freed)} freed.")
        if stores and st.button("Clear the stored states", key="tr_states_clear"):
            st.session_state.tr_states_cleared = clear(home)
            st.rerun()
