"""Charts and tables a reader can read: no categorical axis drops or cuts labels, no legend is cut off, and
no table shows "None" for a missing value."""

from __future__ import annotations

import ast
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest

from core import compare, plotting
from core.compare import charts as compare_charts
from core.paths import REPO_ROOT
from core.plotting import SERIES_PALETTE, category_axis, whole_legend
from core.train import TrainConfig
from tests.helpers import hand_runs_frame

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
    spec = plotting.confusion(cells, labels, "m", normalized=False).to_dict()
    for layer in spec["layer"]:
        for channel in ("x", "y"):
            assert layer["encoding"][channel]["axis"]["labelOverlap"] is False
            assert layer["encoding"][channel]["sort"] == labels
    assert isinstance(plotting.confusion(cells, labels, "m", False), alt.LayerChart)
    scale = spec["layer"][0]["encoding"]["color"]["scale"]  # an empty cell is white, apart from a cell of 1
    assert scale["domainMin"] == 0 and scale["range"][0] == "#ffffff"


def test_evaluation_curves_count_whole_steps_and_keep_legends_whole():
    data = pd.DataFrame({"run": ["a", "a"], "step": [1.0, 2.0], "metric": ["loss", "loss"], "value": [0.5, 0.4]})
    spec = compare_charts.evaluation_curves(data, ["loss"]).to_dict()["spec"]["encoding"]
    assert spec["x"]["axis"]["format"] == "d" and spec["color"]["legend"]["labelLimit"] == 0
    assert spec["y"]["axis"]["format"] == ".3~f"  # a cancelled run's one MCC of 0 had read "0.000000"


def test_a_runs_curves_are_titled_in_words_in_the_order_asked():
    """The run card titled GAN-BERT's panels "d_supervised" and "g_feature_matching", in alphabetical order."""
    names = ["g_loss", "d_supervised", "val_fake_prob"]
    data = pd.DataFrame({"run": "a", "step": 1.0, "metric": names + ["val_mcc"], "value": 0.5})
    chart = compare_charts.evaluation_curves(data, names).to_dict()
    assert chart["facet"]["sort"] == ["G loss (all terms)", "D loss on labeled texts",
                                      "P(fake) of real validation texts"]
    shown = set(pd.DataFrame(next(iter(chart["datasets"].values())))["metric"])
    assert shown == set(chart["facet"]["sort"])  # titled in words, and only the metrics asked for
    assert chart["resolve"]["axis"]["x"] == "independent"  # 8 panels in rows of 3 drew a step axis under no panel


def test_no_table_shows_none_for_a_missing_metric():
    """Streamlit writes "None" in a missing cell (a running run's test score, a one-seed group's interval)
    unless the table names a placeholder."""
    bare = [f"{path.name}:{node.lineno}" for path in sorted((REPO_ROOT / "pages").glob("*.py"))
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dataframe"
            and not any(k.arg == "placeholder" for k in node.keywords)]
    assert bare == []


PAGE = 940  # px: the content width of the wide layout in a 1,400 px window with the sidebar open (Chromium)


def natural_width(chart) -> float:
    """The drawn width in px: faceted charts keep it on the page (Streamlit can fit only single views)."""
    import vl_convert as vlc

    return float(re.search(r'<svg[^>]*width="([\d.]+)"', vlc.vegalite_to_svg(chart.to_json())).group(1))


def test_faceted_charts_fit_the_page_on_real_text(m4_dir, studio_home):
    from core.backbone.encode import load_tokenizer
    from core.data import DataSpec, load_dataset
    from core.explore import charts as explore_charts
    from core.explore import stats
    from core.explore.report import ExploreOptions, compute_views

    ds = load_dataset(DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl")), studio_home)
    views, labels = compute_views(ds, load_tokenizer(None), ExploreOptions(), None), ds.labels
    widths = {
        "class counts": explore_charts.class_counts(ds.class_counts(), labels),
        "lengths": explore_charts.length_histogram(stats.length_histogram(views["lengths"], "tokens"), labels,
                                                   "tokens", 128),
        **{f"{n}-grams": explore_charts.top_ngrams(views[f"ngrams_{n}"], labels) for n in (1, 2, 3)},
        "map": explore_charts.scatter_map(stats.scatter_sample(views["map"]), labels, "PCA"),
        "hexbins": explore_charts.hexbin_map(stats.hexbin(views["map"], 25), labels),
        "sources": explore_charts.source_breakdown(views["sources"], labels),
    }
    assert {name: w for name, w in ((n, natural_width(c)) for n, c in widths.items()) if w > PAGE} == {}


def test_compare_figures_fit_the_page_with_eight_panels_and_long_names():
    series = ["GAN-BERT G2 (bag of words) on frozen features · train.jsonl", "TF-IDF + LR (reference) · essays.csv"]
    groups = pd.DataFrame([{"series": s, "series_key": s, "labeled": n, "reference": "TF-IDF" in s, "amount": a,
                            "n": 5, "panel": f"{a} ({n} labeled) · {d}", "accuracy_mean": 0.5, "accuracy_low": 0.4,
                            "accuracy_high": 0.6}
                           for s in series for a, n in (("5/class", 30), ("1%", 60), ("20/class", 120), ("5%", 300))
                           for d in ("train.jsonl", "essays.csv")])
    assert natural_width(compare_charts.grouped_bars(groups, "accuracy")) <= PAGE
    name = "GAN-BERT G2 (bag of words) on frozen features @ 20% (24 labeled) · seed 0 · train.jsonl"
    labels = ["human", "chatGPT", "cohere", "davinci", "bloomz", "dolly"]
    cells = pd.DataFrame([(t, p, 1.0) for t in labels for p in labels], columns=["true", "predicted", "value"])
    assert natural_width(plotting.confusion(cells, labels, name, False)) <= PAGE / 3 + 20  # three a row
    curves = pd.DataFrame([{"run": f"{name} {r}", "step": s, "metric": m, "value": 0.5} for r in range(3)
                           for s in (1, 2) for m in ("val_accuracy", "val_macro_f1", "val_mcc")])
    assert natural_width(compare_charts.evaluation_curves(curves, ["val_accuracy", "val_macro_f1", "val_mcc"])) <= PAGE


def test_length_histograms_share_one_scale_and_end_at_their_last_bin():
    """A small class's bars were flattened by the count scale of "all", and a max length past the longest bin
    stretched the axis, squeezing every bar into the left of its panel: bars are shares of their class's
    texts, and the axis spans the bins."""
    from core.explore import charts as explore_charts
    from core.explore import stats

    lens = pd.DataFrame({"class": ["human"] * 90 + ["dolly"] * 10, "tokens": list(range(10, 100)) + [40] * 10})
    hist = stats.length_histogram(lens, "tokens", bins=10)
    assert hist.groupby("class")["share"].sum().to_dict() == pytest.approx({"all": 1.0, "dolly": 1.0, "human": 1.0})
    assert hist.query("`class` == 'dolly'")["share"].max() == 1.0  # as tall as any bar, though 10 texts of 100
    # √100 = 10 bins wanted, 9 tokens wide: 16, the next power of two, so that 128, 256 and 512 (what each max
    # length cuts) fall on edges; whole tokens (4.5-token bins of whole lengths drew a comb)
    assert set(hist["end"] - hist["start"]) == {16.0} and hist["start"].min() == 0 and not hist["tail"].any()
    assert 64 in set(hist["start"])

    def drawn(max_len: int) -> dict:
        chart = explore_charts.length_histogram(hist, ("human", "dolly"), "tokens", max_len).to_dict()
        assert chart["resolve"]["axis"]["x"] == "independent"  # no axis drawn under the empty cells of a row
        spec = chart["spec"]
        return {"domain": spec["layer"][0]["encoding"]["x"]["scale"]["domain"], "rule": len(spec["layer"]) == 2}

    span = [0.0, float(hist["end"].max())]  # from the edge below the shortest text: no empty bins before it
    assert drawn(64) == {"domain": span, "rule": True}
    assert drawn(512) == {"domain": span, "rule": False}
    # a long tail: the last bin holds the longest 1% and says from where
    long = stats.length_histogram(pd.DataFrame({"class": ["human"] * 200, "tokens": list(range(1, 199)) + [900, 950]}),
                                  "tokens")
    assert long["tail"].sum() == 2 and long.loc[long["tail"], "start"].nunique() == 1  # its class's and "all"
    spec = explore_charts.length_histogram(long, ("human",), "tokens", 128).to_dict()["spec"]
    assert any(layer["mark"]["type"] == "text" for layer in spec["layer"])
    assert f"≥ {long.loc[long['tail'], 'start'].iloc[0]:,.0f}" in set(
        explore_charts.length_histogram(long, ("human",), "tokens", 128).data["tail_label"])
    # a rule where the words would be (the walk's "≥ 560" over the 512 rule): the tooltip alone says it
    end = float(long["end"].max())
    crossed = explore_charts.length_histogram(long, ("human",), "tokens", int(end - 1)).to_dict()["spec"]
    assert [layer["mark"]["type"] for layer in crossed["layer"]] == ["bar", "rule"]
    assert any(t.get("field") == "tail_label" for t in crossed["layer"][0]["encoding"]["tooltip"])


def test_the_kl_matrix_has_square_cells_that_fit_its_column():
    """Drawn 300 px wide and fitted to its column, it squashed six rows into 16 px each, crowding their labels."""
    from core.explore import charts as explore_charts

    labels = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")
    shift = pd.DataFrame([{"train": t, "test": u, "kl": 0.1} for t in (*labels, "all") for u in labels])
    chart = explore_charts.kl_matrix(shift, labels)
    assert chart.to_dict()["width"] == chart.to_dict()["height"] == {"step": explore_charts.KL_CELL}
    assert natural_width(chart) <= PAGE * 2 / 3  # its column, beside the per-class table


def test_a_class_neither_true_nor_predicted_is_left_out_of_confusions_on_every_page():
    from core.plotting import confusion_cells

    cells = confusion_cells({"confusion": [[2, 1, 0], [0, 3, 0], [0, 0, 0]], "classes": ["a", "b", "bloomz"]})
    assert set(cells["true"]) == set(cells["predicted"]) == {"a", "b"} and len(cells) == 4
    kept = confusion_cells({"confusion": [[2, 1, 1], [0, 3, 0], [0, 0, 0]], "classes": ["a", "b", "bloomz"]})
    assert set(kept["true"]) == {"a", "b", "bloomz"}  # predicted though never true: its column says something


def test_a_confusion_matrix_names_its_rows_by_the_classes_the_metrics_name_not_by_key_order():
    """Records written with sorted keys reordered per_class (bloomz first): the matrix of a restored run came out
    labelled alphabetically, human's row named bloomz. Metrics now name their classes; older runs, whose
    per_class the registry kept in label-id order, still read theirs."""
    import json

    from core.compare import confusion_frame
    from core.train.metrics import classification_metrics

    labels = ("human", "chatGPT", "bloomz")
    metrics = classification_metrics(np.array([0, 0, 1]), np.array([0, 1, 1]), labels)
    assert metrics["classes"] == list(labels)
    sorted_keys = json.loads(json.dumps({"test": metrics}, sort_keys=True))
    assert list(sorted_keys["test"]["per_class"]) == ["bloomz", "chatGPT", "human"]

    def rows(test: dict) -> dict[str, float]:
        cells = confusion_frame(test)  # a run's tables, as the registry keeps them
        return cells.groupby("true", sort=False)["value"].sum().to_dict()

    assert rows(sorted_keys["test"]) == {"human": 2, "chatGPT": 1}
    older = {k: v for k, v in metrics.items() if k != "classes"}  # per_class in label-id order
    assert rows(older) == {"human": 2, "chatGPT": 1}


def test_one_labeled_amount_draws_bars_with_intervals_and_reference_lines_at_a_readable_size():
    """One amount made a line chart of 80 px with five overlapping dots and a cut y title."""
    import vl_convert as vlc

    rows = [("GAN-BERT G1 (noise) on frozen features", False, 0.45), ("Trained head on frozen features", False, 0.47),
            ("GAN-BERT control (adversarial off) on frozen features", False, 0.48),
            ("Frozen features + LR (reference)", True, 0.465), ("TF-IDF + LR (reference)", True, 0.37)]
    groups = pd.DataFrame([{"series": s, "series_key": s, "labeled": 25, "reference": ref, "amount": "5/class",
                            "n": 5, "accuracy_mean": m, "accuracy_low": m - 0.05, "accuracy_high": m + 0.05,
                            "accuracy_interval": f"[{m - 0.05:.3f}, {m + 0.05:.3f}]"} for s, ref, m in rows])
    chart = compare_charts.metric_vs_amount(groups, "accuracy")
    spec = chart.to_dict()
    layers = [*spec["layer"][:2], *spec["layer"][2]["layer"]]  # the references' two in one layer: one legend
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in layers]
    # bars, their intervals, the references' intervals as pale bands, and their dashed lines at the means
    assert marks == ["bar", "rule", "rect", "rule"]
    assert layers[3]["mark"]["strokeDash"] == [6, 4] and spec["title"] == (
        "accuracy at 5/class: mean and 95% CI over seeds")
    svg = vlc.vegalite_to_svg(chart.to_json())
    height = float(re.search(r'<svg[^>]*height="([\d.]+)"', svg).group(1))
    assert height >= 3 * 28 + 40 and natural_width(chart) <= PAGE
    assert "accuracy (mean, 95% CI)" in svg  # the axis title whole
    alone = compare_charts.metric_vs_amount(groups[~groups["reference"]], "accuracy")  # references filtered out
    assert len(alone.to_dict()["layer"]) == 2 and "references" not in vlc.vegalite_to_svg(alone.to_json())
    # two amounts or more: the line chart, its title above it and not along a short axis
    more = pd.concat([groups, groups.assign(labeled=100, amount="20/class")])
    lines = compare_charts.metric_vs_amount(more, "accuracy").to_dict()
    assert lines["layer"][1]["mark"]["type"] == "line"
    # the plot keeps its 300 px beside a legend (fitted whole when stretched, it kept 90), its axis spans the
    # amounts there are (not 10 to 1,000 for 25 to 100), and the legend says what a dashed line is
    assert lines["autosize"]["type"] == "fit-x" and lines["height"] == 300
    x = lines["layer"][1]["encoding"]["x"]["scale"]
    assert x["domain"] == pytest.approx([25 / 1.2, 100 * 1.2]) and x["nice"] is False
    assert lines["layer"][1]["encoding"]["color"]["title"].startswith("dashed: converged references")
    assert "opacity" in lines["layer"][0]["encoding"]  # every series has its band; the references' paler


def test_an_interval_past_the_metrics_range_is_printed_as_computed_and_clamped_on_the_axis_with_a_note():
    """Two seeds' t interval runs past the metric's range (on the walk's frozen head, about -0.5 to 1.45): printed as
    "[0.000, 1.000]" it read as a computed interval, and its whisker spanned the axis with nothing to say why."""
    frame = hand_runs_frame([(TrainConfig(method="finetune", frozen=True, fraction=0.1, seed=s), score)
                             for s, score in ((0, 0.05), (1, 0.95))] +
                            [(TrainConfig(method="features-lr", frozen=True, fraction=0.1, seed=s), score)
                             for s, score in ((0, 0.40), (1, 0.42))])
    groups = compare.summarize(frame, "accuracy", compare.METRICS).groups
    wide = groups[groups["method"] == "Trained head on frozen features"].iloc[0]
    assert wide["accuracy_low"] < -5 and wide["accuracy_high"] > 6  # as computed: 2 seeds, t = 12.7
    assert wide["accuracy_interval"].endswith(": past [0, 1], too few seeds to bound the mean")
    narrow = groups[groups["reference"]].iloc[0]
    assert narrow["accuracy_interval"] == f"[{narrow['accuracy_low']:.3f}, {narrow['accuracy_high']:.3f}]"
    spec = compare_charts.one_amount(groups, "accuracy").to_dict()
    marked = [n for n in spec_nodes(spec) if "mark" in n]  # every layer drawn, the references' nested ones too
    assert all(layer["encoding"]["x"]["scale"]["clamp"] for layer in marked)  # drawn to the axis' edge
    assert any(t.get("field") == "accuracy_interval" for layer in marked
               for t in layer["encoding"].get("tooltip", []))  # and the tooltip says why


def test_references_alone_at_one_amount_are_drawn_on_a_plot_with_height():
    """A walk compared TF-IDF + LR with features + LR alone: the plot's height came from a row per method, none,
    and their dashed lines were not drawn at all."""
    frame = hand_runs_frame([(TrainConfig(method=m, frozen=True, fraction=0.1, seed=s), 0.3 + s / 10)
                             for m in ("tfidf-lr", "features-lr") for s in (0, 1)])
    groups = compare.summarize(frame, "accuracy", compare.METRICS).groups
    assert groups["reference"].all()
    spec = compare_charts.one_amount(groups, "accuracy").to_dict()
    assert spec["height"] >= 84 and any(n.get("mark", {}).get("type") == "rule" for n in spec_nodes(spec))
    with_method = pd.concat([groups, groups.iloc[:1].assign(reference=False, series="a method")])
    assert compare_charts.one_amount(with_method, "accuracy").to_dict()["height"] == {"step": 28}


def test_per_class_f1_rows_are_tall_enough_for_their_figures():
    f1 = pd.DataFrame([{"run": f"run {i}", "class": c, "f1": 0.5} for i in range(6) for c in ("human", "dolly")])
    assert compare_charts.per_class_heatmap(f1, ("human", "dolly")).to_dict()["height"] == {"step": 24}


def test_a_class_keeps_its_colour_in_a_model_that_left_one_out():
    """A model trained without bloomz drew dolly in bloomz's green on Classify, yellow everywhere else."""
    from core.plotting import class_colors

    six = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")
    five = tuple(c for c in six if c != "bloomz")
    scale = compare_charts.probabilities(dict.fromkeys(five, 0.2), five, six).to_dict()["encoding"]["color"]["scale"]
    colors = dict(zip(scale["domain"], scale["range"]))
    assert colors["dolly"] == class_colors(six)["dolly"] != class_colors(five)["dolly"]


def test_each_probability_bar_says_its_figure_in_class_order():
    """A bar near 100% reads as certainty; the figure beside the class says how near."""
    chart = compare_charts.probabilities({"dolly": 0.0002, "human": 0.2062, "bloomz": 0.7936},
                                         ("human", "chatGPT", "bloomz", "dolly"))
    spec = chart.to_dict()
    assert spec["encoding"]["y"]["sort"] == ["human  20.6%", "bloomz  79.4%", "dolly  0.0%"]
    assert spec["encoding"]["color"]["field"] == "class"  # colours stay the class's own


def spec_nodes(node):
    """Every mapping in a chart's spec, however deep its layers and facets put it."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from spec_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from spec_nodes(value)


def colour_scales(spec):
    """Every colour scale with a range in a chart's spec."""
    return (n["color"]["scale"] for n in spec_nodes(spec)
            if isinstance(n.get("color"), dict) and "range" in n["color"].get("scale", {}))


def test_a_series_keeps_its_colour_when_a_filter_hides_others_and_renames_it():
    """Filtering Compare reassigned colours: the series left took the first colours, and a GAN-BERT line drawn
    orange became blue. Colours follow the order of the runs before any filter (`series_order`), references in
    tones of their own (two had been teal and green side by side)."""
    runs = hand_runs_frame([(TrainConfig(method=m, lr=lr, fraction=f, seed=s), 0.5 + s / 100)
                            for m, lr in (("tfidf-lr", None), ("ganbert", 1e-3), ("ganbert", 1e-4))
                            for f in (0.01, 0.1) for s in (0, 1)])
    order, references = compare.series_order(runs), compare.reference_keys(runs)

    def colours(frame: pd.DataFrame) -> list[dict[str, str]]:
        """series key → colour in each of the two charts that colour series"""
        groups = compare.summarize(frame, "accuracy", compare.METRICS).groups
        key = dict(zip(groups["series"], groups["series_key"]))
        mapping = compare_charts.series_colours(groups, order, references)
        charts = (compare_charts.metric_vs_amount(groups, "accuracy", mapping),
                  compare_charts.grouped_bars(groups, "accuracy", colours=mapping))
        return [{key[name]: colour for scale in colour_scales(chart.to_dict())
                 for name, colour in zip(scale["domain"], scale["range"])} for chart in charts]

    everything = colours(runs)
    assert everything[0] == everything[1] and len(set(everything[0].values())) == 3
    assert [everything[0][key] in compare_charts.REFERENCE_PALETTE for key in order] == [True, False, False]
    slower = runs[runs["settings"].str.contains('"lr": 0.0001')]  # one GAN-BERT series: its name loses its rate
    for left in colours(slower):
        assert len(left) == 1 and left.items() <= everything[0].items()


def test_the_seed_strip_draws_each_series_in_its_colour_and_each_seed_in_a_shape():
    """The strip coloured its points by seed, in the hues the other charts give methods: seed 0 read as the blue
    method. Its points take their series' colour from the page's mapping; seeds are shapes."""
    runs = hand_runs_frame([(TrainConfig(method=m, fraction=f, seed=s), 0.5 + s / 100)
                            for m in ("tfidf-lr", "ganbert") for f in (0.01, 0.1) for s in (0, 1, 2)])
    groups = compare.summarize(runs, "accuracy", compare.METRICS).groups
    mapping = compare_charts.series_colours(groups, compare.series_order(runs))
    points = compare.seed_points(runs, groups)
    assert len(points) == 12 and set(points["series"]) == set(mapping)
    spec = compare_charts.seed_strip(points, "accuracy", mapping).to_dict()
    (scale,) = colour_scales(spec)
    assert dict(zip(scale["domain"], scale["range"])) == mapping
    assert spec["encoding"]["color"]["field"] == "series" and spec["encoding"]["shape"]["field"] == "seed"


def test_the_seed_strip_of_one_score_has_an_axis_around_it_with_short_labels():
    """One run at 0.8 drew its dot on an axis of no width, labelled "0.800000" in a walk (and "1" by Vega here)."""
    one = pd.DataFrame([{"group": "A @ 5/class", "series": "A", "seed": 0, "run_id": "r", "labeled": 5,
                         "accuracy": 0.8}])
    x = compare_charts.seed_strip(one, "accuracy").to_dict()["encoding"]["x"]
    low, high = x["scale"]["domain"]
    assert low < 0.8 < high and high - low >= 0.04 and x["axis"]["format"] == ".3~f"
    assert x["axis"]["tickCount"] <= 6  # a walk's narrow domain had 20 labels
    mcc = compare_charts.seed_strip(one.rename(columns={"accuracy": "mcc"}).assign(mcc=-1.0), "mcc").to_dict()
    assert mcc["encoding"]["x"]["scale"]["domain"][0] == -1  # never past the metric's range


def test_the_seed_strip_keeps_room_for_its_dots_and_a_small_map_draws_larger_points():
    """Long group names had filled the strip's width (no dots, no axis); a 181-text map drew faint specks, and
    UMAP's points sat in the top half of an axis running from 0."""
    from core.explore import charts as explore_charts

    name = "TF-IDF + LR (test file e9ab398fa194bef5/dev.jsonl) · train.jsonl (m4-sample) @ 5/class (25 labeled)"
    runs = pd.DataFrame([{"group": name + str(i), "series": name, "seed": s, "run_id": "r", "labeled": 25,
                          "accuracy": 0.5} for i in range(3) for s in (0, 1)])
    assert natural_width(compare_charts.seed_strip(runs, "accuracy")) <= PAGE
    small = pd.DataFrame({"x": [10.0, 12.0], "y": [5.0, 6.0], "split": "train", "class": "human"})
    spec = explore_charts.scatter_map(small, ("human",), "UMAP").to_dict()
    assert spec["mark"]["size"] == 60 and spec["encoding"]["x"]["scale"]["zero"] is False


def test_a_metric_against_the_unlabeled_pool_draws_lines_for_gan_bert_and_levels_for_the_rest():
    """The regime study's axis: GAN-BERT and its control at three pool sizes are lines; a head and the references,
    which read no unlabeled text, are level lines across the same span."""
    runs, pools = [], {0: 0, 1000: 1000, None: 11_000}
    for seed in (0, 1):
        for limit in pools:
            runs += [(TrainConfig.of(method="ganbert", frozen=True, fraction=0.05, seed=seed, unlabeled_limit=limit,
                                  adversarial=adversarial), 0.4 + seed / 10 + (limit or 0) / 1e5)
                     for adversarial in (True, False)]
        runs += [(TrainConfig(method=m, frozen=True, fraction=0.05, seed=seed), 0.5)
                 for m in ("features-lr", "finetune")]
    frame = hand_runs_frame(runs)
    frame["unlabeled"] = [pools[c.unlabeled_limit] if c.method == "ganbert" else 0 for c, _ in runs]
    groups = compare.summarize(frame, "accuracy", compare.METRICS).groups
    shown = compare_charts.pool_axis(groups)
    kinds = dict(zip(shown["pool_series"], shown["kind"]))
    assert kinds == {"GAN-BERT G1 (noise) on frozen features": "pool",
                     "GAN-BERT control (adversarial off) on frozen features": "pool",
                     "Frozen features + LR": "level", "Trained head on frozen features": "level"}
    assert set(shown["x_low"]) == {0} and set(shown["x_high"]) == {11_000}
    spec = compare_charts.metric_vs_unlabeled(groups, "accuracy").to_json()
    assert '"symlog"' in spec and "unlabeled pool drawn" in spec
    assert "[0, 1000, 11000]" in " ".join(spec.split()).replace("[ ", "[").replace(" ]", "]")  # a tick at each pool
    assert compare_charts.pool_axis(groups[groups["unlabeled"] == 0]).empty  # one pool size: nothing to draw
    # issue 61: features + LR was blue against the pool and teal against the labeled amount and in the bars
    mapping = compare_charts.series_colours(groups, compare.series_order(frame))
    drawn = [{name: colour for scale in colour_scales(chart.to_dict())
              for name, colour in zip(scale["domain"], scale["range"])}
             for chart in (compare_charts.metric_vs_unlabeled(groups, "accuracy", mapping),
                           compare_charts.grouped_bars(groups, "accuracy", colours=mapping))]
    for name in ("Frozen features + LR", "Trained head on frozen features"):
        assert drawn[0][name] == drawn[1][name] == mapping[name]
    assert all(colours.items() <= mapping.items() for colours in drawn)  # every chart's scale from the one mapping
    series_colours = {mapping[n] for n in groups["series"]}
    assert mapping["GAN-BERT G1 (noise) on frozen features"] not in series_colours  # a pool line of its own colour
    # GAN-BERT's pool line and its control's apart in the palette: neighbours (purple, pink) read as one
    pool_lines = [SERIES_PALETTE.index(mapping[n]) for n in ("GAN-BERT G1 (noise) on frozen features",
                                                            "GAN-BERT control (adversarial off) on frozen features")]
    assert abs(pool_lines[0] - pool_lines[1]) > 2
    # one labeled amount: the bars in their series' colours too (a walk found them all one light blue)
    one = groups[groups["amount"] == groups["amount"].iloc[0]]
    bars = {name: colour for scale in colour_scales(compare_charts.one_amount(one, "accuracy", mapping).to_dict())
            for name, colour in zip(scale["domain"], scale["range"])}
    assert bars and all(bars[n] == mapping[n] for n in one["series"])
    spec = compare_charts.one_amount(one, "accuracy", mapping).to_dict()  # the references' band and rule: one
    assert spec["resolve"]["scale"]["color"] == "independent" and len(spec["layer"][-1]["layer"]) == 2  # legend
    # "all" is another size at each amount (10,921 and 11,321 texts): their ticks were drawn over each other
    many, whole = groups.copy(), groups.index[groups["unlabeled"] == 11_000]
    many.loc[whole[:1], "unlabeled"], many.loc[whole[1:], "unlabeled"] = 10_921, 11_321
    spec = compare_charts.metric_vs_unlabeled(many, "accuracy").to_dict()
    ticks = [n["axis"]["values"] for n in spec_nodes(spec) if isinstance(n.get("axis"), dict) and "values" in n["axis"]]
    assert ticks[0] == [0, 1000, 10_921]

