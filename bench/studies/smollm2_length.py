"""SmolLM2's max length, measured where it matters (issue 78): features + LR on SmolLM2's features (layer 20 and
its token probabilities, `both`) at 128, 256 and 512 tokens, 5 and 20 labels a class, seeds 0-4, on the M4 sample
(arXiv abstracts and Reddit answers: most of its texts run past 128 tokens) by default, or L2R dev (paragraphs) with
`--corpus l2r-dev`. Each length's runs share one feature store, so a length's first run encodes the labeled rows
of every seed it draws and the test texts, and its encoding seconds are what that length costs.

Every run goes through the benches' home and the corpus's records (`bench/records/<corpus>.jsonl`), so the bench
resumes where it stopped; the runs at 128 are the regime study's own (the same settings). Prints, per length, the
share of the training texts it cuts, the accuracy at each amount [95% CI], the difference with 128 paired by seed,
and the encoding's seconds; bench.report writes the same table into docs/results.md.

Run: .venv/bin/python -m bench.studies.smollm2_length [--corpus m4-sample] [--lengths 128 256 512] [--seeds 0 1 2 3 4]
     [--per-class 5 20] [--report-only]
"""

from __future__ import annotations

from pathlib import Path

from bench import figures, sample_runs
from core.backbone.packaged import SMOLLM2
from core.data import DataSpec
from core.runs import Run
from core.train import TrainConfig

LENGTHS = (128, 256, 512)
CUTS = sample_runs.RECORDS_DIR / "smollm2-length.jsonl"  # each corpus's share of training texts cut at each length
FEATURES_LR = {"method": "features-lr", "frozen": True, "backbone": SMOLLM2, "features": "both",
               "unlabeled_limit": None}


def config_of(spec: DataSpec, max_len: int, per_class: int, seed: int, precision: str) -> TrainConfig:
    return TrainConfig.of(data=spec, fraction=None, per_class=per_class, seed=seed, max_len=max_len,
                       tags=("smollm2-length",), precision=precision, encoder_engine=sample_runs.BENCH_ENGINE,
                       **FEATURES_LR)


def is_study_run(run: Run) -> bool:
    """A finished run of this bench's settings at any length, amount and seed (the regime study's 128 included)."""
    c = run.config
    return (run.metrics is not None and c.method == "features-lr" and c.frozen and c.backbone == SMOLLM2
            and c.features == "both" and c.per_class is not None)


def cut_shares(spec: DataSpec, lengths: tuple[int, ...], home: Path) -> dict[int, float]:
    """The share of the training texts each length cuts, by SmolLM2's tokenizer (a property of the data, kept in
    `CUTS` for the report, which reads records alone)."""
    from core.backbone import prepare_backbone
    from core.data import load_dataset
    from core.train.maxlen import train_lengths, truncated_share

    ds = load_dataset(spec, home)
    lengths_of = train_lengths(ds, prepare_backbone(SMOLLM2, home=home))
    return {n: truncated_share(lengths_of, n) for n in lengths}


def table(runs: list[Run], cut: dict[int, float] | None = None) -> str:
    """Per length: the share cut, accuracy [95% CI] at each amount, its difference with 128 paired by seed (ahead
    / behind), and the encoding's seconds summed over the runs that encoded."""
    runs = [r for r in runs if is_study_run(r)]
    lengths = sorted({r.config.max_len for r in runs})
    amounts = sorted({r.config.per_class for r in runs})
    if not runs:
        return ""
    # one run a seed, as recorded last
    latest = {(r.config.max_len, r.config.per_class, r.config.seed): r for r in runs}
    by = {key: r.metrics["test"]["accuracy"] for key, r in latest.items()}
    head = ["max length", *(["training texts cut"] if cut else []),
            *[f"{n}/class: accuracy [95% CI]" for n in amounts], *[f"{n}/class: − 128 (ahead / behind)"
                                                                    for n in amounts], "encoding s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for length in lengths:
        cells = [str(length), *([f"{cut[length]:.0%}"] if cut else [])]
        for n in amounts:
            scores = [v for (m, k, _), v in by.items() if m == length and k == n]
            cells.append(figures.mean(scores))
        for n in amounts:
            seeds = sorted(s for (m, k, s) in by if m == length and k == n and (128, n, s) in by)
            if length == 128 or not seeds:
                cells.append("–")
                continue
            diffs = [by[(length, n, s)] - by[(128, n, s)] for s in seeds]
            cells.append(f"{figures.difference(diffs)} ({sum(d > 0 for d in diffs)} / {sum(d < 0 for d in diffs)})")
        encoded = [r.metrics.get("encode_seconds") or 0.0 for (m, _, _), r in latest.items() if m == length]
        cells.append(f"{sum(encoded):,.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = sample_runs.sample_parser(__doc__, sample_runs.DEFAULT_HOME)
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    args = parser.parse_args()
    if (opened := sample_runs.open_home(args)) is None:  # the corpus is not there, as its spec has said
        return 2
    spec, registry = opened
    # a length's runs together: its store encodes once
    runs = sample_runs.run_each(registry, args, [config_of(spec, length, n, seed, args.precision)
                                                 for length in args.lengths for n in args.per_class
                                                 for seed in args.seeds],
                                lambda c: f"{c.max_len} tokens {c.per_class}/class seed {c.seed}")
    cut = cut_shares(spec, tuple(args.lengths), Path(args.home))
    sample_runs.keep_for_corpus(CUTS, {"corpus": sample_runs.corpus_of(args).name,
                                       "cut": {str(n): round(v, 4) for n, v in cut.items()}})
    print(table(runs, cut))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
