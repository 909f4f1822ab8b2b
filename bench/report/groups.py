"""Tables of groups over seeds: every recorded group of a corpus as Compare summarises it, and the README's
headline table of each method at its defaults."""

from __future__ import annotations

import pandas as pd

from bench import figures
from bench.sample_runs import at_defaults
from core import compare


def group_table(runs: list) -> str:
    """Every group of a corpus's runs (every setting but the seed): n, accuracy with its 95% interval as
    computed, macro-F1, labels read, CPU seconds per run and the precision the encoder ran at."""
    frame = compare.runs_frame(runs)
    frame["cpu"] = [(r.metrics or {}).get("cpu_seconds") for r in runs]
    frame["precision"] = [r.config.precision for r in runs]
    summary = compare.summarize(frame, "accuracy", compare.METRICS)
    extra = frame.groupby("settings").agg(cpu=("cpu", "mean"),
                                          precision=("precision", lambda p: "/".join(sorted(set(p)))))
    groups = summary.groups.join(extra, on="settings").sort_values(["labeled", "accuracy_mean"],
                                                                   ascending=[True, False])
    groups = groups.rename(columns={"labels read": "labels_read"})
    lines = ["| series | amount | n | accuracy [95% CI] | macro-F1 | labels read | CPU s/run | precision |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for g in groups.itertuples():
        cpu = "–" if pd.isna(g.cpu) else f"{g.cpu:,.0f}"
        lines.append(f"| {g.series} | {g.amount} | {g.n} | {figures.group(g)} | {g.macro_f1_mean:.3f} | "
                     f"{'–' if pd.isna(g.labels_read) else f'{g.labels_read:.0f}'} | {cpu} | {g.precision} |")
    verdicts = [f"- {compare.verdict_line(v)}" for v in summary.verdicts.to_dict("records")]
    adds = [f"- {p.a}: {compare.adds(p)} ({p.test}, p = {p.p_value:.3g})" for p in summary.ablations]
    adapted = [f"- {p.a}: {compare.adds(p)} ({p.test}, p = {p.p_value:.3g})" for p in summary.adapted]
    out = ["\n".join(lines), "**Verdicts** (test accuracy, the two highest means per labeled amount, paired by seed):",
           "\n".join(verdicts)]
    if adds:
        out += ["**What GAN-BERT's adversarial part adds** (GAN-BERT − its control, paired by seed):", "\n".join(adds)]
    if adapted:
        out += ["**What adapting the backbone adds** (adapted − base, paired by seed):", "\n".join(adapted)]
    return "\n\n".join(out)


HEADLINE = {"TF-IDF + LR": {"method": "tfidf-lr"},
            "MiniLM: frozen features + LR": {"method": "features-lr", "frozen": True},
            "MiniLM: trained head on frozen features": {"method": "finetune", "frozen": True},
            "MiniLM: GAN-BERT G1 (noise) on frozen features": {"method": "ganbert", "generator": "noise",
                                                               "frozen": True},
            "MiniLM: GAN-BERT G2 (bag of words) on frozen features": {"method": "ganbert", "generator": "bow",
                                                                      "frozen": True},
            "MiniLM: GAN-BERT's control (adversarial off)": {"method": "ganbert", "adversarial": False,
                                                             "frozen": True}}
COLUMNS = (("m4-sample", 5), ("m4-sample", 20), ("l2r", 5), ("l2r", 20), ("l2r", 100))
GAME = ("MiniLM: GAN-BERT G1 (noise) on frozen features", "MiniLM: GAN-BERT's control (adversarial off)")


def headline(runs_of: dict[str, list]) -> str:
    """The README's table: each method at its defaults (the whole unlabeled pool for GAN-BERT) on each corpus and
    labeled amount, accuracy mean [95% CI] over seeds, and what GAN-BERT G1's adversarial part adds there."""
    from core.compare.seeds import paired

    def scores(name: str, per_class: int, settings: dict) -> dict[int, float]:
        return {r.config.seed: r.metrics["test"]["accuracy"] for r in runs_of.get(name, [])
                if at_defaults(r.config, per_class, settings)}

    header = "| method | " + " | ".join(f"{'M4 sample' if n == 'm4-sample' else 'L2R'} {k}/class" for n, k in COLUMNS)
    lines = [header + " |", "|---|" + "---:|" * len(COLUMNS)]
    found = {m: [scores(n, k, s) for n, k in COLUMNS] for m, s in HEADLINE.items()}
    for method, cells in found.items():
        shown = []
        for got in cells:
            shown.append(figures.mean(got.values(), n=False))
        lines.append(f"| {method} | " + " | ".join(shown) + " |")
    diffs = []
    for game, control in zip(*(found[m] for m in GAME)):
        diffs.append(figures.difference(paired("G1", "control", "accuracy", game, control).difference, n=False))
    lines.append("| MiniLM: GAN-BERT G1 − its control (paired by seed) | " + " | ".join(diffs) + " |")
    return "\n".join(lines + smollm2_rows(runs_of))


def smollm2_rows(runs_of: dict[str, list]) -> list[str]:
    """The headline's rows for SmolLM2, the backbone that keeps style (bench/studies/smollm2_trained.py): read frozen,
    and trained on its top K layers, with what GAN-BERT's game adds there; none before the study has run."""
    from bench.studies import smollm2_trained as study
    from core.compare.seeds import paired

    frames = {corpus: study.frame_of(runs_of.get(corpus, [])) for corpus in ("m4-sample", "l2r")}
    if all(f.empty for f in frames.values()):
        return []

    def seeds(name: str, corpus: str, per_class: int) -> dict[int, float]:
        f = frames[corpus]
        if f.empty:
            return {}
        at = f[(f["name"] == name) & (f["per_class"] == per_class)]
        return dict(zip(at["seed"], at["accuracy"]))

    rows = []
    for name, words in (("features-lr-both", "SmolLM2: frozen features + LR (hidden states and token probabilities)"),
                        ("finetune-top", f"SmolLM2: fine-tuned, its top {study.TOP} layers"),
                        ("finetune-all", "SmolLM2: fine-tuned, every layer")):
        rows.append(f"| {words} | " + " | ".join(figures.mean(seeds(name, n, k).values(), n=False)
                                                 for n, k in COLUMNS) + " |")
    diffs = [figures.difference(paired("G1", "control", "accuracy", seeds("ganbert-noise", n, k),
                                       seeds("ganbert-control", n, k)).difference, n=False) for n, k in COLUMNS]
    rows.append(f"| SmolLM2: GAN-BERT G1 − its control, top {study.TOP} layers (paired by seed) | " + " | ".join(diffs)
                + " |")
    return rows


def with_headline(readme: str, table: str) -> str:
    """The README with its results block (between its two markers) replaced by `table`."""
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    head, rest = readme.split(start, 1)
    return f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"
