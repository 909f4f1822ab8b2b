"""The speed benches' records as tables: encoding and training throughput, the time estimates against the time
grids took, and predicting a file's peak memory."""

from __future__ import annotations

from bench.sample_runs import RECORDS_DIR, recorded
from bench.speed.encode_causal import batches_table, int8_table
from bench.speed.encode_causal import table as causal_table
from bench.speed.lora_libraries import table as lora_table


def speed_section() -> str:
    """The latest measurements of bench/speed/encode.py and bench/speed/train.py, as tables of what they recorded
    (a CPU's: the GPU check's have a section of their own)."""
    entries = [e for e in recorded(RECORDS_DIR / "speed.jsonl") if e.get("device") != "cuda"]
    if not entries:
        return "No speed measurement recorded yet."
    out = []
    encode = [e for e in entries if e["bench"] == "encode"]
    if encode:
        out.append(encode_table(encode))
    for bench, render in (("encode-causal", causal_table), ("encode-causal-int8", int8_table),
                          ("encode-batches", batches_table), ("lora-libraries", lora_table)):
        if found := [e for e in entries if e["bench"] == bench]:
            out.append(render(found[-1]))
    train = [e for e in entries if e["bench"] == "train"]
    if train:
        out.append(train_table(train))
    out += [backbone_train_table(e) for e in entries if e["bench"] == "train-backbone"]
    return "\n\n".join(out)


def backbone_train_table(entry: dict) -> str:
    """One run of bench/speed/train.py --backbone: a causal LM's trained steps, the studio's (cut at the pooled layer)
    against the Trainer on the whole model, each method's step priced against fine-tuning's, and MiniLM's."""
    s = entry["summary"]
    lengths = [k.rsplit("_", 1)[1] for k in s if k.startswith("texts_per_s_")]
    lines = [f"**bench/speed/train.py --backbone {s['backbone']}** ({entry['machine']}, {s['precision']}, batch "
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
                     + " | ".join(f"{t[k]:.2f} (step ×{over[k]:.2f})"
                                  for k in ("lora", "adapter", "ganbert", "control"))
                     + f" | {t['minilm']:.1f} (×{s[f'cost_over_minilm_{n}']:.1f}) |")
    return "\n".join(lines)


def estimates_section() -> str:
    """The Train page's time estimates against the time grids took (bench/speed/estimates.py), the latest per corpus,
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
    return ("## Time estimates (bench/speed/estimates.py)\n\nFrozen grids through the real queue in a fresh studio "
            "home: the first with no history (the methods' models at laptop figures), then the same grid with other "
            "seeds and another amount, estimated from the first grid's runs. Goals: within 2x on a first grid, 1.5x on "
            "a repeated one.\n\n" + "\n".join(rows))


def predict_memory_section() -> str:
    """`core predict --file`'s peak memory against the file's length (bench/speed/predict_memory.py)."""
    found = recorded(RECORDS_DIR / "predict-memory.jsonl")
    if not found:
        return ""
    rows = ["| date | CPU | backbone, features | max length | texts | peak RSS GB | texts/s |",
            "|---|---|---|---:|---:|---:|---:|"]
    rows += [f"| {r['date']} | {r['cpu']} ({r['threads']} thread) | {r['backbone']}, {r['features']} | "
             f"{r['max_len']} | {r['texts']:,} | {r['peak_rss_gb']:.2f} | {r['texts_per_s']:.2f} |" for r in found]
    return ("## Predicting a file: peak memory (bench/speed/predict_memory.py)\n\nA frozen features + LR run on "
            "SmolLM2's hidden states and token probabilities predicts files of L2R texts, each in its own process; "
            f"encoding streams its texts into the feature store. Goal: the peak independent of the file, at most "
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
    lines = [f"**bench/speed/encode.py** ({latest['machine']}): frozen encoding, texts/s "
             f"(× {base}, today's torch path)",
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
    lines = [f"**bench/speed/train.py** ({latest['machine']}): encoder training, texts/s"
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
        lines += ["", "**Levers at 256 tokens** (bench/speed/train.py --levers"
                  + ("" if with_levers[-1] is latest else f", an earlier run: {with_levers[-1]['machine']}")
                  + "): the studio's fine-tuning, two epochs of the same texts each, the first holding any compile "
                  "time; as shipped is MiniLM's own attention dropout, 0.1", "",
                  "| lever | first epoch, texts/s | second epoch, texts/s | seconds in all |", "|---|---:|---:|---:|"]
        for name, got in levers.items():
            first, second = got["texts_per_s_by_epoch"]
            lines.append(f"| {name} | {first:.1f} | {second:.1f} | {got['seconds']:.0f} |")
    return "\n".join(lines)
