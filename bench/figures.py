"""How every bench writes a figure: a mean over seeds with its 95% interval, and a paired difference with its own.

Intervals are shown as computed, never clipped: where one runs past what the metric can be (two seeds' t interval
often does), it is marked as Compare marks it (`core.compare.seeds.interval_words`), so a reader sees that the
seeds cannot bound the mean rather than a tidy interval the data never gave."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.compare.seeds import Interval, interval_words, mean_ci, metric_range


def interval(ci: Interval, signed: bool = False, metric: str = "accuracy") -> str:
    """' [0.398, 0.426]', or for a difference (`signed`) ' [+0.002, +0.060]'; '' where one value gives none."""
    if ci.low is None:
        return ""
    if not signed:
        return " " + interval_words(ci, metric)
    bottom, top = metric_range(metric)
    span = top - bottom  # a difference of two such values lies within ±span
    past = ci.low < -span or ci.high > span
    return (f" [{ci.low:+.3f}, {ci.high:+.3f}]"
            + (f": past [{-span:g}, {span:g}], too few seeds to bound the mean" if past else ""))


def mean(values: Iterable[float] | Interval, n: bool = True, empty: str = "–", metric: str = "accuracy") -> str:
    """'0.412 [0.398, 0.426] (n=5)' for the values (or their interval, computed already); `empty` for none."""
    ci = values if isinstance(values, Interval) else mean_ci(list(values))
    if not ci.n:
        return empty
    return f"{ci.mean:.3f}{interval(ci, metric=metric)}" + (f" (n={ci.n})" if n else "")


def difference(d: Interval | Mapping | Iterable[float], n: bool = True, empty: str = "–") -> str:
    """'+0.031 [+0.002, +0.060] (n=5)': a paired difference's mean and interval, from its `Interval`, from a
    study's row holding `difference`, `low`, `high` and `n`, or from the differences seed by seed."""
    if isinstance(d, Mapping):
        d = Interval(d["n"], d["difference"], d["low"], d["high"])
    elif not isinstance(d, Interval):
        d = mean_ci(list(d))
    if not d.n:
        return empty
    return f"{d.mean:+.3f}{interval(d, signed=True)}" + (f" (n={d.n})" if n else "")


def of_group(g, metric: str = "accuracy") -> Interval:
    """A group of Compare's summary as an `Interval` (a group of one seed has none)."""
    low, high = getattr(g, f"{metric}_low"), getattr(g, f"{metric}_high")
    bounded = low is not None and low == low  # NaN in a frame where no group has one
    return Interval(int(g.n), float(getattr(g, f"{metric}_mean")), low if bounded else None, high if bounded else None)


def scores(runs, *columns: str) -> str:
    """A study's cell for a group of runs (a frame's rows): '0.412 [0.398, 0.426] (n=5), 0.405, 500', its accuracy,
    its macro-F1 and the mean of each of `columns`; '–' for no run."""
    if runs.empty:
        return "–"
    return ", ".join([mean(runs["accuracy"]), f"{runs['macro_f1'].mean():.3f}",
                      *(f"{runs[c].mean():,.0f}" for c in columns)])


def group(g, metric: str = "accuracy") -> str:
    """A group of Compare's summary (`core.compare.summarize`): its mean and the interval Compare worded for it."""
    return f"{getattr(g, f'{metric}_mean'):.3f} {getattr(g, f'{metric}_interval')}".rstrip()
