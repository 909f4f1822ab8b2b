"""Charts a reader can read: no categorical axis drops or cuts labels."""

from __future__ import annotations

import ast

import altair as alt
import pandas as pd

from core.compare import charts as compare_charts
from core.paths import REPO_ROOT
from core.plotting import category_axis

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
