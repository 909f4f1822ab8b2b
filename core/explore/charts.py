"""Altair figures of the exploration views; the dashboard and the HTML report share them."""

from __future__ import annotations

import io

import altair as alt
import pandas as pd

from core.plotting import SPLIT_ORDER, category_axis, class_colors, class_scale, whole_legend

KL_CELL = 44  # px per class in the KL matrix: "0.48" in 11 px type with room around it
HEXAGON = "M0,-1L0.866,-0.5L0.866,0.5L0,1L-0.866,0.5L-0.866,-0.5Z"


def kept(frame: pd.DataFrame, labels: tuple[str, ...]) -> pd.DataFrame:
    """The rows of the classes a chart is given (`stats.chart_classes`: at most 40), and of all classes together."""
    return frame[frame["class"].isin({*labels, "all"})]


def class_counts(counts: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    tidy = kept(counts.reset_index().melt(id_vars="class", var_name="split", value_name="rows"), labels)
    return alt.Chart(tidy).mark_bar().encode(
        x=alt.X("class:N", sort=list(labels), title=None, axis=category_axis()),
        y=alt.Y("rows:Q", title="texts"),
        color=alt.Color("class:N", scale=class_scale(labels), legend=None),
        column=alt.Column("split:N", title=None, sort=SPLIT_ORDER),
        tooltip=["split", "class", "rows"],
    ).properties(width=180, height=200)


OTHER = "(the other classes)"
LENGTH_PANEL = 220  # px a length panel is wide
LABEL_CHAR = 5.5  # px a character of a 9-px label takes


def length_histogram(hist: pd.DataFrame, labels: tuple[str, ...], measure: str,
                     max_len: int | None = None) -> alt.Chart:
    """Per-class histograms, one small panel per class, as shares of each class's texts (classes of any size
    on one scale), with the chosen max length as a rule. The axis spans the bins: a max length past them drew
    no bar there but squeezed every bar into a corner of its panel. The last bin, when it holds the longest 1%,
    says from where above its bar, ending at its right edge, unless the rule would cross the words (a walk saw
    "≥ 560" over the 512 rule): then its tooltip alone says it."""
    hist = kept(hist, labels)
    low, high = float(hist["start"].min()), float(hist["end"].max())
    x_scale = alt.Scale(domain=[low, high], nice=False)
    rule = max_len is not None and measure == "tokens" and max_len_off_bars(hist, max_len) is None
    if "tail" in hist:
        hist = hist.assign(tail_label=[f"≥ {s:,.0f}" if t else "" for s, t in zip(hist["start"], hist["tail"])])
    base = alt.Chart().mark_bar().encode(
        x=alt.X("start:Q", bin="binned", title=measure, scale=x_scale),
        x2="end:Q",
        y=alt.Y("share:Q", title="share of texts", axis=alt.Axis(format="%")),
        color=alt.Color("class:N", scale=class_scale(labels + ("all",)), legend=None),
        tooltip=["class", alt.Tooltip("start:Q", format=".0f"), alt.Tooltip("end:Q", format=".0f"), "count",
                 alt.Tooltip("share:Q", format=".1%"), *(["tail_label"] if "tail" in hist else [])],
    ).properties(width=LENGTH_PANEL, height=120)
    layers = [base]
    if "tail" in hist and hist["tail"].any():
        words = max(len(w) for w in hist["tail_label"]) * LABEL_CHAR / LENGTH_PANEL * (high - low)
        if not (rule and high - words - LABEL_CHAR / LENGTH_PANEL * (high - low) <= max_len <= high):
            layers.append(alt.Chart().transform_filter(alt.datum.tail).mark_text(
                dy=-6, fontSize=9, baseline="bottom", align="right").encode(
                    x=alt.X("end:Q", scale=x_scale), y="share:Q", text=alt.Text("tail_label:N")))
    if rule:
        layers.append(alt.Chart().mark_rule(color="black", strokeDash=[4, 3]).encode(x=alt.datum(max_len)))
    return alt.layer(*layers, data=hist).facet(  # each panel its own axis: none drawn under an empty cell
        facet=alt.Facet("class:N", sort=list(labels) + ["all"], title=None), columns=3).resolve_axis(x="independent")


def max_len_off_bars(hist: pd.DataFrame, max_len: int) -> str | None:
    """Where a max length lies that the length histogram's axis does not reach, so no rule marks it, in words
    for the page to say; None when the rule is drawn."""
    if hist["start"].min() <= max_len <= hist["end"].max():
        return None
    return ("past the bars (the last holds the longest 1% of texts)" if max_len > hist["end"].max()
            else "before the bars: every text is longer")


def top_ngrams(ngrams: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    """One panel per class, two a row: whole trigram labels (up to ~200 px on real text) beside 230 px of bars
    keep two panels within the page, where three ran 1,150 px wide."""
    return alt.Chart(kept(ngrams, labels)).mark_bar().encode(
        x=alt.X("count:Q", title="count", axis=alt.Axis(tickMinStep=1, format="d")),  # counts are whole
        y=alt.Y("ngram:N", sort="-x", title=None, axis=category_axis()),
        color=alt.Color("class:N", scale=class_scale(labels), legend=None),
        tooltip=["class", "ngram", "count"],
    ).properties(width=230, height=240).facet(facet=alt.Facet("class:N", sort=list(labels), title=None),
                                              columns=2).resolve_scale(y="independent", x="independent")


def present_scale(labels: tuple[str, ...], present: set[str]) -> alt.Scale:
    """Each class's own colour (`class_scale`), with only the classes that have texts here in the legend: the M4
    sample's maps listed bloomz, which has none."""
    colors = class_colors(labels)
    shown = [c for c in labels if c in present]
    return alt.Scale(domain=shown, range=[colors[c] for c in shown])


def scatter_map(points: pd.DataFrame, labels: tuple[str, ...], title: str) -> alt.Chart:
    """The splits side by side on shared axes, coloured by class; the axes span the points (UMAP's sit far from
    0, and an axis from 0 left half the plot empty), and a few hundred points are drawn larger than thousands.
    Three splits (train, val, test) share the width two had."""
    points = kept(points, labels)
    size = min(60.0, max(12.0, 12_000 / max(1, len(points))))
    width = 340 if points["split"].nunique() < 3 else 270
    return alt.Chart(points).mark_circle(size=size, opacity=0.6).encode(
        x=alt.X("x:Q", title="map axis 1", axis=alt.Axis(labels=False), scale=alt.Scale(zero=False)),
        y=alt.Y("y:Q", title="map axis 2", axis=alt.Axis(labels=False), scale=alt.Scale(zero=False)),
        color=alt.Color("class:N", scale=present_scale(labels, set(points["class"])), legend=whole_legend()),
        column=alt.Column("split:N", title=None, sort=SPLIT_ORDER),
        tooltip=["split", "class"],
    ).properties(width=width, height=300, title=title)


HEX_PANEL = 200  # px across a density panel: at 105 px, 30 hexagons across were 3 px specks


def log_ticks(top: int) -> list[int]:
    """Round counts from 1 to `top` for a log colour legend: Vega-Lite labelled only 1 and 10."""
    return [v * 10 ** e for e in range(len(str(max(top, 1)))) for v in (1, 2, 5) if v * 10 ** e <= max(top, 1)]


def hexbin_map(bins: pd.DataFrame, labels: tuple[str, ...], width: int = HEX_PANEL) -> alt.Chart:
    """Density per class (rows) and split (columns) as hexagons that tile the grid: a class's splits side by side,
    and panels wide enough for hexagons to read as hexagons (six classes across had left 105 px each). One pixel
    scale on both axes keeps the lattice's hexagons regular, so a panel is as tall as the map's shape asks."""
    bins = kept(bins, labels)
    cell = float(bins["cell"].iloc[0])
    pad = 0.6 * cell  # a hexagon's half-width, and some: edge hexagons drawn whole
    x_domain = [float(bins["x"].min()) - pad, float(bins["x"].max()) + pad]
    y_domain = [float(bins["y"].min()) - pad, float(bins["y"].max()) + pad]
    height = int(min(max(width * (y_domain[1] - y_domain[0]) / (x_domain[1] - x_domain[0]), width / 2), width * 1.5))
    step = width * cell / (x_domain[1] - x_domain[0])  # px between neighbouring hexagons in a row
    size = step ** 2 / 0.75  # the path's box, sqrt(size) px wide, holds a hexagon 0.866 of it wide: `step` wide
    return alt.Chart(bins).mark_point(shape=HEXAGON, filled=True, size=size, opacity=1).encode(
        x=alt.X("x:Q", title=None, axis=alt.Axis(labels=False, ticks=False, grid=False),
                scale=alt.Scale(domain=x_domain, nice=False, zero=False)),
        y=alt.Y("y:Q", title=None, axis=alt.Axis(labels=False, ticks=False, grid=False),
                scale=alt.Scale(domain=y_domain, nice=False, zero=False)),
        color=alt.Color("count:Q", scale=alt.Scale(scheme="viridis", type="log"), title="texts per hexagon",
                        legend=whole_legend(values=log_ticks(int(bins["count"].max())), gradientLength=300)),
        tooltip=["split", "class", alt.Tooltip("count:Q", title="texts here")],
    ).properties(width=width, height=height).facet(
        row=alt.Row("class:N", sort=[c for c in labels if c in set(bins["class"])], title=None,
                    header=alt.Header(labelAngle=0, labelAlign="left")),
        column=alt.Column("split:N", title=None, sort=SPLIT_ORDER),
        spacing=24,  # with a frame each: a walk read one panel's cluster as its neighbour's
    ).configure_view(stroke="#bbbbbb", strokeWidth=1)


def kl_matrix(shift: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    cells = shift[shift["train"] != "all"]
    order = [c for c in labels if c in set(cells["train"])]
    base = alt.Chart(cells).encode(
        x=alt.X("test:N", sort=order, title="test class", axis=category_axis()),
        y=alt.Y("train:N", sort=order, title="train class", axis=category_axis()),
    )
    heat = base.mark_rect().encode(color=alt.Color("kl:Q", scale=alt.Scale(scheme="blues"), title="KL (nats)",
                                                   legend=whole_legend()),
                                   tooltip=["train", "test", alt.Tooltip("kl:Q", format=".3f")])
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text("kl:Q", format=".2f"),
        # white on the darker half of the colour scale, which spans the cells' range
        color=alt.condition(alt.datum.kl > (cells["kl"].min() + cells["kl"].max()) / 2, alt.value("white"),
                            alt.value("black")))
    # square cells a step each: a fixed 300 px chart, fitted to its column, squashed six rows into 16 px each
    return (heat + text).properties(width=alt.Step(KL_CELL), height=alt.Step(KL_CELL))


def source_breakdown(sources: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    """Texts per source and split, stacked by class; the classes a chart does not show stack as one, so each bar
    still counts every text of its source."""
    other = ~sources["class"].isin(labels)
    if other.any():
        sources = sources.assign(**{"class": sources["class"].where(~other, OTHER)}).groupby(
            ["split", "source", "class"], as_index=False, sort=False)["count"].sum()
        labels = (*labels, OTHER)
    return alt.Chart(sources).mark_bar().encode(
        x=alt.X("count:Q", title="texts"),
        y=alt.Y("source:N", title=None, axis=category_axis()),
        color=alt.Color("class:N", scale=class_scale(labels), legend=whole_legend()),
        row=alt.Row("split:N", title=None, sort=SPLIT_ORDER),
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
