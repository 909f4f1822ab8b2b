"""The README's results table: every method on the real M4 sample at 5 and 20 labels per class, 5 seeds,
default settings (frozen MiniLM features where the method allows it, as the dashboard does on a CPU),
tested on the sample's 65 dev texts. Runs go through the registry and are summarized by `core.compare`,
exactly as Compare and `python -m core compare` show them: n, mean and 95% CI per group, wall time per
run, and the verdict per labeled amount. SetFit's published head (the body's sentence embedding) is
also fitted on each tuned body, so the pooling question is answered on the same bodies.

Run: .venv/bin/python bench/results.py [--home DIR] [--seeds 0 1 2 3 4] [--per-class 5 20] [--methods ...]
The studio home is kept (default /tmp/gan-bert-studio-results): `STUDIO_HOME=DIR python -m core compare`;
`--report-only` prints the README's markdown table from the runs already there.
Ends with one JSON line: the comparison summary and the published-head accuracies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from core import compare  # noqa: E402
from core.data import DataSpec  # noqa: E402
from core.runs import Registry, execute_run  # noqa: E402
from core.train import TrainConfig, load_data, split_pool, validate  # noqa: E402
from core.train.methods.contrastive import SetFitPredictor, fit_head  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "m4-sample"
# Cheap first, so a cut-short bench still has every reference.
METHODS = {"tfidf-lr": {}, "features-lr": {"frozen": True}, "finetune": {"frozen": True},
           "ganbert-noise": {"method": "ganbert", "generator": "noise", "frozen": True},
           "ganbert-bow": {"method": "ganbert", "generator": "bow", "frozen": True},
           "adapter": {}, "setfit": {}}


def published_head(registry: Registry, run_id: str) -> float:
    """Test accuracy of SetFit's published head (LR on the body's sentence embedding) on the run's own
    tuned body and labeled rows."""
    body = registry.folder(run_id).load_model().body
    config = registry.get(run_id).config.with_(setfit_features="sentence")
    ds = load_data(config)
    data = split_pool(config, ds)
    probs, _ = SetFitPredictor(config, data.labels, body, fit_head(body, config, data)).predict(data.texts("test"))
    return float(np.mean(data.classes[probs.argmax(1)] == ds.test["label"].to_numpy()))


def markdown(frame, summary) -> str:
    """One row per series, one column per labeled amount: accuracy mean [95% CI], macro-F1, seconds per run."""
    groups = summary.groups.merge(frame.groupby("settings")["seconds"].mean().rename("s"), on="settings")
    amounts = list(dict.fromkeys(groups.sort_values("labeled")["amount"]))
    lines = ["| method | " + " | ".join(f"{a}: accuracy [95% CI], macro-F1, s/run" for a in amounts) + " |",
             "|---|" + "---:|" * len(amounts)]
    for series, rows in groups.groupby("series", sort=False):
        cells = []
        for amount in amounts:
            row = rows[rows["amount"] == amount]
            if row.empty:
                cells.append("not measured")
                continue
            g = row.iloc[0]
            ci = f" [{g.accuracy_low:.3f}, {g.accuracy_high:.3f}]" if g.accuracy_low is not None else ""
            cells.append(f"{g.accuracy_mean:.3f}{ci} (n={g.n}), {g.macro_f1_mean:.3f}, {g.s:.0f}")
        lines.append(f"| {series} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", default="/tmp/gan-bert-studio-results")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--per-class", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--report-only", action="store_true", help="print the table from the runs in --home")
    args = parser.parse_args()
    if not (SAMPLE / "train.jsonl").exists():
        print(f"the real sample is not at {SAMPLE}", file=sys.stderr)
        return 2
    os.environ["STUDIO_HOME"] = args.home
    registry = Registry()
    data = DataSpec(train=str(SAMPLE / "train.jsonl"), test=str(SAMPLE / "dev.jsonl"))
    published: dict[int, dict[int, float]] = {}
    for per_class in [] if args.report_only else args.per_class:
        for name in args.methods:
            settings = {"method": name, **METHODS[name]}
            for seed in args.seeds:
                config = validate(TrainConfig(data=data, fraction=None, per_class=per_class, seed=seed,
                                              tags=("results",), **settings))
                run_id = registry.create(config)
                registry.claim(run_id)
                status = execute_run(registry, run_id)
                run = registry.get(run_id)
                line = f"{name:<14} {per_class:>2}/class seed {seed}: {status}"
                if status == "done":
                    line += f" acc {run.metrics['test']['accuracy']:.3f} in {run.metrics['seconds']:.0f} s"
                    if name == "setfit":
                        published.setdefault(per_class, {})[seed] = published_head(registry, run_id)
                        line += f" (published head {published[per_class][seed]:.3f})"
                print(line, flush=True)
    frame = compare.runs_frame([r for r in registry.list() if "results" in r.config.tags])
    summary = compare.summarize(frame, "accuracy", compare.METRICS)
    seconds = frame.groupby("settings")["seconds"].mean()
    for g in summary.groups.itertuples():
        ci = f"[{g.accuracy_low:.3f}, {g.accuracy_high:.3f}]" if g.accuracy_low is not None else ""
        print(f"{g.group:<50} n={g.n} acc {g.accuracy_mean:.3f} {ci} "
              f"macro-F1 {g.macro_f1_mean:.3f} {seconds[g.settings]:.0f} s/run")
    print(markdown(frame, summary))
    for per_class, scores in published.items():
        ci = compare.mean_ci(list(scores.values()))
        print(f"SetFit, published head on the same bodies @ {per_class}/class n={ci.n} acc {ci.mean:.3f} "
              f"[{ci.low}, {ci.high}]")
    for v in summary.verdicts.to_dict("records"):
        print(f"verdict {v['amount']}: {v['best']} over {v['runner_up']} by {v['difference']:+.3f} "
              f"[{v['low']}, {v['high']}], {v['test']} p={v['p_value']}, CI excludes 0: {v['ci_excludes_zero']}")
    print(json.dumps({**summary.to_json(), "published_head": {str(k): statistics.mean(v.values())
                                                              for k, v in published.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
