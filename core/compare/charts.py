"""Altair figures of runs: metrics against the labeled amount, bars, evaluation curves, confusion matrices,
per-class F1 and one prediction's probabilities."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.plotting import class_scale


def metric_vs_amount(agg: pd.DataFrame, metric: str) -> alt.Chart:
    """The seed report's figure: a metric against the number of labeled texts (log x), one line per
    method, with a band of ± one standard deviation over seeds; the tooltip names the amount as chosen."""
    data = agg.assign(low=agg[f"{metric}_mean"] - agg[f"{metric}_std"], high=agg[f"{metric}_mean"] + agg[f"{metric}_std"])
    x = alt.X("labeled:Q", scale=alt.Scale(type="log"), title="labeled texts (log scale)")
    base = alt.Chart(data).encode(x=x, color=alt.Color("method:N", title="method",
                                                       legend=alt.Legend(orient="bottom", columns=1)))
    band = base.mark_area(opacity=0.2).encode(y="low:Q", y2="high:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y(f"{metric}_mean:Q", title=metric.replace("_", "-")),
        tooltip=["method", "amount", alt.Tooltip("labeled:Q", format=".0f"), "runs",
                 alt.Tooltip(f"{metric}_mean:Q", format=".3f"), alt.Tooltip(f"{metric}_std:Q", format=".3f")])
    return (band + line).properties(width=480, height=300)


def grouped_bars(agg: pd.DataFrame, metric: str) -> alt.Chart:
    """One panel per labeled amount (in order of labeled texts), one bar per method."""
    order = list(dict.fromkeys(agg.sort_values("labeled")["amount"]))
    return alt.Chart(agg).mark_bar().encode(
        x=alt.X("method:N", title=None, axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y(f"{metric}_mean:Q", title=metric.replace("_", "-")),
        color=alt.Color("method:N", legend=alt.Legend(orient="bottom", columns=1)),
        column=alt.Column("amount:O", title="labeled amount", sort=order),
        tooltip=["method", "amount", "runs", alt.Tooltip(f"{metric}_mean:Q", format=".3f")],
    ).properties(width=110, height=220)


def evaluation_curves(evaluations: pd.DataFrame, metrics: list[str]) -> alt.Chart:
    """Curves over optimizer steps, one panel per metric (GAN-BERT's D and G losses and its fake-class
    probability on real validation texts apart), one line per run."""
    data = evaluations[evaluations["metric"].isin(metrics)]
    return alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("step:Q", axis=alt.Axis(tickMinStep=1)),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("run:N", legend=alt.Legend(orient="bottom", columns=2)),
        tooltip=["run", "metric", "step", alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=260, height=180).facet(facet=alt.Facet("metric:N", title=None), columns=3).resolve_scale(
        y="independent")


def confusion(cells: pd.DataFrame, labels: list[str], title: str, normalized: bool) -> alt.Chart:
    base = alt.Chart(cells).encode(x=alt.X("predicted:N", sort=labels), y=alt.Y("true:N", sort=labels))
    fmt = ".2f" if normalized else ".0f"
    heat = base.mark_rect().encode(color=alt.Color("value:Q", scale=alt.Scale(scheme="blues"), legend=None),
                                   tooltip=["true", "predicted", alt.Tooltip("value:Q", format=fmt)])
    text = base.mark_text(fontSize=10).encode(text=alt.Text("value:Q", format=fmt))
    return (heat + text).properties(width=240, height=240, title=title)


def per_class_heatmap(f1: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    base = alt.Chart(f1).encode(x=alt.X("class:N", sort=list(labels)), y=alt.Y("run:N", title=None))
    heat = base.mark_rect().encode(color=alt.Color("f1:Q", scale=alt.Scale(scheme="greens", domain=[0, 1])),
                                   tooltip=["run", "class", alt.Tooltip("f1:Q", format=".3f")])
    return (heat + base.mark_text(fontSize=10).encode(text=alt.Text("f1:Q", format=".2f"))).properties(width=420)


def probabilities(probs: dict[str, float], labels: tuple[str, ...]) -> alt.Chart:
    data = pd.DataFrame({"class": list(probs), "probability": list(probs.values())})
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        y=alt.Y("class:N", sort=list(labels), title=None),
        color=alt.Color("class:N", scale=class_scale(labels), legend=None),
        tooltip=["class", alt.Tooltip("probability:Q", format=".1%")],
    ).properties(height=24 * len(labels))
