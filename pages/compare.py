"""Compare: filter runs, group them over seeds with confidence intervals, plot metrics against the labeled
amount, test differences paired by seed, and look closely at chosen runs."""

import streamlit as st

from core import compare, plotting
from core.compare import METRIC_NAMES, charts
from core.runs import ACTIVE, FINISHED, Status, pump
from pages.compare_views import simulations, verdicts
from pages.markdown import plain
from pages.run_views import keep_selection_on_runs, remember_selection, selection_to_restore
from pages.tracking_views import export_selected

if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
registry = st.session_state.registry
pump(registry)
runs = registry.list()

st.title("Compare")
simulations(registry.home)
if not runs:
    st.info("No runs to compare yet. Launch some on the Train page.")
    st.stop()


@st.fragment(run_every="5s")
def watch(finished: int) -> None:
    """While runs are going, rerun the page when one finishes, so the comparison includes it."""
    pump(registry)
    if sum(r.status in FINISHED for r in registry.list()) != finished:
        st.rerun()


if any(r.status in ACTIVE for r in runs):
    st.caption("Runs are still going; this page updates as they finish.")
    watch(sum(r.status in FINISHED for r in runs))

frame = compare.runs_frame(runs)
# before the filters, so a series keeps its colour under any filter
colour_order, references = compare.series_order(frame), compare.reference_keys(frame)
with st.expander("Filters", expanded=False):
    cols = st.columns(2)  # wide enough for the longest method name, uncut
    chosen = {}
    for i, column in enumerate(compare.FILTERS):
        options = sorted(frame[column].dropna().unique().tolist(), key=str)
        chosen[column] = cols[i % 2].multiselect(column, options, key=f"cmp_{column}", wrap=True,
                                                 persist_state="session")  # in a column, chips scroll unless told
frame = compare.filter_runs(frame, chosen)

st.subheader("Runs")
keep_selection_on_runs("cmp_table", frame["run_id"].tolist())
differs = ["differs in"] if frame["differs in"].astype(bool).any() else []  # shown when a run has something to say
event = st.dataframe(frame, hide_index=True, key="cmp_table", on_select="rerun", selection_mode="multi-row",
                     placeholder="–", selection_default=selection_to_restore("cmp_table", frame["run_id"].tolist()),
                     column_order=["status", "method", *differs, "amount", "labels read", "seed", *compare.METRICS,
                                   "dataset", "tags", "run_id"],
                     column_config={m: st.column_config.NumberColumn(METRIC_NAMES[m], format="%.3f")
                                    for m in compare.METRICS} |
                     {"dataset": st.column_config.TextColumn(help="The dataset's file or folder name; its full path is "
                                                                  "in the CSV and under Selected runs."),
                      "method": st.column_config.TextColumn(width=330),  # the longest name whole, whatever is shown
                      "differs in": st.column_config.TextColumn(width=190)})  # "unlabeled rows 1000" whole
st.download_button("Download table (CSV)", frame.to_csv(index=False), "runs.csv", "text/csv", key="cmp_csv")
selected_ids = frame.iloc[event.selection.rows]["run_id"].tolist() if event and event.selection.rows else []
remember_selection("cmp_table", selected_ids)
selected = [r for r in runs if r.id in selected_ids and r.status == Status.DONE]
if selected:  # beside the table its rows are selected in
    export_selected(registry, selected)

metric = st.radio("Metric (on the test split)", list(compare.METRICS), horizontal=True, key="cmp_metric",
                  persist_state="session", format_func=lambda m: METRIC_NAMES[m][0].upper() + METRIC_NAMES[m][1:])
summary = compare.summarize(frame, metric, compare.METRICS)
groups = summary.groups
if groups.empty:
    st.info("No finished runs match. Metrics appear here when runs end `done`.")
    st.stop()

st.subheader("Groups over seeds (mean and 95% CI)")
st.caption("A group is every run with the same settings but the seed. Runs with the same seed share their labeled "
           "rows, so groups compare seed by seed below. *Labels read* counts every label a group's runs read, "
           "validation included: a comparison of groups that read different numbers says so. Macro-F1 averages over "
           "the classes the test texts hold, the same list for every run on a test set, whatever a run predicts.")
# the chosen metric's mean and interval beside the groups' names, the others' means after, under short headers
# (the subheader says they are means): twelve columns had run past the page
shown = {f"{metric}_mean": METRIC_NAMES[metric]} | {f"{m}_mean": METRIC_NAMES[m]
                                                    for m in compare.METRICS if m != metric}
ranked = groups.sort_values(["dataset", "labeled", f"{metric}_mean"], ascending=[True, True, False])
# the series (method and what tells it apart) and the amount in columns of their own: as one name at 1,400 px the
# part that told two groups apart was cut off
# the mean and its whole interval beside the group, then what it read: a walk found the interval past the edge
st.dataframe(ranked[["series", f"{metric}_mean", f"{metric}_interval", "n", "panel", "labels read", "seeds",
                     *list(shown)[1:]]], hide_index=True, placeholder="–",
             column_config={c: st.column_config.NumberColumn(title, format="%.3f") for c, title in shown.items()} |
             {"series": st.column_config.TextColumn("group", width=300),
              "seeds": st.column_config.ListColumn(width=90),
              "panel": st.column_config.TextColumn("amount", width=170),  # "20/class (120 labeled)" whole
              "n": st.column_config.NumberColumn(width=40), "labels read": st.column_config.NumberColumn(width=80),
              f"{metric}_interval": st.column_config.TextColumn(
                  "95% CI", width=330, help="Student's t over seeds, as computed: one that runs past the metric's "
                                             "range says so (too few seeds to bound the mean)")})
colours = charts.series_colours(groups, colour_order, references)  # one colour a series on every chart of the page
line = charts.metric_vs_amount(groups, metric, colours)  # bars when the runs have one labeled amount
st.altair_chart(line)
bars = charts.grouped_bars(groups, metric, colours=colours) if groups["labeled"].nunique() > 1 else None
if bars is not None:
    st.altair_chart(bars)
if not charts.pool_axis(groups).empty:  # a series ran at two unlabeled pool sizes or more
    st.altair_chart(charts.metric_vs_unlabeled(groups, metric, colours))
    st.caption("GAN-BERT's control draws the same pool as GAN-BERT and learns from none of it: its line is what the "
               "rest of the run does without the adversarial part. GAN-BERT's budget counts epochs over labeled and "
               "unlabeled rows, so a smaller pool runs fewer steps (30 at 5/class with none); set Steps to hold it.")
st.altair_chart(charts.seed_strip(compare.seed_points(frame, groups), metric, colours))
d1, d2, d3, _ = st.columns([1, 1, 1, 3])  # under the charts, side by side: between two they read as the next one's
d1.download_button("Chart (PNG)", plotting.chart_png(line), f"{metric}_vs_labeled.png", key="cmp_png")
d2.download_button("Chart (SVG)", plotting.chart_svg(line), f"{metric}_vs_labeled.svg", key="cmp_svg")
if bars is not None:
    d3.download_button("Bars (SVG)", plotting.chart_svg(bars), f"{metric}_bars.svg", key="cmp_bars_svg")

verdicts(summary, metric)

st.subheader("Paired comparison")
pairs = summary.pairs[metric]
if not pairs:
    st.caption("Two groups on the same data and labeled amount with shared seeds compare here.")
else:
    # the pairs by name, not by position: a filter that reorders them had left the box naming one pair and the
    # figures below another
    named = {f"{p.a}  vs  {p.b}": p for p in pairs}
    pair = named[st.selectbox("Groups", list(named), key="cmp_pair")]
    a_is, b_is, *rest = pair.explain()
    st.markdown(f"**{plain(a_is)}**  \n**{plain(b_is)}**  \n" + "  \n".join(f"{plain(line)}." for line in rest))
    st.dataframe({"seed": pair.seeds, "A − B": pair.diffs}, hide_index=True, placeholder="–")

st.subheader("Selected runs")
if not selected:
    st.caption("Select finished runs in the table above to overlay their curves and compare them closely.")
    st.stop()

with st.expander("Details of the selected runs"):
    st.dataframe(frame[frame["run_id"].isin([r.id for r in selected])][
        ["run_id", "method", "amount", "labels read", "labeled", "unlabeled", "val_rows", "validation", "test_rows",
         "seed", "steps", "selection", "seconds", "backbone", "dataset", "data_path"]],
                 hide_index=True, placeholder="–")
names = compare.distinct_names(runs)
evaluations = compare.evaluations_frame(registry, selected, names)
if without := [names[r.id] for r in selected if r.id not in set(evaluations["run_id"])]:
    st.caption(f"No validation curves for {'; '.join(without)}: fitted in one go (the LR references), or restored "
               "from a record of metrics.")
if not evaluations.empty:
    st.altair_chart(charts.evaluation_curves(evaluations, ["val_accuracy", "val_macro_f1", "val_mcc"]))
normalized = st.toggle("Row-normalise confusion matrices", key="cmp_norm", persist_state="session")
cols = st.columns(min(3, len(selected)))
tables = {run.id: registry.tables(run.id) for run in selected}  # read now: every list reads the runs without them
for i, run in enumerate(selected):
    if (cells := compare.confusion_frame(tables[run.id], normalized)) is None:  # past DENSE_UP_TO classes
        cols[i % len(cols)].caption(f"{plain(names[run.id])}: too many classes to draw a confusion matrix of")
        continue
    labels = list(cells["true"].unique())
    cols[i % len(cols)].altair_chart(plotting.confusion(cells, labels, names[run.id], normalized))
st.altair_chart(charts.per_class_heatmap(compare.per_class_f1(selected, tables, names), tuple(labels)))

if len(selected) >= 2:
    st.markdown("**Settings that differ**")
    diff = compare.settings_diff(selected, names)  # a row a run, its name whole; a column a setting
    st.dataframe(diff, hide_index=True, placeholder="–", column_config={"run": st.column_config.TextColumn(width=420)})
if len(selected) == 2:
    a, b = selected
    try:
        test = compare.paired_test(registry, a.id, b.id)
    except ValueError as e:
        st.warning(str(e))
    else:
        st.markdown(f"**McNemar's test** ({'exact' if test.exact else 'χ² with continuity correction'}), A = "
                    f"{names[a.id]}, B = {names[b.id]}: only A right on {test.only_a} texts, only B right on "
                    f"{test.only_b}; p = {test.p_value:.4f}.")
        st.info(test.verdict(names[a.id], names[b.id]))
else:
    st.caption("Select exactly two finished runs for McNemar's test per text.")
