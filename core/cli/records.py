"""The commands that read and manage the registry (`runs`, `compare`, `cancel`): they import no torch, so they
answer in one to three seconds."""

from __future__ import annotations

import argparse
import json
import sys

from core import compare
from core.runs import ACTIVE, Registry, RegistryError, RunError, cancel_all, pump
from core.runs.queue import concurrency_problem


def opened(args: argparse.Namespace) -> Registry:
    """The registry, its queue pumped where it can be: with the disk full the runs are still listed, and a note
    on stderr says why nothing was started; the rows that cannot be read are named there too."""
    registry = Registry(args.home)
    try:
        pump(registry)
    except RegistryError as e:
        print(f"note: the queue was not served: {e}", file=sys.stderr)
    if problem := concurrency_problem(registry):
        print(f"warning: {problem}", file=sys.stderr)
    for run_id, reason in registry.unreadable():
        print(f"warning: {reason}; it is left out (run {run_id}'s folder is untouched)", file=sys.stderr)
    return registry


def cmd_runs(args: argparse.Namespace) -> int:
    registry = opened(args)
    runs = registry.list()
    names = compare.distinct_names(runs)  # runs alike but for a setting outside their name say which
    rows = [r.summary | {"name": names[r.id]} for r in runs]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no runs yet: start one with `python -m core train ...`")
        return 0
    width = max(len(r["name"]) for r in rows)
    print(f"{'run id':<22}  {'status':<11} {'run':<{width}} {'accuracy':>8} {'macro-F1':>8} {'progress':>13}  "
          "labels read")
    for r in rows:
        done = r["accuracy"] is not None
        scores = f"{r['accuracy']:>8.3f} {r['macro_f1']:>8.3f}" if done else f"{'':>8} {'':>8}"
        progress = f"{r['phase'] or ''} {r['progress']:.0%}"  # each phase counts from 0: encoding, then training
        print(f"{r['run_id']:<22}  {r['status']:<11} {r['name']:<{width}} {scores} {progress:>13}  {r['labels']}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Groups over seeds with 95% intervals, paired tests between groups, and a verdict per amount."""
    registry = opened(args)
    runs = [r for r in registry.list() if not args.tag or set(args.tag) & set(r.config.tags)]
    summary = compare.summarize(compare.runs_frame(runs), args.metric, compare.METRICS)
    if args.json:
        print(json.dumps(summary.to_json(), indent=2))
        return 0
    if summary.groups.empty:
        print("no finished runs to compare" + (f" tagged {', '.join(args.tag)}" if args.tag else ""))
        return 0
    m = args.metric
    print(f"{m}: mean and 95% CI over seeds")
    width = max(map(len, summary.groups["group"]))  # n and the mean in columns after the longest name
    for g in summary.groups.itertuples():
        low, high = getattr(g, f"{m}_low"), getattr(g, f"{m}_high")
        ci = f"[{low:.3f}, {high:.3f}]" if low is not None and low == low else "(no interval)"
        print(f"  {g.group:<{width}} n={g.n:<3} {getattr(g, f'{m}_mean'):.3f} {ci}")
    print(f"\npaired over shared seeds ({m})")
    for p in summary.pairs[m]:
        print("  " + "\n    ".join(p.explain()))
    print("\nverdicts")
    for v in summary.verdicts.to_dict("records"):
        print("  " + compare.verdict_line(v))
    if summary.ablations:
        print(f"\nwhat GAN-BERT's adversarial part adds ({m}, GAN-BERT − its control with adversarial off)")
    for p in summary.ablations:
        print(f"  {compare.adds_line(p)}")
    if summary.adapted:
        print(f"\nwhat adapting the backbone adds ({m}, a method on the adapted backbone − on its base)")
    for p in summary.adapted:
        print(f"  {compare.adds_line(p, 'adapting')}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    registry = Registry(args.home)
    ended = [f"run {r.id} is already {r.status}" for r in map(registry.get, args.run_ids) if r.status not in ACTIVE]
    if ended:
        raise RunError("; ".join(ended) + "; nothing was cancelled")
    for run_id, status in cancel_all(registry, args.run_ids).items():
        print(json.dumps({"run_id": run_id, "status": status}))
    return 0
