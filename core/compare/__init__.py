"""Comparing runs: run tables, groups over seeds with confidence intervals, paired tests, verdicts and
comparison charts. Reads `core.runs` (and `core.train`'s method table for names)."""

from core.lazy import exports

# name -> the module that defines it: imported on first use, so that naming runs (`python -m core runs`) does
# not pay for scipy and altair
_EXPORTS = {
    "backbone_advice": "core.compare.advice",
    "training_notes": "core.compare.advice",
    "charts": "core.compare.charts",
    "METRIC_NAMES": "core.compare.names",
    "distinct_names": "core.compare.names",
    "settings_diff": "core.compare.names",
    "Paired": "core.compare.seeds",
    "Summary": "core.compare.verdicts",
    "adds": "core.compare.verdicts",
    "adds_line": "core.compare.verdicts",
    "mean_ci": "core.compare.seeds",
    "paired": "core.compare.seeds",
    "seed_points": "core.compare.seeds",
    "reference_keys": "core.compare.seeds",
    "series_order": "core.compare.seeds",
    "summarize": "core.compare.verdicts",
    "verdict_line": "core.compare.verdicts",
    "what_seeds_allow": "core.compare.verdicts",
    "McNemar": "core.compare.stats",
    "mcnemar": "core.compare.stats",
    "paired_test": "core.compare.stats",
    "FILTERS": "core.compare.tables",
    "METRICS": "core.compare.tables",
    "confusion_frame": "core.compare.tables",
    "evaluations_frame": "core.compare.tables",
    "filter_runs": "core.compare.tables",
    "follow_rows": "core.compare.tables",
    "method_name": "core.compare.tables",
    "monitor_frame": "core.compare.tables",
    "queue_words": "core.compare.tables",
    "per_class_f1": "core.compare.tables",
    "run_details": "core.compare.tables",
    "run_notes": "core.compare.tables",
    "runs_frame": "core.compare.tables",
}


__getattr__ = exports("core.compare", _EXPORTS)

__all__ = list(_EXPORTS)
