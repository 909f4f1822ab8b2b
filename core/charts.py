"""Altair figures built from `core.explore` frames; the dashboard and the HTML report share them.

Every chart colours classes with `core.labels.class_colors`, so a class looks the same everywhere.
"""

from __future__ import annotations

import io

import altair as alt
import pandas as pd

from core.labels import class_colors

HEXAGON = "M0,-1L0.866,-0.5L0.866,0.5L0,1L-0.866,0.5L-0.866,-0.5Z"


def class_scale(labels: tuple[str, ...]) -> alt.Scale:
    colors = class_colors(labels)
    return alt.Scale(domain=list(colors), range=list(colors.values()))


def class_counts(counts: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    tidy = counts.reset_index().melt(id_vars="class", var_name="split", value_name="rows")
    return alt.Chart(tidy).mark_bar().encode(
        x=alt.X("class:N", sort=list(labels), title=None),
        y=alt.Y("rows:Q", title="texts"),
        color=alt.Color("class:N", scale=class_scale(labels), legend=None),
        column=alt.Column("split:N", title=None),
        tooltip=["split", "class", "rows"],
    ).properties(width=180, height=200)


def length_histogram(hist: pd.DataFrame, labels: tuple[str, ...], measure: str,
                     max_len: int | None = None) -> alt.Chart:
    """Per-class histograms, one small panel per class, with the chosen max length as a rule."""
    base = alt.Chart().mark_bar().encode(
        x=alt.X("start:Q", bin="binned", title=measure),
        x2="end:Q",
        y=alt.Y("count:Q", title="texts"),
        color=alt.Color("class:N", scale=class_scale(labels + ("all",)), legend=None),
        tooltip=["class", alt.Tooltip("start:Q", format=".0f"), alt.Tooltip("end:Q", format=".0f"), "count"],
    ).properties(width=220, height=120)
    layers = [base]
    if max_len is not None and measure == "tokens":
        layers.append(alt.Chart().mark_rule(color="black", strokeDash=[4, 3]).encode(x=alt.datum(max_len)))
    return alt.layer(*layers, data=hist).facet(facet=alt.Facet("class:N", sort=list(labels) + ["all"]), columns=3)


def top_ngrams(ngrams: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    return alt.Chart(ngrams).mark_bar().encode(
        x=alt.X("count:Q", title="count"),
        y=alt.Y("ngram:N", sort="-x", title=None),
        color=alt.Color("class:N", scale=class_scale(labels), legend=None),
        tooltip=["class", "ngram", "count"],
    ).properties(width=230, height=240).facet(facet=alt.Facet("class:N", sort=list(labels)), columns=3).resolve_scale(
        y="independent", x="independent")


def scatter_map(points: pd.DataFrame, labels: tuple[str, ...], title: str) -> alt.Chart:
    """Train and test side by side on shared axes, coloured by class."""
    return alt.Chart(points).mark_circle(size=12, opacity=0.6).encode(
        x=alt.X("x:Q", title=None, axis=alt.Axis(labels=False)),
        y=alt.Y("y:Q", title=None, axis=alt.Axis(labels=False)),
        color=alt.Color("class:N", scale=class_scale(labels)),
        column=alt.Column("split:N", title=None),
        tooltip=["split", "class"],
    ).properties(width=340, height=300, title=title)


def hexbin_map(bins: pd.DataFrame, labels: tuple[str, ...], width: int = 150) -> alt.Chart:
    """Density per split (rows) and class (columns) as hexagons sized to tile the grid."""
    span = float(bins["x"].max() - bins["x"].min()) or 1.0
    cells = span / float(bins["cell"].iloc[0]) + 1
    size = (width / cells) ** 2 * 0.9
    return alt.Chart(bins).mark_point(shape=HEXAGON, filled=True, size=size, opacity=1).encode(
        x=alt.X("x:Q", title=None, axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("y:Q", title=None, axis=alt.Axis(labels=False, ticks=False)),
        color=alt.Color("count:Q", scale=alt.Scale(scheme="viridis", type="log"), title="texts"),
        tooltip=["split", "class", "count"],
    ).properties(width=width, height=width).facet(
        row=alt.Row("split:N", title=None), column=alt.Column("class:N", sort=list(labels), title=None))


def kl_matrix(shift: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    cells = shift[shift["train"] != "all"]
    order = [c for c in labels if c in set(cells["train"])]
    base = alt.Chart(cells).encode(
        x=alt.X("test:N", sort=order, title="test class"),
        y=alt.Y("train:N", sort=order, title="train class"),
    )
    heat = base.mark_rect().encode(color=alt.Color("kl:Q", scale=alt.Scale(scheme="blues"), title="KL (nats)"),
                                   tooltip=["train", "test", alt.Tooltip("kl:Q", format=".3f")])
    text = base.mark_text(fontSize=10).encode(text=alt.Text("kl:Q", format=".2f"))
    return (heat + text).properties(width=300, height=300)


def source_breakdown(sources: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    return alt.Chart(sources).mark_bar().encode(
        x=alt.X("count:Q", title="texts"),
        y=alt.Y("source:N", title=None),
        color=alt.Color("class:N", scale=class_scale(labels)),
        row=alt.Row("split:N", title=None),
        tooltip=["split", "source", "class", "count"],
    ).properties(width=500)


def word_cloud_png(frequencies: pd.DataFrame, color: str, width: int = 400, height: int = 220) -> bytes:
    """A PNG word cloud from word counts, drawn in the class colour."""
    from wordcloud import WordCloud

    freqs = dict(zip(frequencies["ngram"], frequencies["count"].astype(float)))
    if not freqs:
        freqs = {"(no words)": 1.0}
    cloud = WordCloud(width=width, height=height, background_color="white", color_func=lambda *a, **k: color,
                      random_state=0, prefer_horizontal=0.9).generate_from_frequencies(freqs)
    buf = io.BytesIO()
    cloud.to_image().save(buf, format="PNG")
    return buf.getvalue()


def chart_png(chart: alt.TopLevelMixin) -> bytes:
    """Static PNG export (vl-convert; no browser and no network)."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(chart.to_json(), scale=2)


def chart_svg(chart: alt.TopLevelMixin) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(chart.to_json())


# ---------------------------------------------------------------- runs

def metric_vs_fraction(agg: pd.DataFrame, metric: str) -> alt.Chart:
    """The seed report's figure: a metric against the labeled fraction (log x), one line per method,
    with a band of ± one standard deviation over seeds."""
    data = agg.assign(low=agg[f"{metric}_mean"] - agg[f"{metric}_std"], high=agg[f"{metric}_mean"] + agg[f"{metric}_std"])
    x = alt.X("fraction:Q", scale=alt.Scale(type="log"), title="labeled fraction (log scale)",
              axis=alt.Axis(format="%"))
    base = alt.Chart(data).encode(x=x, color=alt.Color("method:N", title="method",
                                                       legend=alt.Legend(orient="bottom", columns=1)))
    band = base.mark_area(opacity=0.2).encode(y="low:Q", y2="high:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y(f"{metric}_mean:Q", title=metric.replace("_", "-")),
        tooltip=["method", alt.Tooltip("fraction:Q", format=".2%"), "runs",
                 alt.Tooltip(f"{metric}_mean:Q", format=".3f"), alt.Tooltip(f"{metric}_std:Q", format=".3f")])
    return (band + line).properties(width=480, height=300)


def grouped_bars(agg: pd.DataFrame, metric: str) -> alt.Chart:
    return alt.Chart(agg).mark_bar().encode(
        x=alt.X("method:N", title=None, axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y(f"{metric}_mean:Q", title=metric.replace("_", "-")),
        color=alt.Color("method:N", legend=alt.Legend(orient="bottom", columns=1)),
        column=alt.Column("fraction:O", title="labeled fraction", header=alt.Header(format=".0%")),
        tooltip=["method", "fraction", "runs", alt.Tooltip(f"{metric}_mean:Q", format=".3f")],
    ).properties(width=110, height=220)


def epoch_curves(epochs: pd.DataFrame, metrics: list[str]) -> alt.Chart:
    """Per-epoch curves, one panel per metric (GAN-BERT's D and G losses apart), one line per run."""
    data = epochs[epochs["metric"].isin(metrics)]
    return alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("epoch:Q", axis=alt.Axis(tickMinStep=1)),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("run:N", legend=alt.Legend(orient="bottom", columns=2)),
        tooltip=["run", "metric", "epoch", alt.Tooltip("value:Q", format=".4f")],
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
