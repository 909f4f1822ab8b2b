"""Comparing runs: run tables, seed aggregates, statistical tests and comparison charts. Reads
`core.runs` (and `core.train`'s method table for names)."""

from core.compare import charts
from core.compare.stats import McNemar, mcnemar, paired_test
from core.compare.tables import (FILTERS, METRICS, aggregate, confusion_frame, evaluations_frame, filter_runs,
                                 method_name, monitor_frame, per_class_f1, run_name, run_notes,
                                 runs_frame)

__all__ = ["charts", "McNemar", "mcnemar", "paired_test", "FILTERS", "METRICS", "aggregate", "confusion_frame",
           "evaluations_frame", "filter_runs", "method_name", "monitor_frame", "per_class_f1", "run_name", "run_notes", "runs_frame"]
