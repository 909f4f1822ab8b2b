"""The exploration report: every view computed once, then a self-contained HTML page and summary.json.

`compute_views` is also what `bench/speed/explore.py` times, so the report, the benchmark and the
dashboard's cache all exercise one list of views.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from core.data import Dataset
from core.explore import charts
from core.explore import stats as explore
from core.paths import replace_durably
from core.plotting import class_colors

VIEWS = ("lengths", "ngrams_1", "ngrams_2", "ngrams_3", "wordcloud", "map", "kl", "sources")


@dataclass(frozen=True)
class ExploreOptions:
    """What the report shows; the defaults match the Explore page's."""

    max_len: int = 128  # the truncation rule on token-length charts
    stop_words: bool = True
    top_k: int = 15
    map_method: str = "pca"  # or "umap" (sampled)
    hex_gridsize: int | None = None  # hexagons across a panel; None: sized to the texts there are


def compute_views(ds: Dataset, tokenizer, options: ExploreOptions, cache: Path | None,
                  on_step: Callable[[str], None] = lambda name: None) -> dict[str, pd.DataFrame]:
    """All views of the report, in order; each is read from `cache` when already there."""
    views: dict[str, pd.DataFrame] = {}
    steps: list[tuple[str, Callable[[], pd.DataFrame]]] = [
        ("lengths", lambda: explore.lengths(ds, tokenizer, cache=cache)),
        ("ngrams_1", lambda: explore.top_ngrams(ds, 1, options.stop_words, options.top_k, cache=cache)),
        ("ngrams_2", lambda: explore.top_ngrams(ds, 2, options.stop_words, options.top_k, cache=cache)),
        ("ngrams_3", lambda: explore.top_ngrams(ds, 3, options.stop_words, options.top_k, cache=cache)),
        ("wordcloud", lambda: explore.top_ngrams(ds, 1, True, 150, cache=cache)),
        ("map", lambda: explore.tfidf_map(ds, options.map_method, cache=cache)),
        ("kl", lambda: explore.kl_shift(ds, cache=cache)),
        ("sources", lambda: explore.source_breakdown(ds)),
    ]
    assert tuple(name for name, _ in steps) == VIEWS
    for name, compute in steps:
        on_step(name)
        views[name] = compute()
    return views


def summary(ds: Dataset, views: dict[str, pd.DataFrame]) -> dict:
    """The machine-readable part: class counts, length quantiles, top n-grams and KL per class."""
    quantiles = explore.length_quantiles(views["lengths"], ds.labels)
    return {
        "dataset": ds.name,
        "synthetic": ds.synthetic,
        "labels": list(ds.labels),
        "class_counts": {split: dict(zip(ds.labels, map(int, col))) for split, col in ds.class_counts().items()},
        "length_quantiles": {
            name: {measure: {f"{q:g}": float(v) for q, v in zip(g["quantile"], g[measure])}
                   for measure in ("chars", "words", "tokens")}
            for name, g in quantiles.groupby("class")
        },
        "top_ngrams": {
            str(n): {name: g.sort_values("rank")["ngram"].tolist() for name, g in views[f"ngrams_{n}"].groupby("class")}
            for n in (1, 2, 3)
        },
        "kl_per_class": {row["class"]: row["kl"] for _, row in explore.kl_per_class(views["kl"], ds.labels).iterrows()},
        "kl_overall": next((float(r["kl"]) for _, r in views["kl"].iterrows() if r["train"] == "all"), None),
    }


def _section(title: str, body: str, note: str = "") -> str:
    note_html = f"<p class='note'>{html.escape(note)}</p>" if note else ""
    return f"<section><h2>{html.escape(title)}</h2>{note_html}{body}</section>"


def script_safe_json(text: str) -> str:
    """JSON text that no string inside it can end or open an HTML element in: `<`, `>` and `&` as the JSON escapes
    `\u003c`, `\u003e` and `\u0026`, which `JSON.parse` reads back as the same characters. A class label such as
    `</script><script>…` stays a label."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _chart_html(chart, name: str) -> str:
    """A chart as an inline Vega embed: the JS is bundled into the page, so it opens offline. The spec holds class
    labels and source names from the data file, so it travels as inert JSON (`application/json`, script-safe)
    that the page parses, never as script text."""
    spec = script_safe_json(chart.to_json(indent=None))
    return (f"<div id='{name}'></div><script type='application/json' id='{name}-spec'>{spec}</script>"
            f"<script>vegaEmbed('#{name}', JSON.parse(document.getElementById('{name}-spec').textContent), "
            "{actions: false});</script>")


def render_html(ds: Dataset, views: dict[str, pd.DataFrame], options: ExploreOptions) -> str:
    import vl_convert as vlc

    labels = explore.chart_classes(ds)
    lens = views["lengths"]
    colors = class_colors(labels)
    clouds = "".join(
        f"<figure><img alt='{html.escape(c)}' src='data:image/png;base64,"
        f"{base64.b64encode(charts.word_cloud_png(g, colors[c])).decode()}'/><figcaption>{html.escape(c)}"
        f"</figcaption></figure>"
        for c, g in views["wordcloud"].groupby("class") if c in colors)
    trunc = charts.kept(explore.truncation_share(lens, options.max_len, labels), labels)  # charted classes, all
    trunc_rows = "".join(f"<tr><td>{html.escape(r['class'])}</td><td>{r['share']:.1%}</td></tr>"
                         for _, r in trunc.iterrows())
    points = views["map"]
    drawn = explore.scatter_sample(points)
    sections = [
        _section("Class counts", _chart_html(charts.class_counts(ds.class_counts(), labels), "counts")),
        _section("Token lengths", _chart_html(charts.length_histogram(
            explore.length_histogram(lens, "tokens"), labels, "tokens", options.max_len), "tokens")
            + f"<table><tr><th>class</th><th>share over {options.max_len} tokens</th></tr>{trunc_rows}</table>"),
        _section("Word lengths", _chart_html(charts.length_histogram(
            explore.length_histogram(lens, "words"), labels, "words"), "words")),
        _section("Word clouds", f"<div class='clouds'>{clouds}</div>"),
        *[_section(f"Top {n}-grams", _chart_html(charts.top_ngrams(views[f'ngrams_{n}'], labels), f"ng{n}"))
          for n in (1, 2, 3)],
        _section(f"TF-IDF map ({options.map_method.upper()})",
                 _chart_html(charts.scatter_map(drawn, labels, ""), "map") if len(points) else "",
                 note=explore.map_note(ds, points, drawn)),
    ]
    bins = explore.hexbin(points, options.hex_gridsize or explore.hexbin_grid(points))
    sections.append(_section("Density per class and split", _chart_html(charts.hexbin_map(bins, labels), "hex"))
                    if explore.shows_density(bins) else _section("Density per class and split", "<p>Too few texts per "
                                                                 "class and split for a density map.</p>"))
    if not views["kl"].empty:
        sections.append(_section("Train/test shift", _chart_html(charts.kl_matrix(views["kl"], labels), "kl"),
                                 note=f"{KL_EXPLANATION} {explore.kl_pooled_note(views['kl'])}"))
    if not views["sources"].empty:
        sections.append(_section("Sources", _chart_html(charts.source_breakdown(views["sources"], labels), "src")))
    scripts = f"<script>{vlc.javascript_bundle()}</script>"
    badge = " <span class='badge'>synthetic</span>" if ds.synthetic else ""
    capped = (f"<p class='note'>{html.escape(note)}, and summary.json holds every class.</p>"
              if (note := explore.chart_classes_note(ds)) else "")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Explore: {html.escape(ds.name)}</title>
{scripts}
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}} section{{margin-bottom:2.5em}}
.note{{color:#555}} .clouds{{display:flex;flex-wrap:wrap;gap:1em}} figure{{margin:0}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:2px 8px}}
.badge{{background:#f28e2b;color:white;border-radius:4px;padding:1px 6px;font-size:0.7em}}</style></head>
<body><h1>Explore: {html.escape(ds.name)}{badge}</h1>{capped}{''.join(sections)}</body></html>"""


KL_EXPLANATION = ("KL(train‖test) of smoothed word distributions, in nats: 0 means the test texts of a class use "
                  "words exactly as its train texts do; larger values mean a bigger shift, and an off-diagonal "
                  "cell smaller than its diagonal means a test class reads more like another train class.")


def report_html(ds: Dataset, tokenizer, options: ExploreOptions = ExploreOptions(), cache: Path | None = None,
                on_step: Callable[[str], None] = lambda name: None) -> str:
    """The report `core explore` writes, as one HTML text: what the Explore page's export downloads."""
    views = compute_views(ds, tokenizer, options, cache, on_step)
    on_step("report")
    return render_html(ds, views, options)


def write_report(ds: Dataset, tokenizer, out_dir: Path, options: ExploreOptions = ExploreOptions(),
                 cache: Path | None = None, on_step: Callable[[str], None] = lambda name: None) -> dict:
    """Write `report.html` and `summary.json` into `out_dir`, both or neither (a full disk had left the summary of a
    report never written); returns the summary."""
    views = compute_views(ds, tokenizer, options, cache, on_step)
    on_step("report")
    out_dir.mkdir(parents=True, exist_ok=True)
    data = summary(ds, views)
    written = {out_dir / "report.html": render_html(ds, views, options), out_dir / "summary.json":
               json.dumps(data, indent=2)}
    partial = {path: path.with_name(f".{path.name}.partial") for path in written}
    try:  # both written in full before either replaces what the folder held
        for path, text in written.items():
            partial[path].write_text(text, encoding="utf-8")
        for path in written:
            replace_durably(partial[path], path)
    finally:
        for temporary in partial.values():
            temporary.unlink(missing_ok=True)
    return data
