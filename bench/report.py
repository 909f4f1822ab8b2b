"""docs/results.md, written from the committed records and nothing else: every figure in it comes from
`bench/records/*.jsonl` (the runs of bench/results.py, bench/defaults.py, bench/regime.py and bench/tapt.py, and the
speed measurements of bench/encode.py and bench/train.py), summarised by `core.compare` as Compare and the CLI
summarise them. The hand-written conclusions (bench/conclusions.md) open the page; each names the table it rests on.

The records are restored into a scratch studio home, each bench prints its tables from there (`--report-only`
semantics: nothing trains), and the page is written whole. tests/test_docs.py regenerates it and fails when the
committed page differs, so no figure can drift from its record.

Run: .venv/bin/python bench/report.py [--out docs/results.md] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.environment import prepare  # noqa: E402

prepare()  # before torch loads: offline, reproducible sums

import pandas as pd  # noqa: E402

from bench.sample_runs import CORPORA, RECORDS_DIR, recorded, restore  # noqa: E402
from core import compare  # noqa: E402
from core.runs import Registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results.md"
CONCLUSIONS = Path(__file__).resolve().parent / "conclusions.md"
TITLES = {"m4-sample": "The M4 sample: 128 texts to train on, 65 dev texts to test on",
          "l2r-dev": "L2R, tested on its dev split (where settings are chosen)",
          "l2r": "L2R, tested on its test split (the regime study)"}


def restored(name: str, registry: Registry) -> list:
    """A corpus's recorded runs, restored into `registry`, in the order they were recorded."""
    corpus = CORPORA[name]
    return [restore(registry, entry, corpus.folder) for entry in recorded(corpus.records)]


def cell(g, metric: str = "accuracy") -> str:
    interval = getattr(g, f"{metric}_interval")
    return f"{getattr(g, f'{metric}_mean'):.3f} {interval}".rstrip()


def group_table(runs: list) -> str:
    """Every group of a corpus's runs (every setting but the seed): n, accuracy with its 95% interval as
    computed, macro-F1, labels read, CPU seconds per run and the precision the encoder ran at."""
    frame = compare.runs_frame(runs)
    frame["cpu"] = [(r.metrics or {}).get("cpu_seconds") for r in runs]
    frame["precision"] = [r.config.precision for r in runs]
    summary = compare.summarize(frame, "accuracy", compare.METRICS)
    extra = frame.groupby("settings").agg(cpu=("cpu", "mean"), precision=("precision", lambda p: "/".join(sorted(set(p)))))
    groups = summary.groups.join(extra, on="settings").sort_values(["labeled", "accuracy_mean"], ascending=[True, False])
    groups = groups.rename(columns={"labels read": "labels_read"})
    lines = ["| series | amount | n | accuracy [95% CI] | macro-F1 | labels read | CPU s/run | precision |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for g in groups.itertuples():
        cpu = "–" if pd.isna(g.cpu) else f"{g.cpu:,.0f}"
        lines.append(f"| {g.series} | {g.amount} | {g.n} | {cell(g)} | {g.macro_f1_mean:.3f} | "
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


def speed_section() -> str:
    """The latest measurements of bench/encode.py and bench/train.py, as they recorded them."""
    entries = recorded(RECORDS_DIR / "speed.jsonl")
    if not entries:
        return "No speed measurement recorded yet."
    out = []
    for bench in ("encode", "train"):
        mine = [e for e in entries if e["bench"] == bench]
        if not mine:
            continue
        latest = mine[-1]
        out.append(f"**bench/{bench}.py** ({latest['machine']}):\n\n```json\n{json.dumps(latest['summary'], indent=1)}\n```")
    return "\n\n".join(out)


def page() -> str:
    """The whole page, from the records alone (in a scratch studio home)."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["STUDIO_HOME"] = home
        sections = [CONCLUSIONS.read_text().strip() if CONCLUSIONS.exists() else ""]
        for name, title in TITLES.items():
            registry = Registry(Path(home) / name)
            runs = restored(name, registry)
            if runs:
                sections.append(f"## {title}\n\n{len(runs)} recorded runs (`bench/records/{name}.jsonl`).\n\n"
                                + group_table(runs))
        sections.append("## Speed\n\n" + speed_section())
    head = ("# Results\n\nWritten by `bench/report.py` from `bench/records/*.jsonl`; do not edit by hand (the test "
            "`tests/test_docs.py` regenerates it). Accuracy is on each corpus's test texts, with Student's t 95% "
            "interval over seeds as computed; runs with the same seed share their labeled rows, so differences are "
            "paired by seed (an exact sign test up to 5 seeds).")
    return "\n\n".join([head, *filter(None, sections)]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 when the page on disk differs")
    args = parser.parse_args()
    text = page()
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print("current" if same else f"{args.out} differs from the records: run bench/report.py")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
