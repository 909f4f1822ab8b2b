"""Altair figures of runs: metrics against the labeled amount, bars, evaluation curves, per-class F1 and one
prediction's probabilities (the confusion matrix is `core.plotting`'s: a run's MLflow export draws it too)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.compare.names import METRIC_NAMES
from core.compare.seeds import mean_ci, metric_range
from core.plotting import SERIES_PALETTE, category_axis, class_scale, whole_legend

# the losses and validation scores a run records, in words: the run card titled its panels "d_supervised"
CURVE_NAMES = {"loss": "training loss", "d_loss": "D loss (all terms)", "d_supervised": "D loss on labeled texts",
               "g_loss": "G loss (all terms)", "g_feature_matching": "G feature matching",
               "val_accuracy": "validation accuracy", "val_macro_f1": "validation macro-F1",
               "val_mcc": "validation MCC", "val_fake_prob": "P(fake) of real validation texts"}


# References (TF-IDF + LR, features + LR) in tones no method takes: from the method palette, two of them had drawn
# teal and green side by side, and the best group, a reference, read as a faint line among the methods
REFERENCE_PALETTE = ("#2f2f2f", "#9d7660", "#79706e", "#bab0ac")
METHOD_PALETTE = tuple(c for c in SERIES_PALETTE if c not in REFERENCE_PALETTE)


def series_colours(groups: pd.DataFrame, colour_order: list[str] | None = None,
                   references: set[str] | None = None) -> dict[str, str]:
    """One colour for every name a chart of these groups draws, built once for a page and passed to each of its
    charts, so a series is one colour on all of them. A series' colour comes from its key's place in
    `colour_order` (`seeds.series_order` of the runs before filters) among the methods, or among the references
    (`references`: their keys before filters; else the groups' own), from a palette of their own, so it keeps it
    under any filter; a series drawn along the unlabeled pool (its pools as one line: `pool_series`) that is no
    series of its own takes a colour no series has (a walk found GAN-BERT's pool line in the orange of features +
    LR)."""
    order = list(dict.fromkeys([*(colour_order or []), *groups["series_key"]]))
    references = (references or set()) | set(groups.loc[groups["reference"].astype(bool), "series_key"])
    ranks = {key: i for kind in (False, True) for i, key in enumerate(k for k in order if (k in references) == kind)}
    colours: dict[str, str] = {}
    for name, key in zip(groups["series"], groups["series_key"]):
        palette = REFERENCE_PALETTE if key in references else METHOD_PALETTE
        colours.setdefault(name, palette[ranks[key] % len(palette)])
    free = [c for c in METHOD_PALETTE if c not in colours.values()] or list(METHOD_PALETTE)  # none a series has
    pool_only = [n for n in dict.fromkeys(groups["pool_series"]) if n not in colours]
    # spread over the free colours: neighbours in the palette (purple, pink) had drawn GAN-BERT and its control
    step = max(1, len(free) // max(1, len(pool_only)))
    return colours | {name: free[(i * step) % len(free)] for i, name in enumerate(pool_only)}


def colour_scale(names: pd.Series, colours: dict[str, str] | None) -> alt.Scale:
    """The scale of the names a chart shows, coloured from the page's one mapping (`series_colours`; without one,
    in the order shown)."""
    shown = list(dict.fromkeys(names))
    colours = colours or {n: SERIES_PALETTE[i % len(SERIES_PALETTE)] for i, n in enumerate(shown)}
    return alt.Scale(domain=shown, range=[colours[n] for n in shown])


def metric_vs_amount(groups: pd.DataFrame, metric: str, colours: dict[str, str] | None = None) -> alt.Chart:
    """The seed report's figure: a metric against the number of labeled texts (log x), one line per
    series with its 95% confidence band over seeds. Reference baselines are dashed lines with their own, paler
    band: the floor a method must clear to be worth its cost, and how sure that floor is. A band past the
    metric's range is clamped at the axis, and its tooltip says so. A single labeled amount has no line to draw:
    its groups are bars with their intervals instead (`one_amount`). Colours come from `colours`."""
    if groups["labeled"].nunique() < 2:
        return one_amount(groups, metric, colours)
    data = groups.assign(low=groups[f"{metric}_low"].fillna(groups[f"{metric}_mean"]),
                         high=groups[f"{metric}_high"].fillna(groups[f"{metric}_mean"]),
                         kind=groups["reference"].map({True: "reference", False: "method"}))
    # the axis spans the amounts there are (a log scale's nice ends ran 10 to 1,000 for 25 to 162 texts)
    low, high = float(groups["labeled"].min()), float(groups["labeled"].max())
    x = alt.X("labeled:Q", scale=alt.Scale(type="log", domain=[low / 1.2, high * 1.2], nice=False),
              title="labeled texts (log scale)")
    references = "dashed: converged references, with paler bands" if groups["reference"].any() else None
    color = alt.Color("series:N", title=references, scale=colour_scale(groups["series"], colours),
                      legend=whole_legend(  # lines, not the bands' pale dots
                          columns=1, symbolType="stroke", symbolStrokeWidth=2))
    base = alt.Chart(data).encode(x=x, color=color)
    y_scale = clamped_scale(data["low"], data["high"], metric)
    band = base.mark_area().encode(y=alt.Y("low:Q", scale=y_scale), y2="high:Q", tooltip=tooltip(metric),
                                   opacity=alt.Opacity("kind:N", legend=None, scale=alt.Scale(
                                       domain=["method", "reference"], range=[0.15, 0.07])))
    line = base.mark_line(point=True).encode(
        y=alt.Y(f"{metric}_mean:Q", title=label(metric), scale=y_scale),
        strokeDash=alt.StrokeDash("kind:N", title=None, legend=None,  # the series legend shows each dash
                                  scale=alt.Scale(domain=["method", "reference"], range=[[1, 0], [6, 4]])),
        strokeWidth=alt.StrokeWidth("kind:N", legend=None,  # a reference as plain to see as a method
                                    scale=alt.Scale(domain=["method", "reference"], range=[2, 3])),
        tooltip=tooltip(metric))
    # fit-x: the height is the plot's own; fitted whole, a stretched chart gave most of it to the legend
    return (band + line).properties(width=480, height=300, title=f"{label(metric)} against labeled texts: mean "
                                    "and 95% CI over seeds", autosize=alt.AutoSizeParams(type="fit-x",
                                                                                        contains="padding"))


def pool_axis(groups: pd.DataFrame) -> pd.DataFrame:
    """What a chart against the unlabeled pool draws: at each dataset and labeled amount where a series ran at two
    pool sizes or more, its groups as points on a line (`kind` 'pool'), and every other group there, which reads
    one pool or none (the references, a head), as a level line across them (`kind` 'level'). Empty when no series
    ran at two pool sizes."""
    panel = ["dataset", "amount"]
    sizes = groups.groupby([*panel, "pool_series"])["unlabeled"].transform("nunique")
    shown = groups.assign(kind=["pool" if n >= 2 else "level" for n in sizes])
    keep = shown.groupby(panel)["kind"].transform(lambda kinds: (kinds == "pool").any())
    shown = shown[keep].copy()
    span = shown[shown["kind"] == "pool"].groupby(panel)["unlabeled"].agg(["min", "max"])
    return shown.join(span, on=panel).rename(columns={"min": "x_low", "max": "x_high"})


def metric_vs_unlabeled(groups: pd.DataFrame, metric: str, colours: dict[str, str] | None = None) -> alt.Chart:
    """A metric against the unlabeled texts a method read (symlog x, so 0, 1,000 and 11,000 share an axis), one
    panel per labeled amount: each series that ran at several pool sizes as a line with its 95% band, and each
    group that reads one pool or none (the references, a trained head) as a dashed level line with its band, the
    floor the pool must lift a method above."""
    shown = pool_axis(groups)
    shown = shown.assign(low=shown[f"{metric}_low"].fillna(shown[f"{metric}_mean"]),
                         high=shown[f"{metric}_high"].fillna(shown[f"{metric}_mean"]))
    color = alt.Color("pool_series:N", title=None, legend=whole_legend(columns=1, symbolType="stroke",
                                                                       symbolStrokeWidth=3),
                      scale=colour_scale(shown["pool_series"], colours))
    ticks = []  # a tick at each pool size run, but one for sizes within 10% of each other ("all" differs by amount)
    for size in sorted(int(v) for v in shown.loc[shown["kind"] == "pool", "unlabeled"].dropna().unique()):
        if not ticks or size > ticks[-1] * 1.1:
            ticks.append(size)
    # a tick at each pool size run: symlog's own ticks were 0 and 12,000 alone
    x = alt.X("unlabeled:Q", title="unlabeled pool drawn (texts, symlog scale)", scale=alt.Scale(type="symlog"),
              axis=alt.Axis(values=ticks, format=",.0f", labelFlush=False, labelOverlap=False))
    y = alt.Y(f"{metric}_mean:Q", title=label(metric), scale=alt.Scale(zero=False))
    pool = alt.datum.kind == "pool"
    lines = alt.Chart().transform_filter(pool).mark_line(point=True).encode(x=x, y=y, color=color,
                                                                             tooltip=tooltip(metric) + ["unlabeled"])
    bands = alt.Chart().transform_filter(pool).mark_area(opacity=0.15).encode(x=x, y="low:Q", y2="high:Q",
                                                                               color=color)
    levels = alt.Chart().transform_filter(~pool).mark_rule(strokeDash=[6, 4], strokeWidth=2).encode(
        x=alt.X("x_low:Q", scale=alt.Scale(type="symlog")), x2="x_high:Q", y=y, color=color, tooltip=tooltip(metric))
    level_bands = alt.Chart().transform_filter(~pool).mark_rect(opacity=0.08).encode(
        x=alt.X("x_low:Q", scale=alt.Scale(type="symlog")), x2="x_high:Q", y="low:Q", y2="high:Q", color=color)
    order = list(dict.fromkeys(shown.sort_values("labeled")["panel"]))
    width = 520 if len(order) == 1 else 300  # one panel alone had 300 px of a 1,400-px page
    return alt.layer(level_bands, bands, levels, lines, data=shown).properties(width=width, height=260).facet(
        column=alt.Column("panel:O", title=None, sort=order)).properties(
        title=f"{label(metric)} against the unlabeled pool: mean and 95% CI over seeds; dashed: reads one pool or none")


def clamped_scale(low: pd.Series, high: pd.Series, metric: str) -> alt.Scale:
    """An axis from the lowest interval bound to the highest, within what the metric can be, clamping the
    intervals that run past it (too few seeds to bound the mean: their tooltips say so)."""
    bottom, top = metric_range(metric)
    lo, hi = max(bottom, float(low.min())), min(top, float(high.max()))
    pad = max(0.01, (hi - lo) * 0.05)
    return alt.Scale(domain=[max(bottom, lo - pad), min(top, hi + pad)], clamp=True, zero=False, nice=False)


def label(metric: str) -> str:
    return METRIC_NAMES.get(metric, metric.replace("_", "-"))


def tooltip(metric: str) -> list:
    """A group's figures on hover: its interval as computed, and whether it runs past the axis (clamped there)."""
    return ["series", "amount", alt.Tooltip("labeled:Q", format=".0f"), "n",
            alt.Tooltip(f"{metric}_mean:Q", format=".3f"), alt.Tooltip(f"{metric}_interval:N", title="95% CI")]


def one_amount(groups: pd.DataFrame, metric: str, colours: dict[str, str] | None = None) -> alt.Chart:
    """One labeled amount: a bar per method with its 95% interval, each name whole on its own row, and the
    references (converged baselines, not low-label methods) as dashed vertical lines at their means with their
    intervals as pale bands, named in the legend. Intervals past the metric's range stop at the axis."""
    amount = groups["amount"].iloc[0] if len(groups) else ""
    methods, references = groups[~groups["reference"]], groups[groups["reference"]]
    scale = alt.Scale(domain=list(metric_range(metric)), clamp=True)
    x = alt.X(f"{metric}_mean:Q", title=f"{label(metric)} (mean, 95% CI)", scale=scale)
    y = alt.Y("series:N", title=None, sort=alt.SortField(f"{metric}_mean", order="descending"), axis=category_axis())
    # named on y, in its series' colour on every chart of the page (a walk found them all one light blue here)
    bars = alt.Chart(methods).mark_bar().encode(
        x=x, y=y, tooltip=tooltip(metric),
        color=alt.Color("series:N", scale=colour_scale(methods["series"], colours), legend=None))
    whiskers = alt.Chart(methods).mark_rule(color="black").encode(x=alt.X(f"{metric}_low:Q", scale=scale),
                                                                  x2=f"{metric}_high:Q", y=y)
    color = alt.Color("series:N", title="references (dashed lines, pale bands: 95% CI)",
                      scale=colour_scale(references["series"], colours),
                      legend=whole_legend(columns=1, symbolType="stroke", symbolStrokeWidth=2))
    title = f"{label(metric)} (mean, 95% CI)"
    rules = alt.Chart(references).mark_rule(strokeDash=[6, 4], strokeWidth=3).encode(
        x=alt.X(f"{metric}_mean:Q", scale=scale, title=title), tooltip=tooltip(metric), color=color)
    spans = alt.Chart(references.dropna(subset=[f"{metric}_low"])).mark_rect(opacity=0.1).encode(
        x=alt.X(f"{metric}_low:Q", scale=scale, title=title), x2=f"{metric}_high:Q", color=color,
        tooltip=tooltip(metric))
    # without references, no rules: an empty layer still drew its legend's title
    # the bars' colours apart from the references' (one legend for these: a band and a rule of the same scale)
    # a row a method; references alone had a plot of no height (the empty bars' band scale), their lines undrawn:
    # then they are the chart, at a height of their own
    layers = ([bars, whiskers] if len(methods) else []) + ([alt.layer(spans, rules)] if len(references) else [])
    height = alt.Step(28) if len(methods) else 28 * max(3, len(references))
    return alt.layer(*layers).resolve_scale(color="independent").properties(
        width=480, height=height, title=f"{label(metric)} at {amount}: mean and 95% CI over seeds")


def grouped_bars(groups: pd.DataFrame, metric: str, width: int = 860, colours: dict[str, str] | None = None
                 ) -> alt.Chart:
    """One panel per labeled amount and dataset (in order of labeled texts; each says how many texts it
    labeled), one bar per series with its 95% interval. Panels share `width` (at most 110 px each), and their
    headers break into lines ("5/class", "(30 labeled)", the dataset), so eight panels still fit the page.
    Colours come from `colours` (`series_colours`)."""
    order = list(dict.fromkeys(groups.sort_values("labeled")["panel"]))
    panel = max(40, min(110, width // max(1, len(order)) - 20))
    base = alt.Chart().encode(x=alt.X("series:N", title=None, axis=category_axis(labels=False, ticks=False)))
    bars = base.mark_bar().encode(
        y=alt.Y(f"{metric}_mean:Q", title=label(metric), scale=alt.Scale(domain=list(metric_range(metric)),
                                                                          clamp=True)),
        color=alt.Color("series:N", scale=colour_scale(groups["series"], colours), legend=whole_legend(columns=1)),
        tooltip=["series", "amount", "n", alt.Tooltip(f"{metric}_mean:Q", format=".3f")])
    whiskers = base.mark_rule().encode(y=alt.Y(f"{metric}_low:Q", scale=alt.Scale(
        domain=list(metric_range(metric)), clamp=True)), y2=f"{metric}_high:Q", tooltip=tooltip(metric))
    header = alt.Header(labelExpr="split(replace(datum.label, ' (', ' · ('), ' · ')")
    return alt.layer(bars, whiskers, data=groups).properties(width=panel, height=220).facet(
        column=alt.Column("panel:O", title="labeled amount", sort=order, header=header))


def seed_strip(runs: pd.DataFrame, metric: str, colours: dict[str, str] | None = None) -> alt.Chart:
    """Every finished run as a point, one row per group: the seeds behind each mean. A point takes its series'
    colour from the page's one mapping and its seed's shape: seeds in colours had put seed 0 in the blue of
    another chart's method."""
    low, high = runs[metric].min(), runs[metric].max()
    pad = max(0.02, (high - low) * 0.1)  # one score alone had an axis of no width, labelled "0.800000" or "1"
    bounds = metric_range(metric)
    domain = [max(bounds[0], low - pad), min(bounds[1], high + pad)] if len(runs) else list(bounds)
    return alt.Chart(runs).mark_point(size=70, filled=True, opacity=0.75).encode(
        # a few ticks: one score's narrow domain had 20 labels ("0.534" to "0.572") across 480 px
        x=alt.X(f"{metric}:Q", title=label(metric), scale=alt.Scale(domain=domain),
                axis=alt.Axis(format=".3~f", tickCount=5)),
        # a name on two lines, the series and then "@ amount": whole on one, long ones had left no room for the dots
        y=alt.Y("group:N", title=None, sort=alt.SortField("labeled"),
                axis=category_axis(labelExpr="split(replace(datum.label, ' @ ', ' |@ '), ' |')")),
        color=alt.Color("series:N", legend=None, scale=colour_scale(runs["series"], colours)),
        shape=alt.Shape("seed:N", legend=whole_legend()),
        tooltip=["group", "seed", "run_id", alt.Tooltip(f"{metric}:Q", format=".3f")],
    ).properties(width=480, height=alt.Step(34))  # room for a name's two lines


def evaluation_curves(evaluations: pd.DataFrame, metrics: list[str]) -> alt.Chart:
    """Curves over optimizer steps, one panel per metric in `metrics`' order, titled in words (GAN-BERT's D
    and G losses and its fake-class probability on real validation texts apart), one line per run."""
    data = evaluations[evaluations["metric"].isin(metrics)]
    data = data.assign(metric=data["metric"].map(lambda m: CURVE_NAMES.get(m, m)))
    return alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("step:Q", axis=alt.Axis(tickMinStep=1, format="d")),  # whole steps, never "1.000000"
        # at most 3 decimals, trailing zeros cut: a cancelled run's one MCC of 0 had read "0.000000"
        y=alt.Y("value:Q", title=None, axis=alt.Axis(format=".3~f")),
        color=alt.Color("run:N", legend=whole_legend(columns=1)),
        tooltip=["run", "metric", alt.Tooltip("step:Q", format="d"), alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=260, height=180).facet(
        facet=alt.Facet("metric:N", title=None, sort=[CURVE_NAMES.get(m, m) for m in metrics]), columns=3
    ).resolve_scale(y="independent").resolve_axis(x="independent")  # no step axis under an empty last cell


def per_class_heatmap(f1: pd.DataFrame, labels: tuple[str, ...]) -> alt.Chart:
    """Per-class test F1, one row per run and a row tall enough for its figure (the default height squeezed
    rows to 12 px)."""
    base = alt.Chart(f1).encode(x=alt.X("class:N", sort=list(labels), axis=category_axis()),
                                y=alt.Y("run:N", title=None, axis=category_axis()))
    heat = base.mark_rect().encode(color=alt.Color("f1:Q", scale=alt.Scale(scheme="greens", domain=[0, 1]),
                                                   legend=whole_legend()),
                                   tooltip=["run", "class", alt.Tooltip("f1:Q", format=".3f")])
    return (heat + base.mark_text(fontSize=10).encode(text=alt.Text("f1:Q", format=".2f"))).properties(
        width=420, height=alt.Step(24))


def probabilities(probs: dict[str, float], labels: tuple[str, ...], dataset_labels: tuple[str, ...] = ()
                  ) -> alt.Chart:
    """One bar per class the model knows, each name whole on its own row with its probability beside it (a bar
    near 100% reads as certainty; the figure says how near). The classes take the dataset's colours when the
    model knows a part of its classes: a class left out of training would shift every later class onto
    another's colour."""
    colored_as = dataset_labels if set(labels) <= set(dataset_labels) else labels
    data = pd.DataFrame({"class": list(probs), "probability": list(probs.values())})
    data["row"] = [f"{c}  {p:.1%}" for c, p in probs.items()]
    order = [row for label in labels for c, row in zip(data["class"], data["row"]) if c == label]
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        y=alt.Y("row:N", sort=order, title=None, axis=category_axis()),
        color=alt.Color("class:N", scale=class_scale(colored_as), legend=None),
        tooltip=["class", alt.Tooltip("probability:Q", format=".3f")],
    ).properties(height=alt.Step(28))


def labels_curve(points: pd.DataFrame, metric: str = "accuracy") -> alt.Chart:
    """Simulated labeling (`core.label.simulations.kept`, one dataset and backbone): each strategy's metric against
    the labels given, mean and 95% CI over its seeds; the stratified reference dashed."""
    rows = []
    for (strategy, labels), group in points.groupby(["strategy", "labels"], sort=True):
        ci = mean_ci(group[metric])
        rows.append({"strategy": strategy, "labels": labels, "seeds": ci.n, "mean": ci.mean,
                     "low": ci.mean if ci.low is None else ci.low, "high": ci.mean if ci.high is None else ci.high})
    data = pd.DataFrame(rows).assign(kind=lambda f: f["strategy"].str.contains("reference").map(
        {True: "reference", False: "strategy"}))
    x = alt.X("labels:Q", scale=alt.Scale(type="log", nice=False), title="labels given (log scale)")
    base = alt.Chart(data).encode(x=x, color=alt.Color("strategy:N", title=None, legend=whole_legend(columns=1)))
    tips = ["strategy:N", "labels:Q", "seeds:Q", alt.Tooltip("mean:Q", format=".3f", title=label(metric)),
            alt.Tooltip("low:Q", format=".3f", title="95% CI low"), alt.Tooltip("high:Q", format=".3f",
                                                                               title="95% CI high")]
    y_scale = clamped_scale(data["low"], data["high"], metric)
    band = base.mark_area(opacity=0.12).encode(y=alt.Y("low:Q", scale=y_scale), y2="high:Q", tooltip=tips)
    line = base.mark_line(point=True).encode(
        y=alt.Y("mean:Q", title=label(metric), scale=y_scale), tooltip=tips,
        strokeDash=alt.StrokeDash("kind:N", legend=None, scale=alt.Scale(domain=["strategy", "reference"],
                                                                         range=[[1, 0], [6, 4]])))
    spread = "mean and 95% CI over seeds" if data["seeds"].max() > 1 else "one seed: no interval"
    return (band + line).properties(width=480, height=300, title=f"{label(metric)} against labels given: {spread}",
                                    autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
