"""bench/figures.py, the one way a bench writes a figure: intervals as computed, never clipped, marked where they
run past what the metric can be as Compare marks them (two benches had clipped two seeds' t intervals to [0, 1])."""

from __future__ import annotations

import pandas as pd
import pytest

from bench import figures
from core.compare.seeds import interval_words, mean_ci


def test_a_mean_shows_its_interval_as_computed_and_its_n():
    assert figures.mean([0.40, 0.42, 0.44]) == "0.420 [0.370, 0.470] (n=3)"
    assert figures.mean([0.40, 0.42, 0.44], n=False) == "0.420 [0.370, 0.470]"
    assert figures.mean([0.41]) == "0.410 (n=1)"  # one value, no interval
    assert figures.mean([]) == "–" and figures.mean([], empty="not run") == "not run"


def test_an_interval_past_the_metric_is_kept_and_marked_as_compare_marks_it():
    values = [0.10, 0.90]  # two seeds: t's 12.7 puts the interval far past [0, 1]
    ci = mean_ci(values)
    assert ci.low < 0 and ci.high > 1
    shown = figures.mean(values)
    assert shown == f"0.500 {interval_words(ci, 'accuracy')} (n=2)"
    assert f"[{ci.low:.3f}, {ci.high:.3f}]" in shown and "past [0, 1]" in shown
    assert "[0.000, 1.000]" not in shown


def test_a_difference_is_signed_from_an_interval_a_studys_row_or_the_differences_by_seed():
    diffs = [0.02, 0.03, 0.04]
    expected = "+0.030 [+0.005, +0.055] (n=3)"
    assert figures.difference(diffs) == expected
    assert figures.difference(mean_ci(diffs)) == expected
    ci = mean_ci(diffs)
    assert figures.difference({"n": 3, "difference": ci.mean, "low": ci.low, "high": ci.high}) == expected
    assert figures.difference(diffs, n=False) == "+0.030 [+0.005, +0.055]"
    assert figures.difference([-0.01]) == "-0.010 (n=1)" and figures.difference([]) == "–"
    assert "past [-1, 1]" in figures.difference([-0.9, 0.9])


@pytest.mark.parametrize("scores", [[0.5, 0.6, 0.7], [0.1, 0.9], [0.4]])
def test_a_group_of_compares_summary_reads_as_compare_words_it(scores):
    frame = pd.DataFrame({"accuracy": scores})
    ci = mean_ci(scores)
    nan = float("nan")  # where Compare's frame has no interval
    group = pd.Series({"n": ci.n, "accuracy_mean": ci.mean, "accuracy_low": nan if ci.low is None else ci.low,
                       "accuracy_high": nan if ci.high is None else ci.high,
                       "accuracy_interval": interval_words(ci, "accuracy")})
    assert figures.group(group) == f"{ci.mean:.3f} {interval_words(ci, 'accuracy')}".rstrip()
    assert figures.mean(figures.of_group(group)) == figures.mean(frame["accuracy"])


def test_a_studys_cell_holds_accuracy_macro_f1_and_its_other_columns():
    runs = pd.DataFrame({"accuracy": [0.40, 0.42, 0.44], "macro_f1": [0.3, 0.4, 0.5], "cpu": [1000.0, 2000.0, 3000.0]})
    assert figures.scores(runs, "cpu") == "0.420 [0.370, 0.470] (n=3), 0.400, 2,000"
    assert figures.scores(runs.iloc[:0], "cpu") == "–"
