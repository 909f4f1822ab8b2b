"""Where each method's defaults come from: a sweep of learning rate, budget and batch on the real M4 sample
(`../shared/data/m4-sample`, tested on its 65 dev texts) at 5 and 20 labels per class over 5 seeds, in frozen
mode and with the encoder training where the method has both. A default must do well at both amounts;
GAN-BERT's must also leave its discriminator healthy (mean fake probability on real validation texts
below 0.5 at the end of every run).

Runs go through a registry (default home /tmp/gan-bert-studio-defaults) and are reused when the same
config finished before, so the sweep resumes where it stopped. Trained-encoder runs cost minutes each on a
CPU (`--mode full`); the frozen sweep takes minutes in all.

Run: .venv/bin/python bench/defaults.py [--mode frozen|full|both] [--seeds 0 1 2 3 4] [--per-class 5 20]
     [--only NAME ...] [--points N] [--report-only]
Prints one table row per setting (accuracy mean [95% CI] per amount, their average, the largest final fake
probability over GAN-BERT's runs, CPU seconds per run), marks the best setting and the current default, and
ends with one JSON line.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.environment import prepare  # noqa: E402

prepare()  # before torch loads: offline, reproducible sums

from bench.sample_runs import open_home, run_once, sample_parser  # noqa: E402
from core.compare.seeds import mean_ci, metric_range  # noqa: E402
from core.train import TrainConfig  # noqa: E402

# name → (mode, fixed settings, the settings swept, one dict per point). Each sweep also runs the studio's
# own defaults (the row marked "(default)"; an explicit point that resolves to the same config shares its runs).
SWEEPS: dict[str, tuple[str, dict, list[dict]]] = {
    "features-lr": ("frozen", {"method": "features-lr", "frozen": True},
                    [{"lr_c": c} for c in (1.0, 0.1, 10.0, 100.0)]),
    "tfidf-lr": ("frozen", {"method": "tfidf-lr"}, [{"lr_c": c} for c in (1.0, 10.0, 100.0)]),
    "frozen head": ("frozen", {"method": "finetune", "frozen": True},
                    [{"lr": lr, "steps": s, "batch_size": 64} for lr in (1e-3, 3e-4, 3e-3) for s in (300, 100)]),
    "GAN-BERT G1 frozen": ("frozen", {"method": "ganbert", "generator": "noise", "frozen": True},
                           [{"lr": lr, "epochs": e, "batch_size": b} for lr, e, b in
                            ((1e-3, 10, 64), (3e-4, 10, 64), (1e-4, 10, 64), (1e-3, 3, 64), (3e-4, 30, 64),
                             (1e-3, 30, 64), (1e-4, 30, 64), (1e-3, 10, 256))]),
    "GAN-BERT G2 frozen": ("frozen", {"method": "ganbert", "generator": "bow", "frozen": True},
                           [{"lr": lr, "epochs": e, "batch_size": 64}
                            for lr, e in ((1e-3, 10), (3e-4, 30), (1e-4, 30))]),
    "adapters": ("full", {"method": "adapter"},
                 [{"lr": lr} for lr in (1e-3, 1e-4, 3e-4, 3e-3)]),
    "fine-tuning": ("full", {"method": "finetune"},
                    [{"lr": lr} for lr in (2e-5, 5e-5, 1e-4)]),
    "GAN-BERT G1 full": ("full", {"method": "ganbert", "generator": "noise"},
                         # the default (5e-5, 10) ends with the supervised loss near 0.75: larger budgets first
                         [{"lr": lr, "epochs": e} for lr, e in ((1e-4, 10), (2e-4, 10), (5e-5, 30), (2e-5, 10))]),
}


def cell(values: list[float]) -> str:
    ci = mean_ci(values)
    if not ci.n:
        return "not run"
    bottom, top = metric_range("accuracy")  # two seeds' t interval can run past it
    interval = f" [{max(ci.low, bottom):.3f}, {min(ci.high, top):.3f}]" if ci.low is not None else ""
    return f"{ci.mean:.3f}{interval} (n={ci.n})"


def main() -> int:
    parser = sample_parser(__doc__, "/tmp/gan-bert-studio-defaults")
    parser.add_argument("--mode", choices=("frozen", "full", "both"), default="frozen")
    parser.add_argument("--only", nargs="+", choices=list(SWEEPS), help="sweep only these")
    parser.add_argument("--points", type=int, help="the default and only the first N points of each sweep "
                        "(points are listed most telling first, for trained-encoder sweeps cut short)")
    args = parser.parse_args()
    opened = open_home(args)
    if opened is None:
        return 2
    spec, registry = opened
    names = [n for n in args.only or SWEEPS if args.mode in ("both", SWEEPS[n][0])]
    table: dict[str, list[dict]] = {}
    for name in names:
        mode, fixed, points = SWEEPS[name]
        for point in [{}, *points[:args.points]]:
            row = {"point": point, "acc": {}, "fake": [], "cpu": []}
            for per_class in args.per_class:
                for seed in args.seeds:
                    config = TrainConfig(data=spec, fraction=None, per_class=per_class, seed=seed,
                                         tags=("defaults",), **fixed, **point)
                    run = run_once(registry, config, train=not args.report_only)
                    if run is None:
                        continue
                    metrics = run.metrics or {}
                    if run.status != "done":
                        print(f"{name} {point} {per_class}/class seed {seed}: {run.status} {run.message}", flush=True)
                        continue
                    row["acc"].setdefault(per_class, []).append(metrics["test"]["accuracy"])
                    row["cpu"].append(metrics.get("cpu_seconds") or metrics["seconds"])
                    if metrics.get("val_fake_prob") is not None:
                        row["fake"].append(metrics["val_fake_prob"])
                    print(f"{name} {point} {per_class}/class seed {seed}: acc {metrics['test']['accuracy']:.3f}",
                          flush=True)
            table.setdefault(name, []).append(row)

    print("\n| method | mode | setting | " + " | ".join(f"{n}/class accuracy [95% CI]" for n in args.per_class)
          + " | average | max fake prob | CPU s/run |")
    print("|---|---|---|" + "---:|" * (len(args.per_class) + 3))
    summary = {}
    for name, rows in table.items():
        healthy = [r for r in rows if all(f < 0.5 for f in r["fake"])]
        scored = [r for r in healthy if all(r["acc"].get(n) for n in args.per_class)]
        best = max(scored, key=lambda r: statistics.mean(statistics.mean(r["acc"][n]) for n in args.per_class),
                   default=None)
        for r in rows:
            marks = ("**best** " if r is best else "") + ("(default)" if r["point"] == {} else "")
            average = statistics.mean(statistics.mean(r["acc"][n]) for n in args.per_class) \
                if all(r["acc"].get(n) for n in args.per_class) else float("nan")
            setting = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in r["point"].items()) \
                or "the studio's defaults"
            fake = f"{max(r['fake']):.2f}" if r["fake"] else "–"
            cpu = f"{statistics.mean(r['cpu']):.0f}" if r["cpu"] else "–"
            print(f"| {name} | {SWEEPS[name][0]} | {setting} {marks} | "
                  + " | ".join(cell(r["acc"].get(n, [])) for n in args.per_class)
                  + f" | {average:.3f} | {fake} | {cpu} |")
        summary[name] = {"best": best["point"] if best else None,
                         "rows": [{"point": r["point"],
                                   "accuracy": {str(n): r["acc"].get(n, []) for n in args.per_class},
                                   "max_fake_prob": max(r["fake"]) if r["fake"] else None} for r in rows]}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
