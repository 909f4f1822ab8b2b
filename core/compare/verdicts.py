"""Verdicts over groups of seeds: what GAN-BERT's adversarial part adds over its control, the best group per
labeled amount against its runner-up, each in words, and the summary Compare and `python -m core compare` show.
The statistics they rest on are `core.compare.seeds`'."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from core.backbone.locate import ADAPTED_RECORD
from core.backbone.packaged import PACKAGED
from core.compare.seeds import ALPHA, SIGN_TEST_UP_TO, Paired, find_pair, groups, pairs, smallest_p

CONTROL_FREE = ("adversarial", "generator", "noise", "noise_dim")  # a control has no generator (its group drops
# what it does not read): it pairs with G1's and G2's runs


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
                out.append(replace(p, caveat=NO_UNLABELED) if getattr(r, "unlabeled", None) == 0 else p)
    return out


NO_UNLABELED = ("GAN-BERT read no unlabeled text here, so its discriminator had no real text but the labeled one to "
                "tell from G's: this pair says nothing of what the game does with unlabeled text")


def adaptations(grouped: pd.DataFrame, found: list[Paired]) -> list[Paired]:
    """What adapting the backbone to the data's texts adds: each group on an adapted backbone against the group
    with the same settings on its base (`core.train.adaptation`), paired by seed, as adapted − base."""
    parsed = {key: json.loads(key) for key in grouped["settings"]}
    by_settings = {json.dumps(parsed[r.settings], sort_keys=True): r.group for r in grouped.itertuples()}
    out = []
    for r in grouped.itertuples():
        base = base_of(parsed[r.settings].get("backbone"))
        if base is None:
            continue
        on_base = {**parsed[r.settings], **base}
        other = by_settings.get(json.dumps(on_base, sort_keys=True))
        if other is not None and (p := find_pair(found, r.group, other)) is not None:
            out.append(p)
    return out


def base_of(backbone: str | None) -> dict | None:
    """The settings that name an adapted backbone's base (one the studio names, such as MiniLM, by its name), or
    None when `backbone` is not one the studio adapted."""
    record = Path(backbone) / ADAPTED_RECORD if backbone else None
    if record is None or not record.is_file():
        return None
    base = json.loads(record.read_text())["base"]
    if (name := next((n for n, entry in PACKAGED.items() if entry.title == base["name"]), None)) is not None:
        return {"backbone": name, "revision": None}
    return {"backbone": base["hub_id"] or base["folder"], "revision": base["revision"]}


def adds(p: Paired) -> str:
    """'+0.031 [-0.020, +0.082], n=5' for a verdict table's cell."""
    d = p.difference
    ci = f" [{d.low:+.3f}, {d.high:+.3f}]" if d.low is not None else ""
    return f"{d.mean:+.3f}{ci}, n={d.n}"


def adds_line(p: Paired, part: str = "the adversarial part") -> str:
    """What one paired ablation says (GAN-BERT − its control, or adapted − base), in words before numbers: the same
    line on the Compare page and in `compare`'s output. A cost or a gain is named only where the interval excludes
    0, and a few seeds are said to be few: no rank test on 5 or fewer can confirm what they show."""
    d, n = p.difference, len(p.seeds)
    seeds = f"{n} seed{'s' if n != 1 else ''}"
    if d.low is None:
        said = f"cannot be told from one seed ({d.mean:+.3f} on it)"
    elif p.ci_excludes_zero:
        said = (f"{'adds' if d.mean > 0 else 'costs'} {abs(d.mean):.3f}: the 95% interval excludes 0 on these "
                f"{seeds}" + (f", though no rank test on {seeds} can confirm it" if p.smallest_p >= ALPHA else ""))
    else:
        said = "adds nothing that can be told: the 95% interval includes 0"
    return (f"{p.a.split(' @ ')[0]} at {p.a.split(' @ ')[-1]}: {part} {said} ({adds(p)}; {p.test}, "
            f"p = {p.p_value:.3g}; ahead on {p.wins} of {seeds})" + (f". Caution: {p.caveat}" if p.caveat else ""))


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
    """For each dataset and labeled amount: the two groups with the highest means (`best`, `runner_up`: an order
    by mean, not a verdict), their paired difference with its interval and test, and the verdict those allow: a
    `leader` only where the interval excludes 0 on two seeds or more, else none, "no difference can be told". And,
    where GAN-BERT ran beside its control, what its adversarial part adds (`game`, from `ablations`: GAN-BERT −
    control, with the interval). Each group also by its series alone (`best_series`), for a table whose row
    already names the amount."""
    rows = []
    for (dataset, amount), g in grouped.groupby(["dataset", "amount"], sort=False):
        ranked = g.sort_values(f"{metric}_mean", ascending=False)
        best = ranked.iloc[0]
        row = {"dataset": dataset, "amount": amount, "labeled": best["labeled"], "best": best["group"],
               "best_series": best["series"], "best_mean": best[f"{metric}_mean"], "runner_up": None,
               "runner_up_series": None, "runner_up_mean": None, "difference": None, "low": None, "high": None,
               "n": 0, "test": None, "p_value": None, "significant": None, "ci_excludes_zero": None,
               "labels_note": None, "leader": None, "verdict": "only one series measured"}
        if len(ranked) > 1:
            second = ranked.iloc[1]
            d = find_pair(found, best["group"], second["group"])
            row |= {"runner_up": second["group"], "runner_up_series": second["series"],
                    "runner_up_mean": second[f"{metric}_mean"], "verdict": "no difference can be told"}
            if d is not None:
                settled = len(d.seeds) > 1 and d.ci_excludes_zero
                leader = (best if d.difference.mean > 0 else second)["series"] if settled else None
                row |= {"difference": d.difference.mean, "low": d.difference.low, "high": d.difference.high,
                        "n": len(d.seeds), "test": d.test, "p_value": d.p_value, "significant": d.significant,
                        "ci_excludes_zero": d.ci_excludes_zero, "leader": leader,
                        "verdict": f"{leader} leads" if settled else "no difference can be told",
                        "labels_note": d.unequal_labels("the first", "the second")}
            else:
                row |= {"difference": best[f"{metric}_mean"] - second[f"{metric}_mean"],
                        "test": "no shared seeds: not paired"}
        names = set(g["group"])
        added = [f"{p.a.split(' @ ')[0]}: {adds(p)}" for p in game if p.a in names]
        row["adversarial_adds"] = "; ".join(added) or None
        rows.append(row)
    return pd.DataFrame(rows)


def verdict_line(v: dict) -> str:
    """One verdict row in words, the same on the Compare page, in `compare`'s output and in the benches. It leads
    with what the data can tell: a leader only where the paired interval excludes 0 (on two seeds or more), and
    otherwise "no difference can be told" before any number. Names stay whole, which a table's column cut; with
    several datasets each series names its own."""
    a, b = v["best_series"], v["runner_up_series"]
    if pd.isna(b):  # a frame's records hold NaN where its rows held None
        return f"{v['amount']}: only {a} measured ({v['best_mean']:.3f})"
    means = f"{a} ({v['best_mean']:.3f}) and {b} ({v['runner_up_mean']:.3f})"
    if not v["n"]:
        return f"{v['amount']}: no difference can be told: {means} share no seed, so they are not paired"
    n = int(v["n"])
    seeds = f"{n} seed{'s' if n != 1 else ''}"
    test = v["test"] if v["test"].startswith("no test") else f"{v['test']} p = {v['p_value']:.3g}"
    note = f"; {v['labels_note']}" if isinstance(v.get("labels_note"), str) else ""
    if pd.isna(v["low"]):
        # the means are over each group's own seeds; the difference is on the one seed both ran, and says so
        return (f"{v['amount']}: no difference can be told from one shared seed: {means}; on the seed both ran, "
                f"the first − the second = {v['difference']:+.3f}{note}")
    # each name once: a walk's verdict named two long series four times in one sentence
    if isinstance(v.get("leader"), str):
        other, sign = (b, 1) if v["leader"] == a else (a, -1)
        low, high = sorted((sign * v["low"], sign * v["high"]))
        interval = (f"on every one of the {seeds}" if high - low < 1e-9
                    else f"95% CI [{low:+.3f}, {high:+.3f}], which excludes 0")
        return (f"{v['amount']}: {v['leader']} leads {other} by {abs(v['difference']):.3f} ({interval}); {test}, "
                f"n = {seeds}{note}")
    interval = (f"every one of the {seeds} differs by exactly that" if v["high"] - v["low"] < 1e-9
                else f"95% CI [{v['low']:+.3f}, {v['high']:+.3f}]")
    # paired on the seeds both ran, which the means (each over its group's own seeds) need not share: a walk read
    # a negative difference under a higher first mean
    return (f"{v['amount']}: no difference can be told between {means}: the first − the second = "
            f"{v['difference']:+.3f} on the {seeds} both ran, {interval}, which includes 0; {test}, n = {seeds}{note}")


def pair_json(p: Paired) -> dict:
    out = asdict(p)
    out["difference"] = asdict(p.difference)
    out["labels"] = [None if n is None or pd.isna(n) else float(n) for n in p.labels]
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
    adapted: list[Paired] = field(default_factory=list)  # a method on an adapted backbone − on its base

    def to_json(self) -> dict:
        def clean(value):  # NaN and numpy scalars → JSON
            if isinstance(value, (np.floating, float)):
                return None if np.isnan(value) else float(value)
            return value.item() if isinstance(value, np.generic) else value
        groups = [{k: clean(v) for k, v in row.items() if k != "settings"} for row in self.groups.to_dict("records")]
        pairs = [pair_json(p) for found in self.pairs.values() for p in found]
        verdicts = [{k: clean(v) for k, v in row.items()} for row in self.verdicts.to_dict("records")]
        return {"metric": self.metric, "groups": groups, "pairs": pairs, "verdicts": verdicts,
                "adversarial_adds": [pair_json(p) for p in self.ablations],
                "adaptation_adds": [pair_json(p) for p in self.adapted]}


def summarize(frame: pd.DataFrame, metric: str, metrics: tuple[str, ...]) -> Summary:
    grouped = groups(frame, metrics)
    found = {m: pairs(frame, grouped, m) for m in metrics} if not grouped.empty else {m: [] for m in metrics}
    if grouped.empty:
        return Summary(metric, grouped, found, pd.DataFrame(), [])
    game = ablations(grouped, found[metric])
    return Summary(metric, grouped, found, verdicts(grouped, found[metric], metric, game), game,
                   adaptations(grouped, found[metric]))
