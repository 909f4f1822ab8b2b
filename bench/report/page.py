"""The page itself: the conclusions, then every section, written whole to docs/results.md, and the README's
results block."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.report import top_layers
from bench.report.groups import group_table, headline, with_headline
from bench.report.restore import TITLES, restored
from bench.report.speed import estimates_section, predict_memory_section, speed_section
from bench.report.studies import (
    default_backbone_section,
    gpu_section,
    regime_runs,
    regime_section,
    smollm2_length_section,
    smollm2_section,
    tapt_section,
    trec_section,
)
from bench.report.sweeps import attention_section, budget_section
from bench.sample_runs import RECORDS_DIR, recorded
from bench.speed.label_round import table as round_table
from bench.studies.active import CLUSTERS as LABELING_CLUSTERS
from bench.studies.active import RECORDS as LABELING_RECORDS
from bench.studies.active_tables import labeling_section
from core.runs import Registry

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "results.md"
CONCLUSIONS = ROOT / "bench" / "conclusions.md"
SWEEP_WORDS = ("SmolLM2 trained with only its top K layers on stored states (docs/methods.md), against every layer of "
               "its cut (20), at 20 labels a class on L2R's pool, tested on its dev split; each setting's runs paired "
               "by seed with the same method training every layer at the studio's defaults. Wall seconds are a run's "
               "own, its states stored or read, on one thread of this machine while other work shared the other.")
STUDY_WORDS = ("Each method on SmolLM2 at its `auto` max length, the same labeled rows per seed, validating as "
               "the studio does (L2R: its dev split; the M4 sample: the train pool); the trained methods train "
               "the top K layers its sweep chose, and fine-tuning every layer too; seconds are a run's wall "
               "seconds, and the line below the table names the precision and device most runs had and the runs "
               "that had others.")
LABELING_WORDS = ("Each strategy of `core.label` simulated from no label to 500, the corpus's own labels answering, "
                  "scored on its test texts by a logistic regression on frozen features (the features + LR "
                  "reference's, standardized over the pool), seeds 0-4. Random (unstratified) is what a user without "
                  "labels can do; stratified random draws the same count from every class knowing their classes, as a "
                  "run's labeled rows are drawn today. Differences are paired by seed (an exact sign test at 5 seeds "
                  "cannot go below p = 0.0625).")


def page() -> tuple[str, str]:
    """The whole page and the README's table, from the records alone (in a scratch studio home)."""
    with tempfile.TemporaryDirectory() as home:
        sections = [CONCLUSIONS.read_text().strip() if CONCLUSIONS.exists() else ""]
        runs_of = {}
        for name, title in TITLES.items():
            registry = Registry(Path(home) / name)
            runs_of[name] = restored(name, registry)
        trec_runs = restored("trec-coarse", Registry(Path(home) / "trec"))  # both tasks: one records file
        if (trec := trec_section(trec_runs, restored("trec-coarse", Registry(Path(home) / "trec-gpu"), gpu=True))):
            sections.append("## Where the paper claims the gain: the GAN-BERT authors' TREC split "
                            "(bench/studies/trec.py)\n\n" + trec)
        if runs_of.get("l2r"):
            sections.append("## The regime study: L2R, tested on its test split (bench/studies/regime.py)\n\n"
                            + regime_section(runs_of["l2r"]))
        if (m4 := smollm2_section(regime_runs(runs_of.get("m4-sample", [])))):
            sections.append("## SmolLM2 on the M4 sample (bench/studies/regime.py --corpus m4-sample)\n\n" + m4)
        if (lengths := smollm2_length_section(runs_of)):
            sections.append("## SmolLM2's max length (bench/studies/smollm2_length.py)\n\n" + lengths)
        if (sweep := top_layers.sweep_section(runs_of.get("l2r-dev", []))):
            sections.append("## SmolLM2 trained: how many layers, and its budget, on L2R dev "
                            "(bench/studies/defaults.py)\n\n" + SWEEP_WORDS + "\n\n" + sweep)
        if (trained := top_layers.study_section(runs_of)):
            sections.append("## SmolLM2 trained on L2R and the M4 sample (bench/studies/smollm2_trained.py)\n\n"
                            + STUDY_WORDS + "\n\n" + trained)
        if (labeling := recorded(LABELING_RECORDS)):
            rounds = [e for e in recorded(RECORDS_DIR / "speed.jsonl") if e["bench"] == "label_round"]
            tables = labeling_section(labeling, recorded(LABELING_CLUSTERS))
            sections.append("## Which texts to label: active learning (bench/studies/active.py)\n\n" + LABELING_WORDS
                            + "\n\n" + tables + ("\n\n" + round_table(rounds[-1]) if rounds else ""))
        if (default := default_backbone_section(runs_of)):
            sections.append("## The default backbone for frozen runs (bench/studies/default_backbone.py)\n\n" + default)
        if (made := recorded(RECORDS_DIR / "adapt.jsonl")) and runs_of.get("l2r-dev"):
            text = tapt_section(made, runs_of["l2r-dev"])
            sections.append("## Adapting the backbone (TAPT): its settings on L2R dev (bench/studies/tapt.py)\n\n"
                            "Each adapted backbone judged by frozen features + LR at 20 labels a class on L2R's dev "
                            "split, 3 seeds, beside the bundled MiniLM on the same rows. CPU minutes are the "
                            "adaptation's own, as recorded (a run that shared the cores with another reads more).\n\n"
                            + text)
        for name, title in TITLES.items():
            if runs_of[name]:
                sections.append(f"## Every recorded group: {title}\n\n{len(runs_of[name])} recorded runs "
                                f"(`bench/records/{name}.jsonl`).\n\n" + group_table(runs_of[name]))
        sections.append("## Speed\n\n" + "\n\n".join(filter(None, [speed_section(), top_layers.speed_section(),
                                                                      attention_section(runs_of)])))
        if (budget := budget_section(runs_of)):
            sections.append("## The trained-encoder budget (bench/studies/defaults.py)\n\n" + budget)
        sections.append(estimates_section())
        sections.append(predict_memory_section())
        sections.append("## On a GPU (bench/gpu/check.py)\n\n"
                        + gpu_section(restored("l2r", Registry(Path(home) / "l2r-gpu"), gpu=True)))
        table = headline(runs_of)
    head = ("# Results\n\nWritten by `python -m bench.report` from `bench/records/*.jsonl`; do not edit by hand (the "
            "test `tests/test_docs.py` regenerates it). Accuracy is on each corpus's test texts, with Student's t 95% "
            "interval over seeds as computed; runs with the same seed share their labeled rows, so differences are "
            "paired by seed (an exact sign test up to 5 seeds).")
    return "\n\n".join([head, "## The headline table\n\n" + table, *filter(None, sections)]) + "\n", table


def main() -> int:
    parser = argparse.ArgumentParser(description="docs/results.md and the README's results block, from the records "
                                                 "alone")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md", help="the README whose results block "
                        "is rewritten")
    args = parser.parse_args()
    text, table = page()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    args.readme.write_text(with_headline(args.readme.read_text(), table))
    print(f"wrote {args.out} ({len(text.splitlines())} lines) and the results block of {args.readme}")
    return 0
