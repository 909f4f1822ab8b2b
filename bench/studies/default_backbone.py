"""The default backbone for frozen runs on a CPU, by measurement (issue 78): the bundled MiniLM against SmolLM2's
hidden states (layer 20) and its hidden states with token probabilities (`both`), each at its own `auto` length,
for features + LR at 5 and 20 labels a class, seeds 0-4, on the M4 sample (`--corpus m4-sample`) and L2R dev
(`--corpus l2r-dev`). Runs with the same seed read the same labeled rows, so SmolLM2 − MiniLM is paired by seed.

What each costs comes from the other benches' records, read by `costs`: the time a first and a repeated grid took
on L2R (bench/speed/estimates.py, with and without `--backbone smollm2-135m`), and SmolLM2's first-use conversion
and its reload (bench/speed/encode.py --backbone smollm2-135m). bench.report writes both into docs/results.md.

Every run goes through the benches' home and the corpus's records, so the bench resumes where it stopped;
SmolLM2's `both` runs are bench/studies/smollm2_length.py's at the same length, and its hidden-state runs read their
feature store.

Run: .venv/bin/python -m bench.studies.default_backbone [--corpus m4-sample|l2r-dev] [--seeds 0 1 2 3 4]
     [--per-class 5 20] [--report-only]
"""

from __future__ import annotations

from bench import figures
from bench.sample_runs import (
    BENCH_ENGINE,
    DEFAULT_HOME,
    RECORDS_DIR,
    corpus_of,
    keep_for_corpus,
    open_home,
    recorded,
    run_each,
    sample_parser,
)
from core.backbone.packaged import MINILM, SMOLLM2
from core.data import DataSpec
from core.runs import Run
from core.train import TrainConfig
from core.train.methods.direct_specs import FeaturesLRSpec

LENGTHS = RECORDS_DIR / "default-backbone.jsonl"  # each corpus's auto length per backbone and precision, for the report
CHOICES = {"MiniLM (bundled)": {"backbone": None},  # the backbone's name in the table → its settings
           "SmolLM2 hidden": {"backbone": SMOLLM2, "features": "hidden"},
           "SmolLM2 both": {"backbone": SMOLLM2, "features": "both"}}


def config_of(spec: DataSpec, choice: str, per_class: int, seed: int, precision: str) -> TrainConfig:
    return TrainConfig.of(data=spec, method="features-lr", frozen=True, fraction=None, per_class=per_class, seed=seed,
                       max_len=None, unlabeled_limit=None, tags=("default-backbone",), precision=precision,
                       encoder_engine=BENCH_ENGINE, **CHOICES[choice])


def choice_of_config(c: TrainConfig) -> str | None:
    """Which of `CHOICES` a features + LR config is (None: another config)."""
    if c.method != "features-lr" or not c.frozen or c.per_class is None:
        return None
    if c.backbone == MINILM:
        return "MiniLM (bundled)"
    if c.backbone == SMOLLM2 and c.features in ("hidden", "both"):
        return f"SmolLM2 {c.features}"
    return None


def choice_of(run: Run, precision: str) -> str | None:
    """Which of `CHOICES` a finished run of this bench's settings is: torch at `precision`, LR at its default C
    (None: another run, such as bench/speed/encode.py's engines or bench/studies/defaults.py's C sweep, or one without
    metrics)."""
    c, choice = run.config, choice_of_config(run.config)
    if choice is None or run.metrics is None or c.precision != precision \
            or c.encoder_engine not in (None, BENCH_ENGINE) or c.params.lr_c != FeaturesLRSpec.default_c:
        return None
    return choice


def accuracies(runs: list[Run], lengths: dict[str, int], precision: str) -> dict[tuple[str, int, int], float]:
    """Test accuracy by (backbone, amount, seed), of this bench's runs at each backbone's auto length (`lengths`)."""
    return {(choice, r.config.per_class, r.config.seed): r.metrics["test"]["accuracy"] for r in runs
            if (choice := choice_of(r, precision)) and r.config.max_len == lengths.get(choice)}


def paired(by: dict[tuple[str, int, int], float], choice: str, per_class: int) -> list[float]:
    """`choice` − MiniLM on each seed both ran at `per_class`."""
    return [v - by[("MiniLM (bundled)", n, s)] for (c, n, s), v in sorted(by.items())
            if c == choice and n == per_class and ("MiniLM (bundled)", n, s) in by]


def table(runs: list[Run], lengths: dict[str, int], precision: str) -> str:
    """Per backbone, at `lengths` (each one's auto length on the corpus): accuracy [95% CI] at each amount, its
    difference with MiniLM paired by seed (ahead / behind), and the encoding's seconds over the runs that encoded."""
    by = accuracies(runs, lengths, precision)
    if not by:
        return ""
    amounts = sorted({n for _, n, _ in by})
    head = ["backbone", "max length", *[f"{n}/class: accuracy [95% CI]" for n in amounts],
            *[f"{n}/class: − MiniLM (ahead / behind)" for n in amounts], "encoding s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for choice in CHOICES:
        if not any(c == choice for c, _, _ in by):
            continue
        cells = [choice, str(lengths[choice])]
        for n in amounts:
            scores = [v for (c, k, _), v in by.items() if c == choice and k == n]
            cells.append(figures.mean(scores))
        for n in amounts:
            diffs = [] if choice.startswith("MiniLM") else paired(by, choice, n)
            cells.append(f"{figures.difference(diffs)} ({sum(d > 0 for d in diffs)} / {sum(d < 0 for d in diffs)})"
                         if diffs else "–")
        encoded = {(r.config.per_class, r.config.seed): r.metrics.get("encode_seconds") or 0.0 for r in runs
                   if choice_of(r, precision) == choice and r.config.max_len == lengths[choice]}  # one run a seed
        cells.append(f"{sum(encoded.values()):,.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def costs() -> str:
    """What each backbone and feature set costs in time, from the records of bench/speed/estimates.py (the latest L2R
    grid of each, with the CPU it ran on) and bench/speed/encode.py --backbone (SmolLM2's conversion and reload)."""
    grids = {(e.get("backbone", "minilm"), e.get("features", "hidden")): e
             for e in recorded(RECORDS_DIR / "estimates.jsonl") if e["corpus"] == "l2r"}
    rows = ["| backbone, features | CPU | L2R grid (runs) | first grid: took s (estimated s) | repeated grid: took s "
            "(estimated s) |", "|---|---|---:|---:|---:|"]
    for (backbone, features), e in grids.items():
        first, repeated = e["grids"]["first grid, no history"], e["grids"]["same grid, other seeds"]
        rows.append(f"| {backbone}, {features} ({e['date']}) | {e.get('cpu', '–')} | {e['runs']} | "
                    f"{first['took_s']:,.0f} ({first['estimated_s']:,.0f}) | "
                    f"{repeated['took_s']:,.0f} ({repeated['estimated_s']:,.0f}) |")
    out = ["\n".join(rows)] if len(rows) > 2 else []
    causal = [e["summary"] for e in recorded(RECORDS_DIR / "speed.jsonl") if e["bench"] == "encode-causal"]
    if causal:
        out.append(f"SmolLM2's first use converts its GGUF file once: {causal[-1]['convert_s']:.0f} s; every later "
                   f"process loads the converted folder in {causal[-1]['load_converted_s']:.2f} s.")
    return "\n\n".join(out)


def main() -> int:
    parser = sample_parser(__doc__, DEFAULT_HOME)
    args = parser.parse_args()
    if (opened := open_home(args)) is None:  # the corpus is not there, as its spec has said
        return 2
    spec, registry = opened
    # a backbone's runs together: its store encodes once
    runs = run_each(registry, args, [config_of(spec, choice, n, seed, args.precision) for choice in CHOICES
                                     for n in args.per_class for seed in args.seeds],
                    lambda c: f"{choice_of_config(c)} ({c.max_len} tokens) {c.per_class}/class seed {c.seed}")
    lengths = {choice_of_config(r.config): r.config.max_len for r in runs}
    precision = runs[0].config.precision if runs else args.precision
    keep_for_corpus(LENGTHS, {"corpus": corpus_of(args).name, "lengths": lengths, "precision": precision})
    print(table(runs, lengths, precision))
    print(costs())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
