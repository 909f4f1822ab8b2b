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
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from core.train import TrainConfig
from core.compare.names import METRIC_NAMES, setting_label, setting_value
from core.train.config import flat_settings
from core.runs.lifecycle import Status

CONFIDENCE = 0.95
ALPHA = 0.05
SIGN_TEST_UP_TO = 5  # pairs; above this, Wilcoxon's signed-rank test
NOT_SETTINGS = ("seed", "tags", "device")  # what may differ inside a group
AMOUNT = ("fraction", "per_class")


def group_key(config: TrainConfig) -> str:
    return json.dumps(flat_settings(config, NOT_SETTINGS), sort_keys=True, default=str)


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

    def sentence(self) -> str:
        if self.wins == self.losses:
            return f"A and B are even: each wins on {self.wins} of {len(self.seeds)} seeds"
        ahead, won = ("A", self.wins) if self.wins > self.losses else ("B", self.losses)
        return f"{ahead} wins on {won} of {len(self.seeds)} seeds"

    def explain(self) -> list[str]:
        """The comparison in plain words, the same on the Compare page and in `compare`'s output: who A and B
        are, A − B with the group its sign favours named, the seeds won, the test's p beside the smallest p
        the seeds allow, and whether the interval excludes 0."""
        d, n = self.difference, len(self.seeds)
        leader = "A is ahead" if d.mean > 0 else "B is ahead" if d.mean < 0 else "no one is ahead"
        if d.low is None:
            interval = "no interval from one seed"
        elif d.high - d.low < 1e-9:  # every seed the same difference: a t interval of zero width
            interval = f"every one of the {n} seeds differs by exactly that (no spread to build an interval from)"
        else:
            verdict = "excludes 0: the difference holds across seeds" if self.ci_excludes_zero \
                else "includes 0: the seeds do not settle which is better"
            interval = f"95% CI [{d.low:+.3f}, {d.high:+.3f}] {verdict}"
        floor = f"the smallest p {n} {'seeds allow' if n != 1 else 'seed allows'} is {self.smallest_p:.3g}"
        if self.smallest_p >= ALPHA:
            floor += f", so no test on them can reach {ALPHA}"
        return [f"A = {self.a}", f"B = {self.b}",
                f"A − B = {d.mean:+.3f} ({METRIC_NAMES.get(self.metric, self.metric)}; {leader}); {interval}",
                f"{self.sentence()}; {self.test} p = {self.p_value:.3g} ({floor})"]


def paired(a: str, b: str, metric: str, scores_a: dict[int, float], scores_b: dict[int, float]) -> Paired:
    """Per-seed differences on the shared seeds, their mean with a t interval, and the paired test."""
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
                  len(seeds) - wins - losses)


# ---------------------------------------------------------------- groups of runs


def _names(done: pd.DataFrame) -> pd.Series:
    """Each group's series name: the method's, plus the settings that tell apart groups of that method on
    that dataset ("max length 256", "learning rate 0.001"), named as runs name them, so that no two series
    share a name."""
    names = done["method"].copy()
    parsed = done["settings"].map(json.loads)
    for index in done.groupby(["dataset", "method"]).groups.values():
        runs = parsed[index]
        keys = sorted({k for d in runs for k in d} - set(AMOUNT))
        varying = [k for k in keys if len({json.dumps(d.get(k), default=str) for d in runs}) > 1]
        if varying:
            names[index] = [f"{m} ({', '.join(f'{setting_label(k)} {setting_value(d.get(k), k)}' for k in varying)})"
                            for m, d in zip(done.loc[index, "method"], runs)]
    return names


def series_key(settings: str) -> str:
    """A series' identity: its group's settings but the labeled amount. Unlike its name, which says only what
    tells it apart from the series shown beside it, the key stays the same whatever a filter leaves."""
    return json.dumps({k: v for k, v in json.loads(settings).items() if k not in AMOUNT}, sort_keys=True)


def series_order(frame: pd.DataFrame) -> list[str]:
    """Every series key in the order its first run was created: colours assigned in this order, from the runs
    before any filter, keep each series' colour when a filter hides others or a new series appears."""
    done = frame[frame["status"] == Status.DONE].sort_values("created", kind="stable")
    return list(dict.fromkeys(done["settings"].map(series_key)))


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
    the mean, standard deviation and 95% interval, cut at the metric's range (a t interval from two seeds can
    reach below an accuracy of 0, which no run can score). Groups never span datasets."""
    done = one_per_seed(frame, metrics).copy()
    columns = ["group", "series", "method", "dataset", "amount", "panel", "labeled", "reference", "n", "seeds",
               "settings", "series_key",
               *[f"{m}_{s}" for m in metrics for s in ("mean", "std", "low", "high")]]
    if done.empty:
        return pd.DataFrame(columns=columns)
    done["series"] = _names(done)
    several = done["dataset"].nunique() > 1
    if several:  # a line, a bar and a panel never mix datasets
        done["series"] = done["series"] + " · " + done["dataset"]
    rows = []
    for key, g in done.groupby("settings", sort=False):
        first, labeled = g.iloc[0], float(g["labeled"].mean())
        used = f" ({labeled:.0f} labeled)" if labeled == labeled else ""  # the amount as chosen, and what it labeled
        row = {"group": f"{first['series']} @ {first['amount']}{used}", "series": first["series"],
               "method": first["method"], "dataset": first["dataset"], "amount": first["amount"],
               "panel": first["amount"] + used + (f" · {first['dataset']}" if several else ""),
               "labeled": labeled, "reference": bool(first["reference"]),
               "n": len(g), "seeds": sorted(int(s) for s in g["seed"]), "settings": key, "series_key": series_key(key)}
        for m in metrics:
            ci, (bottom, top) = mean_ci(g[m]), metric_range(m)
            row |= {f"{m}_mean": ci.mean, f"{m}_std": float(g[m].std(ddof=1)) if len(g) > 1 else 0.0,
                    f"{m}_low": None if ci.low is None else max(ci.low, bottom),
                    f"{m}_high": None if ci.high is None else min(ci.high, top)}
        rows.append(row)
    return pd.DataFrame(rows, columns=columns).sort_values(["dataset", "labeled", "series"], ignore_index=True)


def seed_points(frame: pd.DataFrame, grouped: pd.DataFrame) -> pd.DataFrame:
    """The finished runs behind the groups, each with its group's name, for a strip of seeds."""
    return one_per_seed(frame).drop(columns=["labeled"]).merge(grouped[["settings", "group", "labeled"]],
                                                               on="settings")


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
            out.append(paired(a["group"], b["group"], metric, scores[a["group"]], scores[b["group"]]))
    return out


def flipped(p: Paired) -> Paired:
    """The same comparison read the other way: B against A."""
    d = p.difference
    return Paired(p.b, p.a, p.metric, p.seeds, [-x for x in p.diffs],
                  Interval(d.n, -d.mean, None if d.high is None else -d.high, None if d.low is None else -d.low),
                  p.test, p.p_value, p.losses, p.wins, p.ties)


def find_pair(found: list[Paired], a: str, b: str) -> Paired | None:
    """A against B, whichever order the pair was made in."""
    for p in found:
        if (p.a, p.b) == (a, b):
            return p
        if (p.a, p.b) == (b, a):
            return flipped(p)
    return None


CONTROL_FREE = ("adversarial", "generator")  # a control has no generator: it pairs with G1's and G2's runs


def ablations(grouped: pd.DataFrame, found: list[Paired]) -> list[Paired]:
    """What GAN-BERT's adversarial game adds: each GAN-BERT group against its control (the same settings with
    `adversarial` off) on the seeds both have, as GAN-BERT − control."""
    parsed = {key: json.loads(key) for key in grouped["settings"]}

    def without_game(key: str) -> str:
        return json.dumps({k: v for k, v in parsed[key].items() if k not in CONTROL_FREE}, sort_keys=True)
    ganbert = grouped[[parsed[k].get("method") == "ganbert" for k in grouped["settings"]]]
    controls = {without_game(r.settings): r.group for r in ganbert.itertuples()
                if not parsed[r.settings]["adversarial"]}
    out = []
    for r in ganbert.itertuples():
        control = controls.get(without_game(r.settings))
        if parsed[r.settings]["adversarial"] and control is not None:
            p = find_pair(found, r.group, control)
            if p is not None:
                out.append(p)
    return out


def adds(p: Paired) -> str:
    """'+0.031 [-0.020, +0.082], n=5' for a verdict table's cell."""
    d = p.difference
    ci = f" [{d.low:+.3f}, {d.high:+.3f}]" if d.low is not None else ""
    return f"{d.mean:+.3f}{ci}, n={d.n}"


def smallest_p(n: int) -> float:
    """The smallest two-sided p-value a rank or sign test can give on n seeds, whatever the scores."""
    return min(1.0, 2 / 2 ** n)


def what_seeds_allow(n: int) -> str:
    """What n shared seeds can show, said beside the verdicts; '' from 6 seeds on (or with none paired), where
    there is nothing to warn of."""
    if n == 0 or n > SIGN_TEST_UP_TO:
        return ""
    return (f"With {n} shared seed{'s' if n != 1 else ''} no two-sided rank test reaches p < {ALPHA:g} (its smallest "
            f"p is {smallest_p(n):.3g}); "
            + ("the interval excluding 0 is the evidence they can give. " if n > 1 else "nor is there an interval. ")
            + "Use 6 or more seeds for a rank test that can.")


def verdicts(grouped: pd.DataFrame, found: list[Paired], metric: str, game: list[Paired]) -> pd.DataFrame:
    """For each dataset and labeled amount: the best group by mean, the runner-up, their paired difference
    with its interval, and whether it is significant; and, where GAN-BERT ran beside its control, what its
    adversarial part adds (`game`, from `ablations`: GAN-BERT − control, with the interval). Each group also by
    its series alone (`best_series`), for a table whose row already names the amount."""
    rows = []
    for (dataset, amount), g in grouped.groupby(["dataset", "amount"], sort=False):
        ranked = g.sort_values(f"{metric}_mean", ascending=False)
        best = ranked.iloc[0]
        row = {"dataset": dataset, "amount": amount, "labeled": best["labeled"], "best": best["group"],
               "best_series": best["series"], "best_mean": best[f"{metric}_mean"], "runner_up": None,
               "runner_up_series": None, "difference": None, "low": None, "high": None, "n": 0, "test": None,
               "p_value": None, "significant": None, "ci_excludes_zero": None}
        if len(ranked) > 1:
            second = ranked.iloc[1]
            d = find_pair(found, best["group"], second["group"])
            row["runner_up"], row["runner_up_series"] = second["group"], second["series"]
            if d is not None:
                row |= {"difference": d.difference.mean, "low": d.difference.low, "high": d.difference.high,
                        "n": len(d.seeds), "test": d.test, "p_value": d.p_value, "significant": d.significant,
                        "ci_excludes_zero": d.ci_excludes_zero}
            else:
                row |= {"difference": best[f"{metric}_mean"] - second[f"{metric}_mean"],
                        "test": "no shared seeds: not paired"}
        names = set(g["group"])
        added = [f"{p.a.split(' @ ')[0]}: {adds(p)}" for p in game if p.a in names]
        row["adversarial_adds"] = "; ".join(added) or None
        rows.append(row)
    return pd.DataFrame(rows)


def verdict_line(v: dict) -> str:
    """One verdict row in words, the same on the Compare page, in `compare`'s output and in the benches: the
    best series and its mean, then its paired margin over the runner-up with the interval and the test. Names
    stay whole, which a table's column cut; with several datasets each series names its own."""
    best = f"{v['amount']}: {v['best_series']} ({v['best_mean']:.3f})"
    if pd.isna(v["runner_up"]):  # a frame's records hold NaN where its rows held None
        return f"{best}, the only series measured"
    over = f"{best} over {v['runner_up_series']}"
    if not v["n"]:
        return f"{over} by {v['difference']:+.3f} ({v['test']})"
    n = int(v["n"])
    seeds = f"{n} seed{'s' if n != 1 else ''}"
    if v["difference"] < 0:  # ahead over all its seeds, behind on the ones both ran
        over += f", though behind by {-v['difference']:.3f} on the {seeds} both ran"
    else:
        over += f" by {v['difference']:+.3f}"
    if pd.isna(v["low"]):
        interval = "no interval from one seed"
    elif v["high"] - v["low"] < 1e-9:
        interval = f"every one of the {seeds} differs by exactly that"
    else:
        interval = f"95% CI [{v['low']:+.3f}, {v['high']:+.3f}], which " + \
            ("excludes 0" if v["ci_excludes_zero"] else "includes 0")
    test = v["test"] if v["test"].startswith("no test") else f"{v['test']} p = {v['p_value']:.3g}"
    return f"{over}, {interval}; {test}, n = {seeds}"


def pair_json(p: Paired) -> dict:
    out = asdict(p)
    out["difference"] = asdict(p.difference)
    return out | {"significant": p.significant, "ci_excludes_zero": p.ci_excludes_zero,
                  "smallest_p": p.smallest_p, "summary": p.sentence()}


@dataclass
class Summary:
    """What Compare and `python -m core compare` show: the groups, every pair per metric, and the verdicts
    for the chosen metric."""

    metric: str
    groups: pd.DataFrame
    pairs: dict[str, list[Paired]]
    verdicts: pd.DataFrame
    ablations: list[Paired]  # GAN-BERT − its control (adversarial off), for the chosen metric

    def to_json(self) -> dict:
        def clean(value):  # NaN and numpy scalars → JSON
            if isinstance(value, (np.floating, float)):
                return None if np.isnan(value) else float(value)
            return value.item() if isinstance(value, np.generic) else value
        groups = [{k: clean(v) for k, v in row.items() if k != "settings"} for row in self.groups.to_dict("records")]
        pairs = [pair_json(p) for found in self.pairs.values() for p in found]
        verdicts = [{k: clean(v) for k, v in row.items()} for row in self.verdicts.to_dict("records")]
        return {"metric": self.metric, "groups": groups, "pairs": pairs, "verdicts": verdicts,
                "adversarial_adds": [pair_json(p) for p in self.ablations]}


def summarize(frame: pd.DataFrame, metric: str, metrics: tuple[str, ...]) -> Summary:
    grouped = groups(frame, metrics)
    found = {m: pairs(frame, grouped, m) for m in metrics} if not grouped.empty else {m: [] for m in metrics}
    if grouped.empty:
        return Summary(metric, grouped, found, pd.DataFrame(), [])
    game = ablations(grouped, found[metric])
    return Summary(metric, grouped, found, verdicts(grouped, found[metric], metric, game), game)
