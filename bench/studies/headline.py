"""The README's results table: every method on the real M4 sample at 5 and 20 labels per class, 5 seeds,
default settings, tested on the sample's 65 dev texts: on frozen MiniLM features (as the dashboard does on
a CPU), and with the encoder training (full fine-tuning, adapters, GAN-BERT G1 and G2 at the studio's
defaults and the `tf` preset, and GAN-BERT's control without the adversarial part). Runs go through the
registry and are summarized by `core.compare`, exactly as Compare and `python -m core compare` show them:
n, mean and 95% CI per group, CPU time per run, the verdict per labeled amount and what GAN-BERT's
adversarial part adds. SetFit's published head (the body's sentence embedding) is also fitted on each tuned
body, so the pooling question is answered on the same bodies.

A finished run of the same config in the studio home, or in the committed records (bench/records/), is
reused, so the bench resumes where it stopped, in this session or an earlier one: trained-encoder runs take
minutes each on a CPU.

Run: .venv/bin/python -m bench.studies.headline [--home DIR] [--seeds 0 1 2 3 4] [--per-class 5 20] [--methods ...]
The studio home is kept (default ~/.cache/gan-bert-studio/bench, shared with bench/studies/defaults.py):
`STUDIO_HOME=DIR python -m core compare`; `--report-only` prints the README's markdown table from the runs
already there (and restored from the records).
Ends with one JSON line: the comparison summary and the published-head accuracies.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import replace

import numpy as np

from bench import figures
from bench.sample_runs import BENCH_ENGINE, DEFAULT_HOME, corpus_of, open_home, run_once, sample_parser
from core import compare
from core.runs import Registry, Status
from core.train import TrainConfig, load_data, resolve, split_pool
from core.train.methods.setfit import SetFitPredictor, fit_head

# Cheap first, so a cut-short bench still has every reference.
METHODS = {"tfidf-lr": {}, "features-lr": {"frozen": True}, "finetune": {"frozen": True},
           "ganbert-noise": {"method": "ganbert", "generator": "noise", "frozen": True},
           "ganbert-bow": {"method": "ganbert", "generator": "bow", "frozen": True},
           "ganbert-control": {"method": "ganbert", "adversarial": False, "frozen": True},
           "adapter": {},
           "finetune-full": {"method": "finetune"},
           "ganbert-noise-full": {"method": "ganbert", "generator": "noise"},
           "ganbert-control-full": {"method": "ganbert", "adversarial": False},
           "ganbert-bow-full": {"method": "ganbert", "generator": "bow"},
           "ganbert-noise-tf": {"method": "ganbert", "generator": "noise", "gan_preset": "tf"},
           "ganbert-bow-tf": {"method": "ganbert", "generator": "bow", "gan_preset": "tf"},
           "setfit": {}}


def published_head(registry: Registry, run_id: str) -> float:
    """Test accuracy of SetFit's published head (LR on the body's sentence embedding) on the run's own
    tuned body and labeled rows."""
    body = registry.folder(run_id).load_model(registry.home).body
    config = registry.get(run_id).config.with_(setfit_features="sentence")
    ds = load_data(config, registry.home)
    data = split_pool(config, ds)
    probs, _ = SetFitPredictor(config, data.labels, body, fit_head(body, config, data)).predict(data.texts("test"))
    return float(np.mean(data.classes[probs.argmax(1)] == ds.test["label"].to_numpy()))


def markdown(frame, summary) -> str:
    """One row per series, one column per labeled amount: accuracy mean [95% CI], macro-F1, seconds per run."""
    groups = summary.groups.merge(frame.groupby("settings")["cpu_seconds"].mean().rename("s"), on="settings")
    amounts = list(dict.fromkeys(groups.sort_values("labeled")["amount"]))
    lines = ["| method | " + " | ".join(f"{a}: accuracy [95% CI], macro-F1, CPU s/run" for a in amounts) + " |",
             "|---|" + "---:|" * len(amounts)]
    for series, rows in groups.groupby("series", sort=False):
        cells = []
        for amount in amounts:
            row = rows[rows["amount"] == amount]
            if row.empty:
                cells.append("not measured")
                continue
            g = row.iloc[0]
            cells.append(f"{figures.mean(figures.of_group(g))}, {g.macro_f1_mean:.3f}, {g.s:.0f}")
        lines.append(f"| {series} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = sample_parser(__doc__, DEFAULT_HOME)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    args = parser.parse_args()
    opened = open_home(args)
    if opened is None:
        return 2
    data, registry = opened
    published: dict[int, dict[int, float]] = {}
    chosen, ran = [], Counter()
    for per_class in args.per_class:
        for name in args.methods:
            settings = {"method": name, **METHODS[name]}
            for seed in args.seeds:
                config = TrainConfig.of(data=data, fraction=None, per_class=per_class, seed=seed, tags=("results",),
                                     precision=args.precision, encoder_engine=BENCH_ENGINE, **settings)
                run = run_once(registry, config, train=not args.report_only, any_precision=args.any_precision,
                               corpus=corpus_of(args))
                if run is None:
                    continue
                ran[run.config.precision] += 1
                if args.any_precision:  # one group per method, whichever precision each run ran at
                    run = replace(run, config=run.config.with_(precision=resolve(config, registry.home).precision))
                chosen.append(run)
                line = f"{name:<20} {per_class:>2}/class seed {seed}: {run.status}"
                if run.status == Status.DONE:
                    line += (f" acc {run.metrics['test']['accuracy']:.3f} in {run.metrics['seconds']:.0f} s "
                             f"({run.metrics.get('cpu_seconds', 0):.0f} CPU s)")
                    if name == "setfit" and registry.folder(run.id).has_checkpoint():  # not a restored record
                        published.setdefault(per_class, {})[seed] = published_head(registry, run.id)
                        line += f" (published head {published[per_class][seed]:.3f})"
                print(line, flush=True)
    frame = compare.runs_frame(chosen)
    frame["cpu_seconds"] = [(r.metrics or {}).get("cpu_seconds", (r.metrics or {}).get("seconds")) for r in chosen]
    summary = compare.summarize(frame, "accuracy", compare.METRICS)
    seconds = frame.groupby("settings")["cpu_seconds"].mean()
    for g in summary.groups.itertuples():
        print(f"{g.group:<50} acc {figures.mean(figures.of_group(g))} "
              f"macro-F1 {g.macro_f1_mean:.3f} {seconds[g.settings]:.0f} CPU s/run")
    print(markdown(frame, summary))
    print("runs by precision: " + ", ".join(f"{n} at {p}" for p, n in sorted(ran.items())))
    for per_class, scores in published.items():
        print(f"SetFit, published head on the same bodies @ {per_class}/class acc {figures.mean(scores.values())}")
    for v in summary.verdicts.to_dict("records"):
        adds = v["adversarial_adds"]  # NaN in the frame where no GAN-BERT and its control share an amount
        added = f"; the adversarial part adds: {adds}" if isinstance(adds, str) else ""
        print(f"verdict {compare.verdict_line(v)}{added}")
    print(json.dumps({**summary.to_json(), "published_head": {str(k): statistics.mean(v.values())
                                                              for k, v in published.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
