"""Exploration: statistics and figure data of a dataset (lengths, n-grams, maps, hexbins, KL), their
disk cache, the exploration charts and the HTML report. Reads `core.data` and the backbone's tokenizer."""

from core.explore import charts, stats
from core.explore.report import KL_EXPLANATION, VIEWS, ExploreOptions, compute_views, report_html, write_report

__all__ = ["charts", "stats", "KL_EXPLANATION", "VIEWS", "ExploreOptions", "compute_views", "report_html",
           "write_report"]
