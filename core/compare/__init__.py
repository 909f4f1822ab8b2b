"""Comparing runs: run tables, groups over seeds with confidence intervals, paired tests, verdicts and
comparison charts. Reads `core.runs` (and `core.train`'s method table for names)."""

from core.compare import charts
from core.compare.names import METRIC_NAMES, distinct_names, settings_diff
from core.compare.seeds import Paired, Summary, adds, mean_ci, paired, seed_points, summarize, what_seeds_allow
from core.compare.stats import McNemar, mcnemar, paired_test
from core.compare.tables import (FILTERS, METRICS, confusion_cells, confusion_frame, evaluations_frame, filter_runs,
                                 follow_rows, method_name, monitor_frame, per_class_f1, run_details, run_notes,
                                 runs_frame)

__all__ = ["charts", "Paired", "Summary", "adds", "what_seeds_allow", "mean_ci", "paired", "seed_points", "summarize",
           "McNemar", "mcnemar", "paired_test", "FILTERS", "METRICS", "confusion_cells", "confusion_frame",
           "evaluations_frame", "filter_runs", "follow_rows", "method_name", "monitor_frame", "per_class_f1",
           "run_details", "run_notes", "runs_frame", "METRIC_NAMES", "distinct_names", "settings_diff"]
