"""Statistics over seeds: groups of runs that differ only in their seed, a 95% confidence interval for
each group's mean, paired comparisons of two groups on the seeds they share, and a verdict per
labeled amount.

Runs with the same data, amount and seed share their labeled rows whatever the method, so two groups
compare by their per-seed differences: that removes the luck of the draw they share. With five seeds
or fewer the paired test is an exact sign test (a Wilcoxon signed-rank test cannot reach p < 0.05
with n ≤ 5); with more, Wilcoxon's signed-rank test. The interval of the mean difference is Student's t.
With five seeds no two-sided rank test can reach p < 0.05 (the smallest p is 2/2⁵ = 0.0625), so a pair
also says whether its t interval excludes zero, which five seeds can show.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from core.compare.names import METRIC_NAMES, varying
from core.runs.lifecycle import Status
from core.train import TrainConfig
from core.train.config import flat_settings
from core.train.methods import unread_options

CONFIDENCE = 0.95
ALPHA = 0.05
SIGN_TEST_UP_TO = 5  # pairs; above this, Wilcoxon's signed-rank test
NOT_SETTINGS = ("seed", "tags", "device")  # what may differ inside a group
AMOUNT = ("fraction", "per_class")
POOL = ("unlabeled_limit",)  # the unlabeled pool's size: an axis of its own (`charts.metric_vs_unlabeled`)


def group_key(config: TrainConfig) -> str:
    """A group's identity: every setting its runs read but the seed (TF-IDF's runs read no backbone)."""
    return json.dumps(flat_settings(config, (*NOT_SETTINGS, *unread_options(config))), sort_keys=True, default=str)


@dataclass(frozen=True)
class Interval:
    """n values, their mean and a t interval for it (no interval from one value)."""

    n: int
    mean: float
    low: float | None
    high: float | None


def mean_ci(values, confidence: float = CONFIDENCE) -> Interval:
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return Interval(0, float("nan"), None, None)
    if len(x) < 2:
        return Interval(1, float(x[0]), None, None)
    half = stats.t.ppf((1 + confidence) / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return Interval(len(x), float(x.mean()), float(x.mean() - half), float(x.mean() + half))


@dataclass(frozen=True)
class Paired:
    """Group A against group B on the seeds both have, for one metric."""

    a: str
    b: str
    metric: str
    seeds: list[int]
    diffs: list[float]  # A − B, per seed
    difference: Interval
    test: str
    p_value: float
    wins: int  # seeds where A scores higher
    losses: int
    ties: int
    labels: tuple[float | None, float | None] = (None, None)  # labels each group's runs read, validation included
    caveat: str = ""  # what keeps the pair from saying what it seems to (GAN-BERT that read no unlabeled text)

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA

    @property
    def ci_excludes_zero(self) -> bool:
        d = self.difference
        return d.low is not None and (d.low > 0 or d.high < 0)

    @property
    def smallest_p(self) -> float:
        """The smallest two-sided p-value a rank or sign test can give on these seeds, whatever the scores:
        2/2ⁿ (0.25 from 3 seeds, 0.0625 from 5, 0.031 from 6)."""
        return smallest_p(len(self.seeds))

    def unequal_labels(self, a: str = "A", b: str = "B") -> str | None:
        """When A and B did not read the same number of labels (one selected on validation texts the other never
        saw), that said in a sentence naming them `a` and `b`; None when they read as many, or a count is unknown."""
        n_a, n_b = self.labels
        if n_a is None or n_b is None or pd.isna(n_a) or pd.isna(n_b) or round(n_a) == round(n_b):
            return None
        more, fewer = (a, b) if n_a > n_b else (b, a)
        return (f"not at the same labels: {a} read {n_a:,.0f}, {b} {n_b:,.0f} (validation included), so {more} saw "
                f"labels {fewer} never did")

    def sentence(self) -> str:
        n = len(self.seeds)
        seeds = f"{n} seed{'s' if n != 1 else ''}"
        if self.wins == self.losses:
            return f"A and B are even: each wins on {self.wins} of {seeds}"
        ahead, won = ("A", self.wins) if self.wins > self.losses else ("B", self.losses)
        return f"{ahead} wins on {won} of {seeds}" if n > 1 else f"{ahead} wins on the one seed"

    def explain(self) -> list[str]:
        """The comparison in plain words, the same on the Compare page and in `compare`'s output: who A and B
        are, A − B with the group its sign favours named, the seeds won, the test's p beside the smallest p
        the seeds allow, and whether the interval excludes 0."""
        d, n = self.difference, len(self.seeds)
        higher = "A" if d.mean > 0 else "B"
        leader = ("level" if d.mean == 0 else f"higher for {higher} on its one seed, which cannot tell a lead from "
                  "the draw" if n == 1 else f"{higher} leads" if self.ci_excludes_zero else
                  f"{higher} higher on average, not a lead: the interval includes 0")
        if d.low is None:
            interval = "no interval from one seed"
        elif d.high - d.low < 1e-9:  # every seed the same difference: a t interval of zero width
            interval = f"every one of the {n} seeds differs by exactly that (no spread to build an interval from)"
        else:
            verdict = f"excludes 0: on these {n} seeds the difference points one way" if self.ci_excludes_zero \
                else "includes 0: the seeds do not settle which is better"
            interval = f"95% CI [{d.low:+.3f}, {d.high:+.3f}] {verdict}"
        floor = f"the smallest p {n} {'seeds allow' if n != 1 else 'seed allows'} is {self.smallest_p:.3g}"
        if self.smallest_p >= ALPHA:
            floor += f", so no test on them can reach {ALPHA}"
        lines = [f"A = {self.a}", f"B = {self.b}",
                 f"A − B = {d.mean:+.3f} ({METRIC_NAMES.get(self.metric, self.metric)}; {leader}); {interval}",
                 f"{self.sentence()}; " + (f"{self.test} ({floor})" if self.test.startswith("no test") else
                                           f"{self.test} p = {self.p_value:.3g} ({floor})")]
        note = self.unequal_labels()
        return lines + ([f"Note: {note}"] if note else [])


def paired(a: str, b: str, metric: str, scores_a: dict[int, float], scores_b: dict[int, float],
           labels: tuple[float | None, float | None] = (None, None)) -> Paired:
    """Per-seed differences on the shared seeds, their mean with a t interval, and the paired test; `labels`: the
    labels each side read, so a comparison at unequal labels says so."""
    seeds = sorted(set(scores_a) & set(scores_b))
    diffs = np.array([scores_a[s] - scores_b[s] for s in seeds], dtype=float)
    wins, losses = int((diffs > 0).sum()), int((diffs < 0).sum())
    if wins + losses == 0:
        test, p = "no test: no seed differs", 1.0
    elif len(seeds) <= SIGN_TEST_UP_TO:
        test, p = "exact sign test", float(stats.binomtest(wins, wins + losses, 0.5).pvalue)
    else:
        test, p = "Wilcoxon signed-rank", float(stats.wilcoxon(diffs).pvalue)
    return Paired(a, b, metric, seeds, diffs.tolist(), mean_ci(diffs), test, p, wins, losses,
                  len(seeds) - wins - losses, labels)


# ---------------------------------------------------------------- groups of runs


def _names(done: pd.DataFrame, besides: tuple[str, ...] = ()) -> pd.Series:
    """Each group's series name: the method's, plus the settings that tell apart groups of that method on
    that dataset ("max length 256", "learning rate 0.001"), by the rule that names runs (`names.varying`), so that
    no two series share a name and a run reads as its group; settings in `besides` are left out, as the axis a
    chart draws them on says them."""
    method = done["method"] + done["backbone_tag"]  # 'BERT fine-tuning · SmolLM2', as the runs are named
    apart = varying(list(done["settings"].map(json.loads)), list(zip(done["dataset"], method)), (*AMOUNT, *besides))
    return pd.Series([f"{m} ({a})" if a else m for m, a in zip(method, apart)], index=done.index)


def series_key(settings: str) -> str:
    """A series' identity: its group's settings but the labeled amount. Unlike its name, which says only what
    tells it apart from the series shown beside it, the key stays the same whatever a filter leaves."""
    return json.dumps({k: v for k, v in json.loads(settings).items() if k not in AMOUNT}, sort_keys=True)


def series_order(frame: pd.DataFrame) -> list[str]:
    """Every series key in the order its first run was created: colours assigned in this order, from the runs
    before any filter, keep each series' colour when a filter hides others or a new series appears."""
    done = frame[frame["status"] == Status.DONE].sort_values("created", kind="stable")
    return list(dict.fromkeys(done["settings"].map(series_key)))


def reference_keys(frame: pd.DataFrame) -> set[str]:
    """The series keys of the reference runs (`series_colours` gives them a palette of their own)."""
    return set(frame.loc[frame["reference"].astype(bool), "settings"].map(series_key))


def metric_range(metric: str) -> tuple[float, float]:
    """The values a metric can take: MCC spans [-1, 1], every other metric the studio compares [0, 1]."""
    return (-1.0, 1.0) if metric == "mcc" else (0.0, 1.0)


def one_per_seed(frame: pd.DataFrame, metrics: tuple[str, ...] = ()) -> pd.DataFrame:
    """The finished runs with these metrics, one per group and seed: a run again of the same settings and seed
    is the same draw (the same figures, as runs are reproducible), not another seed, so the latest stands for
    it. Counted twice, it had narrowed the interval of its group."""
    done = frame[frame["status"] == Status.DONE].dropna(subset=list(metrics))
    return done.sort_values("created", kind="stable").drop_duplicates(["settings", "seed"], keep="last")


def groups(frame: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """One row per group of finished runs (every setting but the seed): n, the seeds, and for each metric
    the mean, standard deviation and 95% interval as computed, with `{metric}_interval` saying it in words and
    whether it runs past the metric's range (a t interval from two seeds can reach below an accuracy of 0, which
    no run can score: too few seeds to bound the mean; a chart clamps it at the axis and says so). Groups never
    span datasets."""
    done = one_per_seed(frame, metrics).copy()
    columns = ["group", "series", "method", "dataset", "amount", "panel", "labeled", "labels read", "unlabeled",
               "pool_series", "reference", "n", "seeds",
               "settings", "series_key",
               *[f"{m}_{s}" for m in metrics for s in ("mean", "std", "low", "high", "interval")]]
    if done.empty:
        return pd.DataFrame(columns=columns)
    done["series"], done["pool_series"] = _names(done), _names(done, POOL)
    several = done["dataset"].nunique() > 1
    if several:  # a line, a bar and a panel never mix datasets
        done["series"] = done["series"] + " · " + done["dataset"]
        done["pool_series"] = done["pool_series"] + " · " + done["dataset"]
    rows = []
    for key, g in done.groupby("settings", sort=False):
        first, labeled, read = g.iloc[0], float(g["labeled"].mean()), float(pd.to_numeric(g["labels read"]).mean())
        # the amount as chosen and what it labeled (a panel's words: every method's bar at that amount), and in the
        # group's title every label it read (a group that read 160 labels had been titled '(80 labeled)')
        used = f" ({labeled:.0f} labeled)" if labeled == labeled else ""
        title = used if not read > labeled else f" ({labeled:.0f} labeled + {read - labeled:.0f} validation)"
        row = {"group": f"{first['series']} @ {first['amount']}{title}", "series": first["series"],
               "method": first["method"], "dataset": first["dataset"], "amount": first["amount"],
               "panel": first["amount"] + used + (f" · {first['dataset']}" if several else ""),
               "labeled": labeled, "labels read": read,
               "unlabeled": float(pd.to_numeric(g["unlabeled"]).mean()) if "unlabeled" in g else float("nan"),
               "pool_series": first["pool_series"],
               "reference": bool(first["reference"]),
               "n": len(g), "seeds": sorted(int(s) for s in g["seed"]), "settings": key, "series_key": series_key(key)}
        for m in metrics:
            ci = mean_ci(g[m])
            row |= {f"{m}_mean": ci.mean, f"{m}_std": float(g[m].std(ddof=1)) if len(g) > 1 else 0.0,
                    f"{m}_low": ci.low, f"{m}_high": ci.high, f"{m}_interval": interval_words(ci, m)}
        rows.append(row)
    return pd.DataFrame(rows, columns=columns).sort_values(["dataset", "labeled", "series"], ignore_index=True)


def interval_words(ci: Interval, metric: str) -> str:
    """A group's 95% interval as computed, '[0.412, 0.520]', marked where it runs past what the metric can be:
    '[-0.523, 1.477]: past [0, 1], too few seeds to bound the mean'."""
    if ci.low is None:
        return "none from one seed" if ci.n == 1 else ""
    bottom, top = metric_range(metric)
    text = f"[{ci.low:.3f}, {ci.high:.3f}]"
    return text + (f": past [{bottom:g}, {top:g}], too few seeds to bound the mean"
                   if ci.low < bottom or ci.high > top else "")


def seed_points(frame: pd.DataFrame, grouped: pd.DataFrame) -> pd.DataFrame:
    """The finished runs behind the groups, each with its group's name, for a strip of seeds."""
    return one_per_seed(frame).drop(columns=["labeled"]).merge(
        grouped[["settings", "group", "series", "labeled"]], on="settings")


def _scores(frame: pd.DataFrame, grouped: pd.DataFrame, metric: str) -> dict[str, dict[int, float]]:
    """Each group's metric per seed."""
    done = one_per_seed(frame, (metric,))
    return {name: {int(r.seed): float(getattr(r, metric)) for r in done[done["settings"] == key].itertuples()}
            for name, key in zip(grouped["group"], grouped["settings"])}


def pairs(frame: pd.DataFrame, grouped: pd.DataFrame, metric: str) -> list[Paired]:
    """Every two groups on the same dataset and labeled amount that share at least one seed."""
    scores = _scores(frame, grouped, metric)
    out = []
    for (_, a), (_, b) in combinations(grouped.iterrows(), 2):
        if a["dataset"] == b["dataset"] and a["amount"] == b["amount"] and set(a["seeds"]) & set(b["seeds"]):
            out.append(paired(a["group"], b["group"], metric, scores[a["group"]], scores[b["group"]],
                              (a["labels read"], b["labels read"])))
    return out


def flipped(p: Paired) -> Paired:
    """The same comparison read the other way: B against A."""
    d = p.difference
    return Paired(p.b, p.a, p.metric, p.seeds, [-x for x in p.diffs],
                  Interval(d.n, -d.mean, None if d.high is None else -d.high, None if d.low is None else -d.low),
                  p.test, p.p_value, p.losses, p.wins, p.ties, p.labels[::-1])


def find_pair(found: list[Paired], a: str, b: str) -> Paired | None:
    """A against B, whichever order the pair was made in."""
    for p in found:
        if (p.a, p.b) == (a, b):
            return p
        if (p.a, p.b) == (b, a):
            return flipped(p)
    return None


def smallest_p(n: int) -> float:
    """The smallest two-sided p-value a rank or sign test can give on n seeds, whatever the scores."""
    return min(1.0, 2 / 2 ** n)
