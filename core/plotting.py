"""Chart basics every figure shares: one colour per class, static PNG/SVG export, and the confusion matrix (drawn
on Compare and Classify, and into a run's MLflow export)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

# Tableau 10, fixed per class position so a class keeps its colour on every page.
_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
            "#9c755f", "#bab0ac")


# Tableau 20's strong hues, then their light twins: Compare colours runs' series, often more than ten (12 on
# the bench's home, where Tableau 10 gave two series pairs one colour each).
SERIES_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#499894", "#59a14f", "#b6992d", "#b07aa1", "#d37295",
                  "#9d7660", "#79706e", "#a0cbe8", "#ffbe7d", "#ff9d9a", "#86bcb6", "#8cd17d", "#f1ce63", "#d4a6c8",
                  "#fabfd2", "#d7b5a6", "#bab0ac")


def class_colors(labels: tuple[str, ...]) -> dict[str, str]:
    """Stable colour for each class name, by its position in the label set."""
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(labels)}


def class_scale(labels: tuple[str, ...]) -> alt.Scale:
    """A class keeps its colour on every page, report and export."""
    colors = class_colors(labels)
    return alt.Scale(domain=list(colors), range=list(colors.values()))


SPLIT_ORDER = ["train", "val", "test"]


def category_axis(**kw) -> alt.Axis:
    """An axis of categories that shows every label, whole: Vega-Lite otherwise drops every other label
    when they crowd (n-grams, confusion rows, class bars) and cuts long ones."""
    return alt.Axis(labelOverlap=False, labelLimit=0, **kw)


def whole_legend(**kw) -> alt.Legend:
    """A legend under the chart with whole labels and title: beside a chart it pushes the figure past the page's
    width, and Vega-Lite cuts labels longer than 160 px (run names are longer). Its swatches are opaque: they
    took the opacity of a chart's pale band layer, and a walk could not tell two lines' colours apart."""
    return alt.Legend(**{"orient": "bottom", "labelLimit": 0, "titleLimit": 0, "symbolOpacity": 1} | kw)


def chart_png(chart: alt.TopLevelMixin) -> bytes:
    """Static PNG export (vl-convert; no browser and no network)."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(chart.to_json(), scale=2)


def chart_svg(chart: alt.TopLevelMixin) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(chart.to_json())


CELL = 38  # px per class in a confusion matrix: room for a count in 12 px type, three matrices a row


def confusion_cells(metrics: dict, normalize: bool = False) -> pd.DataFrame:
    """A confusion matrix (`confusion`, rows true, over `classes`) as (true, predicted, value) cells. A class
    neither in the truth nor in the predictions (bloomz in the M4 sample) is left out, on Compare and Classify
    alike: an all-zero row and column say nothing."""
    matrix, names = np.asarray(metrics["confusion"], dtype=float), metrics["classes"]
    if not matrix.size:
        return pd.DataFrame(columns=["true", "predicted", "value"])
    present = [i for i in range(len(names)) if matrix[i].sum() + matrix[:, i].sum() > 0]
    if normalize:
        matrix = matrix / matrix.sum(1, keepdims=True).clip(min=1)
    return pd.DataFrame([{"true": names[i], "predicted": names[j], "value": matrix[i, j]}
                         for i in present for j in present])


def confusion(cells: pd.DataFrame, labels: list[str], title: str, normalized: bool) -> alt.Chart:
    base = alt.Chart(cells).encode(x=alt.X("predicted:N", sort=labels, axis=category_axis()),
                                   y=alt.Y("true:N", sort=labels, axis=category_axis()))
    fmt = ".2f" if normalized else ".0f"
    # white at 0 (in rgb: hcl passes through cyan), whatever the smallest count: on the blues scheme an empty cell was
    # tinted almost as a cell of 1
    heat = base.mark_rect(stroke="#e6e6e6").encode(
        color=alt.Color("value:Q", scale=alt.Scale(domainMin=0, range=["#ffffff", "#08519c"], interpolate="rgb"),
                        legend=None),
        tooltip=["true", "predicted", alt.Tooltip("value:Q", format=fmt)])
    text = base.mark_text(fontSize=12).encode(
        text=alt.Text("value:Q", format=fmt),
        color=alt.condition(alt.datum.value > cells["value"].max() / 2, alt.value("white"), alt.value("black")))
    # a run's name on two lines, what trained and then "@ amount · seed · dataset": confusions sit three a row
    lines = title.split(" @ ", 1)
    lines[1:] = [f"@ {rest}" for rest in lines[1:]]
    # a step per class, not a fixed size: Streamlit keeps a step's rows at their height when it fits a chart to
    # its column (a fixed 240 px square rendered 13 px rows full width)
    return (heat + text).properties(width=alt.Step(CELL), height=alt.Step(CELL),
                                    title=alt.TitleParams(lines, fontSize=11))
