"""MLflow on the pages: Compare exports the selected runs; the Train page names a store every new run is logged to
as it trains (`core.runs.tracking`)."""

import os

import streamlit as st

from core.errors import InputError
from core.runs.tracking.store import (
    INSTALL,
    URI_SETTING,
    URI_VARIABLE,
    client_for,
    default_uri,
    export_runs,
    live_uri,
    mlflow_installed,
    where_to_look,
)
from pages.markdown import plain


def export_selected(registry, runs) -> None:
    """The selected finished runs into an MLflow store, with a bar as each goes."""
    with st.expander(f"Export the {len(runs)} selected run(s) to MLflow"):
        if not mlflow_installed():
            st.info(f"{INSTALL}, then restart the app.")
            return
        uri = st.text_input("Tracking URI", live_uri(registry) or default_uri(registry.home), key="cmp_mlflow_uri",
                            help="A SQLite file (sqlite:///path/mlflow.db) or a tracking server (http://host:5000). "
                                 "A run exported again updates its MLflow run.")
        if not st.button("Export", key="cmp_mlflow_export"):
            return
        bar = st.progress(0.0, text="Opening the store…")
        try:
            done = export_runs(registry, runs, uri, on_run=lambda i, n, name: bar.progress(
                i / n, text=f"Exporting {name} ({i + 1} of {n})…"))
        except InputError as e:
            bar.empty()
            st.error(str(e))
            return
        again = sum(e.updated for e in done)
        before = f": {again} had been exported before, and their MLflow runs were updated, not copied" if again else ""
        bar.progress(1.0, text=f"Exported {len(done)} run(s){before}")
        names = {r.id: r.name for r in runs}
        st.dataframe([{"run": names[e.run_id], "experiment": e.experiment, "MLflow run": e.mlflow_run_id,
                       "model": e.model_uri, "model check": e.checked, "exported before": e.updated,
                       "run id": e.run_id} for e in done], hide_index=True, placeholder="–",
                     column_config={"model check": st.column_config.TextColumn(
                         help="What the exported model, loaded as MLflow loads it, scores on the run's test texts, "
                              "against the run's own score")})
        command, links = where_to_look(uri, done)
        if command:
            st.markdown("See them in MLflow's own UI: start it,")
            st.code(command, language="bash")
        for experiment, link in links.items():  # a button: in a code block its `#…` read as a comment
            st.link_button(f"Open the runs of experiment {plain(experiment)} in MLflow's UI", link)


def live_setting(registry, column) -> None:
    """Where new runs are logged as they train: the variable, when set, else this setting (empty: nowhere)."""
    if variable := os.environ.get(URI_VARIABLE):
        column.caption(f"New runs are logged to MLflow at {variable} ({URI_VARIABLE}).")
        return

    def changed() -> None:
        uri = st.session_state.tr_mlflow_uri.strip()
        try:
            if uri:
                client_for(uri)
        except InputError as e:
            st.session_state.tr_mlflow_error = str(e)
            return
        st.session_state.pop("tr_mlflow_error", None)
        registry.set_setting(URI_SETTING, uri)
    column.text_input("Log new runs to MLflow (empty: off)", registry.setting(URI_SETTING) or "", key="tr_mlflow_uri",
                      on_change=changed, disabled=not mlflow_installed(), placeholder="off",
                      help=(f"A tracking URI: each run's params, curves as it trains, scores and model. {INSTALL}."
                            if not mlflow_installed() else "A tracking URI, such as sqlite:///path/mlflow.db or "
                            "http://host:5000: each new run's params, its curves as it trains, its scores and model."))
    if error := st.session_state.get("tr_mlflow_error"):
        column.error(error)
