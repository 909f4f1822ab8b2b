"""Training SmolLM2's top layers on stored states (issue 94) from the records: its sweep on L2R dev (K, learning rate,
attention dropout), the study on L2R test and the M4 sample, and the speed of a top-K run against an all-layer one."""

from __future__ import annotations

import statistics

from bench import figures
from bench.sample_runs import RECORDS_DIR, recorded
from core.backbone.packaged import SMOLLM2

SWEPT = ("train_layers", "lr", "attention_dropout", "steps")


def sweep_section(runs: list) -> str:
    """bench/studies/defaults.py's SmolLM2 sweeps on L2R dev: a row per method and setting (K, learning rate, attention
    dropout, steps), accuracy over seeds, paired by seed against the same method training every layer at the studio's
    defaults, and the wall seconds a run took (its states stored or read, training, its test split)."""
    from core.compare.seeds import mean_ci, paired
    from core.train import TrainConfig, method_for

    found: dict[tuple, dict[int, tuple[float, float]]] = {}
    planned: dict[tuple, str] = {}  # a run left to its method's budget: the steps that budget planned (its record)
    for r in runs:
        c = r.config
        if r.status != "done" or c.backbone != SMOLLM2 or c.frozen or "defaults" not in c.tags \
                or c.method not in ("finetune", "lora") or c.epochs:
            continue
        key = (c.method, c.per_class, *(getattr(c, k) for k in SWEPT))
        found.setdefault(key, {})[c.seed] = (r.metrics["test"]["accuracy"], r.metrics.get("seconds") or 0.0)
        if c.steps is None and r.metrics.get("budget_steps"):
            planned[key] = f"{r.metrics['budget_steps']}, the method's"
    if not found:
        return ""
    lines = ["| method | labeled | top layers trained (K) | learning rate | attention dropout | steps | "
             "accuracy [95% CI] | − every layer at the defaults [95% CI] | ahead / behind | s a run |",
             "|---|---|---:|---:|---:|---:|---|---|---|---:|"]
    for key in sorted(found, key=lambda k: (k[0], k[1], k[2] == 0, k[2], k[3], str(k[4]), k[5] or 0)):
        method, per_class, k, lr, dropout, steps = key
        base = method_for(TrainConfig(method=method)).settle(TrainConfig(method=method, backbone=SMOLLM2,
                                                                         train_layers=0))
        reference = found.get((method, per_class, 0, base.lr, base.attention_dropout, None), {})
        mine = found[key]
        p = paired("a", "b", "accuracy", {s: a for s, (a, _) in mine.items()},
                   {s: a for s, (a, _) in reference.items()})
        if mine is reference:
            versus = "(the reference) | –"
        else:
            versus = f"{figures.difference(p.difference)} | {p.wins} / {p.losses}" if p.seeds else "– | –"
        rate = "its own (0)" if dropout is None else f"{dropout:g}"
        budget = steps or planned.get(key, "the method's")
        lines.append(f"| {'fine-tuning' if method == 'finetune' else 'LoRA'} | {per_class}/class | "
                     f"{'all (20)' if not k else k} | {lr:g} | {rate} | {budget} | "
                     f"{figures.mean(mean_ci([a for a, _ in mine.values()]))} | {versus} | "
                     f"{statistics.mean(s for _, s in mine.values()):,.0f} |")
    return "\n".join(lines)


def study_section(runs_of: dict[str, list]) -> str:
    """bench/studies/smollm2_trained.py's tables: every method on L2R test and the M4 sample, and the paired rows."""
    import pandas as pd

    from bench.studies import smollm2_trained as study

    frame = pd.concat([f for corpus in ("l2r", "m4-sample") if not (f := study.frame_of(runs_of.get(corpus, []))).empty]
                      or [pd.DataFrame()])
    if frame.empty:
        return ""
    return study.report(frame)


def speed_section() -> str:
    """bench/speed/top_layers.py's latest records: steps and the store, and whole runs, top K against every layer."""
    entries = [e for e in recorded(RECORDS_DIR / "speed.jsonl") if e["bench"] == "top-layers"]
    stepped = [e for e in entries if "steps" in e["summary"]]
    ran = [e for e in entries if "runs" in e["summary"]]
    out = []
    if stepped:
        latest = stepped[-1]
        s = latest["summary"]
        lines = [f"**Training the top layers on stored states: a step** (`python -m bench.speed.top_layers`, "
                 f"{s['backbone']}, {s['texts']} L2R texts at {s['max_len']} tokens, one epoch of fine-tuning steps "
                 f"at batch 16, best of the repeats; {latest['machine']})", "",
                 "| top layers trained | steps, texts/s | over every layer's step | storing, texts/s | "
                 "a text's states | reading a batch back, against computing it |", "|---|---:|---:|---:|---:|---:|"]
        for k, row in s["steps"].items():
            if k == "0":
                lines.append(f"| every layer | {row['train_texts_per_s']:.2f} | 1 | – | – | – |")
                continue
            lines.append(f"| {k} | {row['train_texts_per_s']:.2f} | {row['step_over_all_layers']:.2f}x | "
                         f"{row['store_texts_per_s']:.1f} | {row['store_bytes_per_text'] / 2**20:.2f} MiB | "
                         f"{row['read_over_compute']:.3f} |")
        out.append("\n".join(lines))
    if ran:
        latest = ran[-1]
        runs = latest["summary"]["runs"]
        lines = [f"**A whole run with its test split** (L2R dev at 20 labels a class, 1,242 test texts, fine-tuning; "
                 f"{latest['machine']})", "",
                 "| run | wall seconds | test accuracy | gradient checkpointing | every layer's over it |",
                 "|---|---:|---:|---|---:|"]
        for name, row in runs.items():
            if isinstance(row, dict) and "seconds" in row:
                ratio = runs["every_over_top_k"].get(name)
                lines.append(f"| {name} | {row['seconds']:,.0f} | {row['accuracy']:.3f} | "
                             f"{ {True: 'on', False: 'off'}.get(row.get('checkpointing'), 'not recorded')} | "
                             + (f"{ratio:.2f}x |" if ratio else "1 |"))
        lines.append(f"\nThe store held {runs['store_bytes'] / 2**20:,.0f} MiB after the two top-K runs.")
        out.append("\n".join(lines))
    return "\n\n".join(out)
