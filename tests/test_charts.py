"""Charts and tables a reader can read: no categorical axis drops or cuts labels, no legend is cut off, and
no table shows "None" for a missing value."""

from __future__ import annotations

import ast

import altair as alt
import pandas as pd

from core.compare import charts as compare_charts
from core.paths import REPO_ROOT
from core.plotting import category_axis, whole_legend

CHART_SOURCES = [REPO_ROOT / "core" / "explore" / "charts.py", REPO_ROOT / "core" / "compare" / "charts.py",
                 REPO_ROOT / "core" / "explore" / "report.py", *sorted((REPO_ROOT / "pages").glob("*.py"))]


def categorical_axes_without_every_label() -> list[str]:
    """Every alt.X / alt.Y of a nominal or ordinal field whose axis is not the category axis."""
    wrong = []
    for path in CHART_SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in "XY"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "alt" and node.args
                    and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).endswith((":N", ":O"))):
                continue
            axis = next((k.value for k in node.keywords if k.arg == "axis"), None)
            if not (isinstance(axis, ast.Call) and getattr(axis.func, "id", None) == "category_axis"):
                wrong.append(f"{path.name}:{node.lineno} {node.args[0].value}")
    return wrong


LEGEND_CHANNELS = ("Color", "StrokeDash", "Shape", "Size", "Opacity")


def legends_that_may_be_cut() -> list[str]:
    """Every channel with a legend (colour, dash, shape, size, opacity) whose legend is neither hidden (None)
    nor the whole legend under the chart."""
    wrong = []
    for path in CHART_SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in LEGEND_CHANNELS and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "alt"):
                continue
            legend = next((k.value for k in node.keywords if k.arg == "legend"), None)
            hidden = isinstance(legend, ast.Constant) and legend.value is None
            if not (hidden or isinstance(legend, ast.Call) and getattr(legend.func, "id", None) == "whole_legend"):
                wrong.append(f"{path.name}:{node.lineno}")
    return wrong


def test_every_legend_sits_under_its_chart_with_whole_labels():
    assert legends_that_may_be_cut() == []
    spec = whole_legend().to_dict()
    assert spec["orient"] == "bottom" and spec["labelLimit"] == 0


def test_every_categorical_axis_shows_every_label():
    assert categorical_axes_without_every_label() == []


def test_the_category_axis_never_drops_or_cuts_a_label():
    spec = category_axis().to_dict()
    assert spec["labelOverlap"] is False and spec["labelLimit"] == 0


def test_a_rendered_confusion_matrix_keeps_all_six_class_labels():
    labels = ["human", "chatGPT", "cohere", "davinci", "bloomz", "dolly"]
    cells = pd.DataFrame([(t, p, 1.0) for t in labels for p in labels], columns=["true", "predicted", "value"])
    spec = compare_charts.confusion(cells, labels, "m", normalized=False).to_dict()
    for layer in spec["layer"]:
        for channel in ("x", "y"):
            assert layer["encoding"][channel]["axis"]["labelOverlap"] is False
            assert layer["encoding"][channel]["sort"] == labels
    assert isinstance(compare_charts.confusion(cells, labels, "m", False), alt.LayerChart)


def test_evaluation_curves_count_whole_steps_and_keep_legends_whole():
    data = pd.DataFrame({"run": ["a", "a"], "step": [1.0, 2.0], "metric": ["loss", "loss"], "value": [0.5, 0.4]})
    spec = compare_charts.evaluation_curves(data, ["loss"]).to_dict()["spec"]["encoding"]
    assert spec["x"]["axis"]["format"] == "d" and spec["color"]["legend"]["labelLimit"] == 0


def test_no_table_shows_none_for_a_missing_metric():
    """Streamlit writes "None" in a missing cell (a running run's test score, a one-seed group's interval)
    unless the table names a placeholder."""
    bare = [f"{path.name}:{node.lineno}" for path in sorted((REPO_ROOT / "pages").glob("*.py"))
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dataframe"
            and not any(k.arg == "placeholder" for k in node.keywords)]
    assert bare == []
