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
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.environment import prepare  # noqa: E402

prepare()  # before torch loads: offline, reproducible sums

import pandas as pd  # noqa: E402

from bench.encode_causal import batches_table, int8_table  # noqa: E402
from bench.encode_causal import table as causal_table  # noqa: E402
from bench.sample_runs import CORPORA, RECORDS_DIR, on_gpu, recorded, restore  # noqa: E402
from core import compare  # noqa: E402
from core.backbone import attention_dropout  # noqa: E402
from core.backbone.locate import ADAPTED_DIR, ADAPTED_RECORD  # noqa: E402
from core.runs import Registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results.md"
CONCLUSIONS = Path(__file__).resolve().parent / "conclusions.md"
TITLES = {"m4-sample": "The M4 sample: 128 texts to train on, 65 dev texts to test on",
          "l2r-dev": "L2R, tested on its dev split (where settings are chosen)",
          "l2r": "L2R, tested on its test split (the regime study)"}


def restored(name: str, registry: Registry, gpu: bool = False) -> list:
    """A corpus's recorded runs, restored into `registry`, in the order they were recorded: those that ran on a
    CPU, or (`gpu`) those of the GPU check (`<corpus>-gpu.jsonl`) and any other that ran on a GPU."""
    corpus = CORPORA[name]
    files = [corpus.records.with_name(f"{corpus.records.stem}-gpu.jsonl"), corpus.records] if gpu else [corpus.records]
    return [restore(registry, entry, corpus.folder) for f in files for entry in recorded(f) if on_gpu(entry) == gpu]


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


HEADLINE = {"TF-IDF + LR": {"method": "tfidf-lr"}, "Frozen features + LR": {"method": "features-lr", "frozen": True},
            "Trained head on frozen features": {"method": "finetune", "frozen": True},
            "GAN-BERT G1 (noise) on frozen features": {"method": "ganbert", "generator": "noise", "frozen": True},
            "GAN-BERT G2 (bag of words) on frozen features": {"method": "ganbert", "generator": "bow", "frozen": True},
            "GAN-BERT's control (adversarial off)": {"method": "ganbert", "adversarial": False, "frozen": True}}
COLUMNS = (("m4-sample", 5), ("m4-sample", 20), ("l2r", 5), ("l2r", 20), ("l2r", 100))
GAME = ("GAN-BERT G1 (noise) on frozen features", "GAN-BERT's control (adversarial off)")


def headline(runs_of: dict[str, list]) -> str:
    """The README's table: each method at its defaults (the whole unlabeled pool for GAN-BERT) on each corpus and
    labeled amount, accuracy mean [95% CI] over seeds, and what GAN-BERT G1's adversarial part adds there."""
    from core.compare.seeds import mean_ci, paired

    def scores(name: str, per_class: int, settings: dict) -> dict[int, float]:
        return {r.config.seed: r.metrics["test"]["accuracy"] for r in runs_of.get(name, [])
                if at_defaults(r.config, per_class, settings)}

    header = "| method | " + " | ".join(f"{'M4 sample' if n == 'm4-sample' else 'L2R'} {k}/class" for n, k in COLUMNS)
    lines = [header + " |", "|---|" + "---:|" * len(COLUMNS)]
    found = {m: [scores(n, k, s) for n, k in COLUMNS] for m, s in HEADLINE.items()}
    for method, cells in found.items():
        shown = []
        for got in cells:
            ci = mean_ci(list(got.values()))
            shown.append("–" if not ci.n else f"{ci.mean:.3f}" + (f" [{ci.low:.3f}, {ci.high:.3f}]" if ci.low is not None
                                                                  else ""))
        lines.append(f"| {method} | " + " | ".join(shown) + " |")
    diffs = []
    for game, control in zip(*(found[m] for m in GAME)):
        p = paired("G1", "control", "accuracy", game, control)
        d = p.difference
        diffs.append("–" if not p.seeds else f"{d.mean:+.3f}" + (f" [{d.low:+.3f}, {d.high:+.3f}]" if d.low is not None
                                                                 else ""))
    lines.append("| GAN-BERT G1 − its control (paired by seed) | " + " | ".join(diffs) + " |")
    return "\n".join(lines)


MACHINE = ("seed", "tags", "device", "max_len", "precision", "revision", "encoder_engine")  # or resolved from data


def at_defaults(config, per_class: int, settings: dict) -> bool:
    """Whether a recorded run is the method's defaults at `per_class` (the whole unlabeled pool, the validation
    rule, the bundled backbone, the default engine): told from the record alone, so the table is the same on every
    machine."""
    from core.train import TrainConfig, method_for
    from core.train.config import flat_settings

    if "encode" in config.tags or config.encoder_engine not in ("auto", "torch"):
        return False  # bench/encode.py's engines and precisions, each a comparison of its own
    asked = TrainConfig(data=config.data, cleaning=config.cleaning, fraction=None, per_class=per_class, **settings)
    expected = flat_settings(method_for(asked).settle(asked), MACHINE)
    return flat_settings(config, MACHINE) == expected


def with_headline(readme: str, table: str) -> str:
    """The README with its results block (between its two markers) replaced by `table`."""
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    head, rest = readme.split(start, 1)
    return f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"


def attention_section(runs_of: dict[str, list]) -> str:
    """bench/defaults.py's attention-dropout sweep: each trained-encoder method at 0 − at the backbone's own rate,
    paired by seed, on the runs alike in every other setting; with their CPU seconds. A run stored with none ran at
    the backbone's rate (MiniLM's 0.1), as every run did before 0 was the default."""
    from core.compare.seeds import mean_ci, paired
    from core.train.config import flat_settings

    lines = ["| corpus | method | labeled | the backbone's rate | 0 | 0 − the backbone's, accuracy [95% CI] | ahead / "
             "behind | p | CPU s/run (the backbone's → 0) |", "|---|---|---|---:|---:|---|---|---:|---|"]
    for corpus in ("m4-sample", "l2r-dev"):
        found: dict[str, dict[bool, dict[int, tuple[float, float]]]] = {}
        for r in runs_of.get(corpus, []):
            c = r.config
            if c.frozen or c.method not in ("finetune", "ganbert") or not c.adversarial or c.gan_preset != "studio" \
                    or "defaults" not in c.tags or c.attention_dropout not in (None, 0.0, attention_dropout(c.backbone)):
                continue
            key = json.dumps(flat_settings(c, ("attention_dropout", "seed", "tags")), sort_keys=True, default=str)
            found.setdefault(key, {}).setdefault(c.attention_dropout == 0.0, {})[c.seed] = (
                r.metrics["test"]["accuracy"], (r.metrics or {}).get("cpu_seconds") or 0.0)
        for key, by in found.items():
            if not (by.get(True) and by.get(False)):
                continue
            settings = json.loads(key)
            zero, shipped = by[True], by[False]
            p = paired("0", "backbone's", "accuracy", {s: a for s, (a, _) in zero.items()},
                       {s: a for s, (a, _) in shipped.items()})
            if not p.seeds:
                continue
            ci = f" [{p.difference.low:+.3f}, {p.difference.high:+.3f}]" if p.difference.low is not None else ""
            name = "fine-tuning" if settings["method"] == "finetune" else (
                "GAN-BERT G1" + ("" if settings.get("unlabeled_limit") is None else
                                 f", pool {settings['unlabeled_limit']:,}"))
            both = sorted(p.seeds)
            lines.append(f"| {corpus} | {name} | {settings['per_class']}/class | "
                         f"{mean_ci([shipped[s][0] for s in both]).mean:.3f} | {mean_ci([zero[s][0] for s in both]).mean:.3f} | "
                         f"{p.difference.mean:+.3f}{ci} (n={len(both)}) | {p.wins} / {p.losses} | {p.p_value:.3g} | "
                         f"{statistics.mean(shipped[s][1] for s in both):,.0f} → "
                         f"{statistics.mean(zero[s][1] for s in both):,.0f} |")
    if len(lines) == 2:
        return ""
    return ("**Attention dropout** (bench/defaults.py, the encoder training): accuracy at attention dropout 0 against "
            "the backbone's own rate (MiniLM's 0.1) on the same rows, paired by seed, and the CPU seconds a run took\n\n"
            + "\n".join(lines))


def budget_section(runs_of: dict[str, list]) -> str:
    """bench/defaults.py's trained-encoder budget (issue 60): GAN-BERT G1 and its control with the encoder
    training, at attention dropout 0 (the default), per corpus, amount, pool and step cap; G1 − control and G1 − G1
    at the default cap, each paired by seed; the steps a run took (where 30 epochs end before the cap, the cap
    changes nothing) and its CPU seconds."""
    from core.compare.seeds import mean_ci, paired
    from core.train.config import flat_settings
    from core.train.methods.presets import STUDIO, floored

    default_cap = STUDIO[False]["max_steps"]
    found: dict[str, dict[int, dict[bool, dict[int, tuple[float, float, int]]]]] = {}
    for corpus in ("m4-sample", "l2r-dev"):
        for r in runs_of.get(corpus, []):
            c = r.config
            if c.frozen or c.method != "ganbert" or c.gan_preset != "studio" or "defaults" not in c.tags \
                    or c.attention_dropout != 0.0 or (c.adversarial and c.generator != "noise"):
                continue
            key = json.dumps({"corpus": corpus, **flat_settings(c, ("max_steps", "seed", "tags", "adversarial",
                                                                      "generator"))}, sort_keys=True, default=str)
            found.setdefault(key, {}).setdefault(c.max_steps, {}).setdefault(c.adversarial, {})[c.seed] = (
                r.metrics["test"]["accuracy"], r.metrics.get("cpu_seconds") or 0.0, r.metrics.get("steps") or 0)
    lines = ["| corpus | labeled | pool | batches without labels | precision | step cap | steps taken | G1 | control | "
             "G1 − control [95% CI] | ahead / behind | G1 − G1 at the default cap [95% CI] | CPU s/run (G1, control) |",
             "|---|---|---|---|---|---:|---:|---|---|---|---|---|---|"]

    def acc(by: dict[int, tuple]) -> str:
        ci = mean_ci([a for a, _, _ in by.values()])
        if not ci.n:
            return "not run"
        interval = f" [{max(ci.low, 0.0):.3f}, {min(ci.high, 1.0):.3f}]" if ci.low is not None else ""  # 2 seeds' t
        return f"{ci.mean:.3f}{interval} (n={ci.n})"

    def difference(a: dict[int, tuple], b: dict[int, tuple]) -> tuple[str, str]:
        p = paired("a", "b", "accuracy", {s: v[0] for s, v in a.items()}, {s: v[0] for s, v in b.items()})
        if not p.seeds:
            return "–", "–"
        ci = f" [{p.difference.low:+.3f}, {p.difference.high:+.3f}]" if p.difference.low is not None else ""
        return f"{p.difference.mean:+.3f}{ci} (n={len(p.seeds)})", f"{p.wins} / {p.losses}"

    def cpu(by: dict[int, tuple]) -> str:
        return f"{statistics.mean(v[1] for v in by.values()):,.0f}" if by else "–"

    for key in sorted(found, key=lambda k: (json.loads(k)["corpus"], json.loads(k)["per_class"],
                                            str(json.loads(k)["unlabeled_limit"]), json.loads(k)["precision"],
                                            str(json.loads(k).get("batches_without_labels")))):
        settings, caps = json.loads(key), found[key]
        pool = "all" if settings["unlabeled_limit"] is None else f"{settings['unlabeled_limit']:,}"
        floor = settings.get("batches_without_labels")
        floor = f"at most {floor:.0%}" if floored(floor) else "the authors' copies alone"
        for cap in sorted(caps, key=lambda c: c or 0):
            game, control = caps[cap].get(True, {}), caps[cap].get(False, {})
            gain, record = difference(game, control)
            against = difference(game, caps.get(default_cap, {}).get(True, {}))[0] if cap != default_cap else "–"
            taken = [v[2] for v in (*game.values(), *control.values())]
            lines.append(f"| {settings['corpus']} | {settings['per_class']}/class | {pool} | {floor} | "
                         f"{settings['precision']} | {cap} | "
                         f"{statistics.mean(taken):.0f} | {acc(game)} | {acc(control)} | {gain} | {record} | "
                         f"{against} | {cpu(game)}, {cpu(control)} |")
    if len(lines) == 2:
        return ""
    floor = floor_table(found, difference)
    return ("**The trained-encoder budget** (bench/defaults.py, GAN-BERT's `studio` preset with the encoder "
            f"training: batch 16 at 5e-5, 30 epochs capped at {default_cap} steps by default, attention dropout 0): "
            "G1 and its control at each step cap on the same rows, paired by seed. *Batches without labels*: the "
            "floor on batches that hold no labeled row, which repeats the labeled rows beyond the authors' "
            "int(log2(1/share)) copies where a batch of 16 over a large pool would miss them (the default: at most "
            "5%); runs stored before it had the authors' copies alone\n\n" + "\n".join(lines)
            + ("\n\n**The floor on batches without labels** (bench/defaults.py, \"GAN-BERT G1 label floor\" and "
               "\"GAN-BERT control label floor\"): each with the floor − the same with the authors' copies alone, "
               "at one precision and step cap, paired by seed\n\n" + floor if floor else ""))


def floor_table(found: dict, difference: Callable[[dict, dict], tuple[str, str]]) -> str:
    """The budget sweep's runs with the floor against their twins with the authors' copies alone (the same corpus,
    amount, pool, precision and cap), G1 and the control apart; "" when no twin is recorded."""
    from core.train.methods.presets import floored

    twins: dict[tuple, dict[bool, dict]] = {}
    for key, caps in found.items():
        settings = json.loads(key)
        floor = settings.pop("batches_without_labels", None)
        for cap, by_game in caps.items():
            for game, by_seed in by_game.items():
                twins.setdefault((json.dumps(settings, sort_keys=True), cap, game), {})[floored(floor)] = by_seed
    lines = ["| corpus | labeled | pool | precision | step cap | method | with the floor | the authors' copies alone | "
             "floor − authors' [95% CI] | ahead / behind |", "|---|---|---|---|---:|---|---|---|---|---|"]
    for (key, cap, game), by_floor in sorted(twins.items(), key=lambda t: (t[0][0], t[0][1], not t[0][2])):
        if len(by_floor) < 2:
            continue
        settings = json.loads(key)
        pool = "all" if settings["unlabeled_limit"] is None else f"{settings['unlabeled_limit']:,}"
        gain, record = difference(by_floor[True], by_floor[False])
        means = [f"{statistics.mean(v[0] for v in by_floor[f].values()):.3f} (n={len(by_floor[f])})"
                 for f in (True, False)]
        lines.append(f"| {settings['corpus']} | {settings['per_class']}/class | {pool} | {settings['precision']} | "
                     f"{cap} | {'G1' if game else 'control'} | {means[0]} | {means[1]} | {gain} | {record} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def speed_section() -> str:
    """The latest measurements of bench/encode.py and bench/train.py, as tables of what they recorded (a CPU's:
    the GPU check's have a section of their own)."""
    entries = [e for e in recorded(RECORDS_DIR / "speed.jsonl") if e.get("device") != "cuda"]
    if not entries:
        return "No speed measurement recorded yet."
    out = []
    encode = [e for e in entries if e["bench"] == "encode"]
    if encode:
        out.append(encode_table(encode))
    for bench, render in (("encode-causal", causal_table), ("encode-causal-int8", int8_table),
                          ("encode-batches", batches_table)):
        if found := [e for e in entries if e["bench"] == bench]:
            out.append(render(found[-1]))
    train = [e for e in entries if e["bench"] == "train"]
    if train:
        out.append(train_table(train))
    out += [backbone_train_table(e) for e in entries if e["bench"] == "train-backbone"]
    return "\n\n".join(out)


def backbone_train_table(entry: dict) -> str:
    """One run of bench/train.py --backbone: a causal LM's trained steps, the studio's (cut at the pooled layer)
    against the Trainer on the whole model, each method's step priced against fine-tuning's, and MiniLM's."""
    s = entry["summary"]
    lengths = [k.rsplit("_", 1)[1] for k in s if k.startswith("texts_per_s_")]
    lines = [f"**bench/train.py --backbone {s['backbone']}** ({entry['machine']}, {s['precision']}, batch "
             f"{s['batch_size']}, {s['texts']} L2R texts): a training step, texts/s; the studio trains the layers up "
             f"to the pooled one, the Trainer the whole model as it ships; shares of 2048³ {s['precision']} matrix "
             f"products at {s['ceiling_gflops']:.0f} GFLOP/s in the same process (a step counted as three forward "
             "passes over the layers up to the pooled one)", "",
             "| max length | HF Trainer (share) | studio fine-tuning (× Trainer, share) | LoRA | adapters | "
             "GAN-BERT G1 | its control | MiniLM fine-tuning (× this backbone) |", "|---|" + "---:|" * 7]
    for n in lengths:
        t, share, over = s[f"texts_per_s_{n}"], s[f"ceiling_share_{n}"], s[f"over_finetune_step_{n}"]
        lines.append(f"| {n} | {t['trainer']:.2f} ({share['trainer']:.2f}) | {t['finetune']:.2f} "
                     f"(×{s[f'over_trainer_{n}']:.2f}, {share['finetune']:.2f}) | "
                     + " | ".join(f"{t[k]:.2f} (step ×{over[k]:.2f})" for k in ("lora", "adapter", "ganbert", "control"))
                     + f" | {t['minilm']:.1f} (×{s[f'cost_over_minilm_{n}']:.1f}) |")
    return "\n".join(lines)


def estimates_section() -> str:
    """The Train page's time estimates against the time grids took (bench/estimates.py), the latest per corpus,
    backbone and feature set (records before the backbone or the features were recorded are MiniLM's, hidden)."""
    latest = {(e["corpus"], e.get("backbone", "minilm"), e.get("features", "hidden")): e
              for e in recorded(RECORDS_DIR / "estimates.jsonl")}
    if not latest:
        return ""
    rows = ["| corpus | backbone, features | CPU | grid | runs | estimated s | took s | estimate ÷ actual |",
            "|---|---|---|---|---:|---:|---:|---:|"]
    for (corpus, backbone, features), e in latest.items():
        for grid, g in e["grids"].items():
            rows.append(f"| {corpus} ({e['date']}) | {backbone}, {features} | {e.get('cpu', '–')} | {grid} | "
                        f"{g['runs']} | {g['estimated_s']:,.0f} | {g['took_s']:,.0f} | "
                        f"{g['estimated_s'] / g['took_s']:.2f} |")
    return ("## Time estimates (bench/estimates.py)\n\nFrozen grids through the real queue in a fresh studio home: the "
            "first with no history (the methods' models at laptop figures), then the same grid with other seeds and "
            "another amount, estimated from the first grid's runs. Goals: within 2x on a first grid, 1.5x on a "
            "repeated one.\n\n" + "\n".join(rows))


def predict_memory_section() -> str:
    """`core predict --file`'s peak memory against the file's length (bench/predict_memory.py)."""
    found = recorded(RECORDS_DIR / "predict-memory.jsonl")
    if not found:
        return ""
    rows = ["| date | CPU | backbone, features | max length | texts | peak RSS GB | texts/s |",
            "|---|---|---|---:|---:|---:|---:|"]
    rows += [f"| {r['date']} | {r['cpu']} ({r['threads']} thread) | {r['backbone']}, {r['features']} | "
             f"{r['max_len']} | {r['texts']:,} | {r['peak_rss_gb']:.2f} | {r['texts_per_s']:.2f} |" for r in found]
    return ("## Predicting a file: peak memory (bench/predict_memory.py)\n\nA frozen features + LR run on SmolLM2's "
            "hidden states and token probabilities predicts files of L2R texts, each in its own process; encoding "
            f"streams its texts into the feature store. Goal: the peak independent of the file, at most "
            f"{found[0]['goal_gb']:g} GB.\n\n" + "\n".join(rows))


def encode_table(encode: list[dict]) -> str:
    """The latest engine speeds, with GFLOP/s and the ceiling share where measured, and each engine's accuracy
    fall from the latest run that measured accuracy (a speed-only run measures none)."""
    latest = encode[-1]
    s = latest["summary"]
    judged_by = next((e for e in reversed(encode) if "accuracy_drop" in e["summary"]), None)
    judged = judged_by["summary"] if judged_by else {}
    speeds, base = s["texts_per_s"], s["baseline"]
    lengths = list(next(iter(speeds.values())))
    lines = [f"**bench/encode.py** ({latest['machine']}): frozen encoding, texts/s (× {base}, today's torch path)",
             "", "| engine | " + " | ".join(f"{n} tokens" for n in lengths) + " | largest accuracy fall |",
             "|---|" + "---:|" * (len(lengths) + 1)]
    for engine, row in speeds.items():
        fall = judged.get("accuracy_drop", {}).get(engine)
        lines.append(f"| {engine} | " + " | ".join(f"{row[n]:.1f} (×{row[n] / speeds[base][n]:.2f})" for n in lengths)
                     + f" | {'–' if fall is None else f'{fall:+.3f}'} |")
    if judged_by is not None and judged_by is not latest:
        lines.append(f"\nThe accuracy falls are from the last run that measured them ({judged_by['machine']}): a "
                     "speed-only run measures none.")
    if "gflop_per_text" in s:
        ceiling = s["ceiling_gflops"]
        lines.append(f"\n{base} reaches " + ", ".join(
            f"{speeds[base][n] * s['gflop_per_text'][n]:.0f} GFLOP/s at {n} tokens "
            f"({speeds[base][n] * s['gflop_per_text'][n] / ceiling:.2f} of the ceiling)" for n in lengths)
            + f": the ceiling is 2048³ bf16 matrix products in the same process, {ceiling:.0f} GFLOP/s; a text's "
            "FLOPs are counted at its own truncated length.")
    if "auto_engine" in judged:
        lines.append(f"\n`auto` picks **{judged['auto_engine']}**: the fastest at 256 tokens of the engines whose "
                     "features keep accuracy within 0.01 of fp32 torch (features + LR and the trained head at 5 "
                     "and 20/class on the M4 sample and L2R dev, 5 seeds).")
    return "\n".join(lines)


def train_table(train: list[dict]) -> str:
    """The latest training throughput: the studio against the Trainer, GFLOP/s and the ceiling share where
    measured; and the levers tried, from the latest run that measured them (`--levers`)."""
    latest = train[-1]
    s = latest["summary"]
    lengths = [k.rsplit("_", 1)[1] for k in s if k.startswith("texts_per_s_")]
    shares = "ceiling_gflops" in s
    lines = [f"**bench/train.py** ({latest['machine']}): encoder training, texts/s"
             + (f"; GFLOP/s count a step as three forward passes, against 2048³ bf16 matrix products at "
                f"{s['ceiling_gflops']:.0f} GFLOP/s in the same process" if shares else ""), "",
             "| max length | HF Trainer | studio fine-tuning (× Trainer) | GAN-BERT (step × fine-tuning step) |"
             + (" studio GFLOP/s (share of the ceiling) |" if shares else ""),
             "|---|---:|---:|---:|" + ("---:|" if shares else "")]
    for n in lengths:
        t = s[f"texts_per_s_{n}"]
        lines.append(f"| {n} | {t['trainer']:.1f} | {t['finetune']:.1f} (×{s[f'over_trainer_{n}']:.2f}) | "
                     f"{t['ganbert']:.1f} (×{s[f'ganbert_step_over_finetune_step_{n}']:.2f}) |"
                     + (f" {s[f'gflops_{n}']['finetune']:.0f} ({s[f'ceiling_share_{n}']['finetune']:.2f}) |"
                        if shares else ""))
    with_levers = [e for e in train if "levers_256" in e["summary"]]
    if with_levers:
        levers = with_levers[-1]["summary"]["levers_256"]
        lines += ["", "**Levers at 256 tokens** (bench/train.py --levers"
                  + ("" if with_levers[-1] is latest else f", an earlier run: {with_levers[-1]['machine']}")
                  + "): the studio's fine-tuning, two epochs of the same texts each, the first holding any compile "
                  "time; as shipped is MiniLM's own attention dropout, 0.1", "",
                  "| lever | first epoch, texts/s | second epoch, texts/s | seconds in all |", "|---|---:|---:|---:|"]
        for name, got in levers.items():
            first, second = got["texts_per_s_by_epoch"]
            lines.append(f"| {name} | {first:.1f} | {second:.1f} | {got['seconds']:.0f} |")
    return "\n".join(lines)


def adapted_stubs(home: Path) -> None:
    """Each recorded adapted backbone's record where runs name it (`studio:backbones/<name>`), so its name and its
    base read the same whether or not this machine holds its weights."""
    for entry in recorded(RECORDS_DIR / "adapt.jsonl"):
        folder = home / ADAPTED_DIR / entry["folder"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ADAPTED_RECORD).write_text(json.dumps(entry))


def tapt_section(made: list[dict], runs: list) -> str:
    """bench/tapt.py's settings table from the records: each recorded adaptation, its CPU minutes and masked-LM
    loss, and features + LR at 20/class on L2R dev over seeds on it, beside the bundled MiniLM (paired by seed)."""
    from bench.tapt import HEAD, base_row, table_row

    def scores(folder: str | None) -> dict[int, float]:  # features + LR at its defaults, on that backbone
        return {r.config.seed: r.metrics["test"]["accuracy"] for r in runs
                if (r.config.backbone is None if folder is None else str(r.config.backbone).endswith(folder))
                and at_defaults(r.config.with_(backbone=None), 20, {"method": "features-lr", "frozen": True})}

    base = scores(None)
    rows = [table_row(entry, scores(entry["folder"]), base)[0]
            for entry in sorted(made, key=lambda e: e["cpu_seconds"])]
    return "\n".join([*HEAD, base_row(base), *rows])


def gpu_section(runs: list) -> str:
    """What the GPU check (bench/gpu_check.py) recorded, apart from every CPU figure: its throughput, and the
    trained-encoder regime study on L2R with wall seconds per run."""
    from bench.regime import adds, adds_table, frame_of, results_table

    speeds = [e for e in recorded(RECORDS_DIR / "speed.jsonl") if e.get("device") == "cuda"]
    if not speeds and not runs:
        return ("No GPU has run the check yet: `make gpu-check` on a CUDA machine (docs/testing.md) records its "
                "figures here, in tables of their own.")
    out = []
    if speeds:
        latest = speeds[-1]
        s = latest["summary"]
        lines = [f"**Throughput** ({latest['machine']}; bf16 matrix-product ceiling {s['ceiling_gflops']:,.0f} GFLOP/s "
                 "in the same process): texts/s, GFLOP/s, share of the ceiling, peak memory", "",
                 "| max length | encoding | training (fine-tuning step) |", "|---|---:|---:|"]
        for n, enc in s["encode"].items():
            tr = s["train"][n]
            lines.append(f"| {n} | " + " | ".join(f"{x['texts_s']:,.0f}/s, {x['gflops']:,.0f} GFLOP/s "
                                                  f"({x['ceiling_share']:.2f}), {x['peak_mib']:,} MiB" for x in (enc, tr))
                         + " |")
        out.append("\n".join(lines))
    frame = frame_of(runs)
    if not frame.empty:
        out += ["### The trained-encoder regime study on a GPU (L2R test, 256 tokens; seconds are wall seconds)",
                results_table(frame, ("seconds", "s"))]
        paired = adds(frame)
        out += ["### GAN-BERT − its control with the encoder trained, on a GPU (paired by seed)",
                adds_table(paired) if paired else "No seed has both GAN-BERT and its control on a GPU yet."]
    return "\n\n".join(out)


def trec_section(runs: list, gpu_runs: list) -> str:
    """bench/trec.py's tables from the records: each TREC task's methods at 2% and 1% beside the sources' figures,
    and the paired differences; the GPU check's runs of it apart, in wall seconds."""
    from bench import trec

    frame = trec.frame_of(runs)
    if frame.empty:
        return ""
    out = ["The GAN-BERT authors' split as their code ships it (`../shared/data/ganbert-trec`): 109 labeled TREC "
           "questions (2% of its train set), 5,343 unlabeled, its 500 test questions; every run reads the authors' "
           "labeled rows and no validation (they had none), at 64 tokens as both official codes ran, on MiniLM (6 "
           "layers; the paper's bert-base-cased has 12) unless a row names SmolLM2. At 2% the labeled rows are "
           "fixed, so the seed is the initialisation; at 1% each seed draws half of them per class. The sources' "
           "figures (italics) are the paper's Figure 2c, read off its plot, and the PyTorch notebook's stored "
           "output; CPU seconds are per run, on this 2-core machine while other work shared it.", trec.report(frame)]
    if not (on_gpu := trec.frame_of(gpu_runs)).empty:
        out.append("### On a GPU (the GPU check's runs of the same study; its CPU seconds are the GPU machine's "
                   "process time)\n\n" + trec.report(on_gpu))
    return "\n\n".join(out)


def regime_section(runs: list) -> str:
    """bench/regime.py's tables from the records: every method at every labeled amount, pool and backbone; what
    the adversarial part adds as the pool grows; what adapting the backbone adds."""
    from bench.regime import SMOLLM2, adds, adds_table, backbone_adds, encoder_adds_table, frame_of, results_table

    frame = frame_of(runs)
    if frame.empty:
        return "No run of the regime study is recorded yet."
    found = adds(frame)
    out = ["### Every method, backbone and pool", results_table(frame),
           "### What the adversarial part adds as the pool grows (GAN-BERT − its control on the same rows, paired "
           "by seed)", adds_table([a for a in found if a["encoder"] == "frozen"])]
    if trained := [r for r in runs if r.status == "done" and not r.config.frozen and r.config.method != "tfidf-lr"]:
        out += ["### With the encoder trained (bench/regime.py --part full): fine-tuning, adapters and GAN-BERT, "
                "the seed report's comparison", group_table(trained)]
        if any(a["encoder"] == "trained" for a in found):
            out += ["### What the adversarial part adds with the encoder trained, beside frozen features (GAN-BERT − "
                    "its control on the same rows, paired by seed)", encoder_adds_table(found)]
    if adapting := backbone_adds(frame, ("adapted",)):
        out += ["### What adapting the backbone adds (a method on the adapted backbone − on the base, paired by seed)",
                adds_table(adapting, "method")]
    if smollm2 := backbone_adds(frame, tuple(SMOLLM2)):
        out += ["### What SmolLM2's features add (a method on its hidden states, token probabilities or both − the "
                "same on MiniLM's, paired by seed)", adds_table(smollm2, "method", "SmolLM2 − MiniLM"),
                smollm2_encoding(runs)]
    return "\n\n".join(out)


BACKBONE_SETTINGS = ("backbone", "revision", "features", "pooling", "pool_layer", "max_len", "encoder_engine")


def regime_runs(runs: list) -> list:
    """A corpus's runs of the regime study: those tagged so, and the MiniLM runs their study reused from other
    benches (a run is reused whatever its tags), told by settings the same but for the backbone's."""
    def twin(run) -> str:
        settings = json.loads(run.config.to_json())
        return json.dumps({k: v for k, v in settings.items() if k not in (*BACKBONE_SETTINGS, "tags")},
                          sort_keys=True)

    tagged = [r for r in runs if "regime" in r.config.tags]
    wanted = {twin(r) for r in tagged}
    latest = {twin(r): r for r in runs if r.config.backbone is None and "regime" not in r.config.tags
              and twin(r) in wanted}
    return tagged + list(latest.values())


def smollm2_section(runs: list) -> str:
    """The regime study's SmolLM2 columns on a corpus beside MiniLM: every method, what SmolLM2's features add,
    and what the game adds on them (paired by seed); empty without SmolLM2 runs."""
    from bench.regime import SMOLLM2, adds, adds_table, backbone_adds, frame_of, results_table

    frame = frame_of(runs)
    if frame.empty or not frame["backbone"].isin(list(SMOLLM2)).any():
        return ""
    return "\n\n".join(["### Every method and backbone", results_table(frame),
                         "### What SmolLM2's features add (paired by seed)",
                         adds_table(backbone_adds(frame, tuple(SMOLLM2)), "method", "SmolLM2 − MiniLM"),
                         "### GAN-BERT − its control (paired by seed)", adds_table(adds(frame)),
                         smollm2_encoding(runs)])


def smollm2_length_section(runs_of: dict[str, list]) -> str:
    """Features + LR on SmolLM2 (both) at each max length, by corpus: what `auto` follows for SmolLM2."""
    from bench.smollm2_length import CUTS, table

    cuts = {e["corpus"]: {int(n): v for n, v in e["cut"].items()} for e in recorded(CUTS)}
    parts = []
    for corpus in ("m4-sample", "l2r-dev"):
        if corpus in cuts and (found := table(runs_of.get(corpus, []), cuts[corpus])):
            parts.append(f"**{TITLES[corpus]}** (`--corpus {corpus}`)\n\n{found}")
    if not parts:
        return ""
    return ("Features + LR on SmolLM2's layer 20 and token probabilities (`both`), 5 seeds, at each max length: the "
            "share of the training texts it cuts (SmolLM2's tokenizer), accuracy, the difference with 128 paired by "
            "seed, and the encoding's seconds over the runs that encoded (each length's store encodes once), on "
            "this 2-core machine while other work shared it.\n\n" + "\n\n".join(parts))


def default_backbone_section(runs_of: dict[str, list]) -> str:
    """bench/default_backbone.py: MiniLM against SmolLM2's hidden states and both feature sets at each one's auto
    length, per corpus, then what each costs in time (issue 78's decision, docs/methods.md)."""
    from bench.default_backbone import LENGTHS, costs, table

    out = []
    for entry in recorded(LENGTHS):
        if (found := table(runs_of.get(entry["corpus"], []), entry["lengths"], entry["precision"])):
            out.append(f"**{TITLES[entry['corpus']]}** (`--corpus {entry['corpus']}`)\n\n{found}")
    if not out:
        return ""
    return ("Features + LR, 5 seeds, each backbone at the length `auto` chooses for it on the corpus; the difference "
            "with MiniLM is paired by seed (the same labeled rows), and the encoding's seconds are summed over the "
            "runs that encoded, on this 2-core machine while other work shared it. SmolLM2's hidden-state runs read "
            "the features its `both` runs had encoded (a store of both holds either), hence their 0.\n\n" + "\n\n".join(out)
            + "\n\n**What each costs in time** (bench/estimates.py's grid on L2R: frozen GAN-BERT at pools of 0 and "
            "1,000 and its control, features + LR and TF-IDF + LR, seeds 0-1, through the real queue; the repeated "
            "grid is the same with other seeds)\n\n" + costs())


def smollm2_encoding(runs: list) -> str:
    """What encoding the study's texts with SmolLM2 (hidden states and token probabilities, read once for all
    three columns) cost, from the runs that encoded them: their encoding seconds and CPU seconds, summed."""
    both = [r for r in runs if r.config.backbone == "smollm2-135m" and r.config.features == "both" and r.metrics]
    encoded = [r.metrics for r in both if r.metrics.get("encode_seconds", 0) > 1]
    if not encoded:
        return ""
    texts = max(sum(m.get(k) or 0 for k in ("labeled", "unlabeled", "val_rows", "test_rows")) for m in
                (r.metrics for r in both))
    wall, cpu = sum(m["encode_seconds"] for m in encoded), sum(m["cpu_seconds"] for m in encoded)
    return (f"**Encoding with SmolLM2** (layer 20 and token probabilities at {both[0].config.max_len} tokens, "
            f"{both[0].config.precision}): the study's {texts:,} texts (the pool, the validation and the test texts) "
            f"took {wall / 60:,.0f} min ({texts / wall:.1f} texts/s) and {cpu / 60:,.0f} CPU min over the "
            f"{len(encoded)} runs that encoded them, on this 2-core machine while other work shared it. The "
            "hidden-state and token-probability columns read the same vectors: nothing was encoded twice.")


def page() -> tuple[str, str]:
    """The whole page and the README's table, from the records alone (in a scratch studio home)."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["STUDIO_HOME"] = home
        adapted_stubs(Path(home))
        sections = [CONCLUSIONS.read_text().strip() if CONCLUSIONS.exists() else ""]
        runs_of = {}
        for name, title in TITLES.items():
            registry = Registry(Path(home) / name)
            runs_of[name] = restored(name, registry)
        trec_runs = restored("trec-coarse", Registry(Path(home) / "trec"))  # both tasks: one records file
        if (trec := trec_section(trec_runs, restored("trec-coarse", Registry(Path(home) / "trec-gpu"), gpu=True))):
            sections.append("## Where the paper claims the gain: the GAN-BERT authors' TREC split (bench/trec.py)\n\n"
                            + trec)
        if runs_of.get("l2r"):
            sections.append("## The regime study: L2R, tested on its test split (bench/regime.py)\n\n"
                            + regime_section(runs_of["l2r"]))
        if (m4 := smollm2_section(regime_runs(runs_of.get("m4-sample", [])))):
            sections.append("## SmolLM2 on the M4 sample (bench/regime.py --corpus m4-sample)\n\n" + m4)
        if (lengths := smollm2_length_section(runs_of)):
            sections.append("## SmolLM2's max length (bench/smollm2_length.py)\n\n" + lengths)
        if (default := default_backbone_section(runs_of)):
            sections.append("## The default backbone for frozen runs (bench/default_backbone.py)\n\n" + default)
        if (made := recorded(RECORDS_DIR / "adapt.jsonl")) and runs_of.get("l2r-dev"):
            text = tapt_section(made, runs_of["l2r-dev"])
            sections.append("## Adapting the backbone (TAPT): its settings on L2R dev (bench/tapt.py)\n\n"
                            "Each adapted backbone judged by frozen features + LR at 20 labels a class on L2R's dev "
                            "split, 3 seeds, beside the bundled MiniLM on the same rows. CPU minutes are the "
                            "adaptation's own, as recorded (a run that shared the cores with another reads more).\n\n"
                            + text)
        for name, title in TITLES.items():
            if runs_of[name]:
                sections.append(f"## Every recorded group: {title}\n\n{len(runs_of[name])} recorded runs "
                                f"(`bench/records/{name}.jsonl`).\n\n" + group_table(runs_of[name]))
        sections.append("## Speed\n\n" + "\n\n".join(filter(None, [speed_section(), attention_section(runs_of)])))
        if (budget := budget_section(runs_of)):
            sections.append("## The trained-encoder budget (bench/defaults.py)\n\n" + budget)
        sections.append(estimates_section())
        sections.append(predict_memory_section())
        sections.append("## On a GPU (bench/gpu_check.py)\n\n"
                        + gpu_section(restored("l2r", Registry(Path(home) / "l2r-gpu"), gpu=True)))
        table = headline(runs_of)
    head = ("# Results\n\nWritten by `bench/report.py` from `bench/records/*.jsonl`; do not edit by hand (the test "
            "`tests/test_docs.py` regenerates it). Accuracy is on each corpus's test texts, with Student's t 95% "
            "interval over seeds as computed; runs with the same seed share their labeled rows, so differences are "
            "paired by seed (an exact sign test up to 5 seeds).")
    return "\n\n".join([head, "## The headline table\n\n" + table, *filter(None, sections)]) + "\n", table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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


if __name__ == "__main__":
    raise SystemExit(main())
