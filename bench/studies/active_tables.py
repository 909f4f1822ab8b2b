"""The active-learning study's tables (bench/studies/active.py), from its records alone: printed by the study,
written into docs/results.md by bench.report."""

from __future__ import annotations

import numpy as np

from core.compare.seeds import mean_ci, paired

BUDGETS = (10, 25, 50, 100, 250, 500)
REFERENCE_PER_CLASS = 20  # "stratified random's accuracy at 20 a class"
TITLES = {"random": "Random (unstratified)", "stratified": "Stratified random (reference)",
          "entropy": "Uncertainty (entropy)", "margin": "Uncertainty (breaking ties)",
          "typiclust": "Diversity (TypiClust)", "hybrid": "TypiClust, then breaking ties"}
BACKBONES = {"minilm": "MiniLM", "smollm2": "SmolLM2"}


def at(entry: dict, labels: int) -> float | None:
    return next((p[1] for p in entry["points"] if p[0] == labels), None)


def by_seed(entries: list[dict], strategy: str, labels: int) -> dict[int, float]:
    return {e["seed"]: v for e in entries if e["strategy"] == strategy and (v := at(e, labels)) is not None}


def cell(values: dict[int, float]) -> str:
    ci = mean_ci(list(values.values()))
    if ci.n == 0:
        return "–"
    return f"{ci.mean:.3f}" + (f" [{ci.low:.3f}, {ci.high:.3f}]" if ci.low is not None else "")


def versus(a: dict[int, float], b: dict[int, float]) -> str:
    if not set(a) & set(b):
        return "–"
    p = paired("a", "b", "accuracy", a, b)
    d = p.difference
    interval = f" [{d.low:+.3f}, {d.high:+.3f}]" if d.low is not None else ""
    return f"{d.mean:+.3f}{interval} {p.wins}/{len(p.seeds)}"


def reached(entries: list[dict], strategy: str, target_labels: int) -> list[int | None]:
    """Per seed, the fewest labels at which the strategy's accuracy reaches stratified random's at
    `target_labels` on the same seed (None: not within the budget)."""
    out = []
    for seed, goal in sorted(by_seed(entries, "stratified", target_labels).items()):
        entry = next((e for e in entries if e["strategy"] == strategy and e["seed"] == seed), None)
        if entry is not None:
            out.append(next((p[0] for p in entry["points"] if p[1] >= goal), None))
    return out


def reach_cell(counts: list[int | None], target: int) -> str:
    if not counts:
        return "–"
    found = [c for c in counts if c is not None]
    median = f"{int(np.median(found))}" if len(found) == len(counts) else \
        f"{int(np.median(found))} ({len(counts) - len(found)} seed(s) never)" if found else "never"
    half = sum(c is not None and c <= target // 2 for c in counts)
    return f"{median}; per seed {', '.join('–' if c is None else str(c) for c in counts)}; ≤ {target // 2}: " \
           f"{half}/{len(counts)}"


def group_section(entries: list[dict]) -> str:
    first = entries[0]
    classes, shown = len(first["classes"]), [s for s in TITLES if any(e["strategy"] == s for e in entries)]
    budgets = [b for b in BUDGETS if b <= first["pool"]]
    seeds = sorted({e["seed"] for e in entries})
    f = first["features"]
    lines = [f"{first['pool']:,} texts to pick from, {first['test']:,} test texts, {classes} classes; features: "
             f"{f['dimensions']:,} dimensions ({f['pooling']}, {f['max_len']} tokens, {f['precision']}); seeds "
             f"{', '.join(map(str, seeds))}.", "",
             "Accuracy on the test texts by labels in all (mean over seeds [95% CI]):", "",
             "| Strategy | " + " | ".join(str(b) for b in budgets) + " |", "|---|" + "---|" * len(budgets)]
    for s in shown:
        lines.append(f"| {TITLES[s]} | " + " | ".join(cell(by_seed(entries, s, b)) for b in budgets) + " |")
    lines += ["", "Each strategy − random (unstratified), paired by seed: mean [95% CI] and the seeds it is ahead on:",
              "", "| Strategy | " + " | ".join(str(b) for b in budgets) + " |", "|---|" + "---|" * len(budgets)]
    for s in shown:
        if s != "random":
            lines.append(f"| {TITLES[s]} | " + " | ".join(
                versus(by_seed(entries, s, b), by_seed(entries, "random", b)) for b in budgets) + " |")
    target = REFERENCE_PER_CLASS * first["present"]  # the classes the pool holds (the M4 sample has no bloomz)
    if target <= first["pool"] and by_seed(entries, "stratified", target):
        goal = cell(by_seed(entries, "stratified", target))
        lines += ["", f"Labels needed to reach stratified random's accuracy at {REFERENCE_PER_CLASS} a class "
                      f"({target} labels: {goal}), on the same seed (median; per seed; seeds within half its labels):",
                  "", "| Strategy | Labels |", "|---|---|"]
        for s in shown:
            if s != "stratified":
                lines.append(f"| {TITLES[s]} | {reach_cell(reached(entries, s, target), target)} |")
    rounds = {s: [p[3] for e in entries if e["strategy"] == s for p in e["points"]] for s in shown}
    lines += ["", "Seconds a round took (picking its texts and refitting; the slowest round, and the median), "
                  f"on {first['machine']}: " + "; ".join(
                      f"{TITLES[s]} {max(v):.2f} (median {np.median(v):.3f})" for s, v in rounds.items() if v) + "."]
    return "\n".join(lines)


def clusters_line(entry: dict) -> str:
    """What the pool's clusters follow, in the space TypiClust clusters in."""
    return ("What the pool's clusters follow (mini-batch k-means in the 64 principal components TypiClust clusters "
            "in; purity: the share of texts in their cluster's most common class, or domain): " + "; ".join(
                f"{r['clusters']} clusters: by class {r['by_class']:.3f}, by domain {r['by_source']:.3f}"
                for r in entry["rows"]) + f" (the largest class alone: {entry['largest_class']:.3f}; "
            f"{entry['sources']} domains).")


def labeling_section(entries: list[dict], clusters: list[dict] = ()) -> str:
    """Per corpus and backbone: accuracy against labels, each strategy against random, the labels each needs to
    reach stratified random at 20 a class, the round times, and what the pool's clusters follow."""
    parts = []
    for corpus in dict.fromkeys(e["corpus"] for e in entries):
        for backbone in dict.fromkeys(e["backbone"] for e in entries if e["corpus"] == corpus):
            group = [e for e in entries if e["corpus"] == corpus and e["backbone"] == backbone]
            found = [c for c in clusters if (c["corpus"], c["backbone"]) == (corpus, backbone)]
            if group:
                parts.append(f"### {corpus}, {BACKBONES.get(backbone, backbone)} features\n\n" + group_section(group)
                             + ("\n\n" + clusters_line(found[-1]) if found else ""))
    return "\n\n".join(parts)
