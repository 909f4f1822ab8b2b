"""SmolLM2 trained at the corpora's own lengths (issue 94): does training the backbone that keeps style beat reading it
frozen, at which amount and with how many of its layers, and what does GAN-BERT's game add over its control there?

Every run reads the corpus at its `auto` max length (256 tokens on L2R and the M4 sample at SmolLM2's tokenizer is
what the rule picks; the record says), the same labeled rows per seed, and validates as the studio does (L2R: its dev
split; the M4 sample: the train pool). The trained methods train SmolLM2's top K layers, K as its sweep on L2R dev
chose (`Packaged.train_layers`, bench/studies/defaults.py), on states stored once (`core/train/state_store.py`):

- fine-tuning at that K, and at every layer (K = 0) beside it;
- LoRA and adapters at that K; GAN-BERT G1 and its control at that K, on the whole unlabeled pool;
- beside them, SmolLM2 read frozen (features + LR on its hidden states and on both feature sets; a trained head)
  and MiniLM fine-tuned at its defaults.

Parts, in the order they run, each resumable from the records (`bench/records/l2r.jsonl`, `m4-sample.jsonl`):
L2R tested on its test split at 20 labels a class, then 5 a class, then the M4 sample at 20 a class (its 65 test texts
are few), then L2R at 100 a class with G2 ("as time allows"). Seeds 0-2; a part's seeds run one after another, every
method of a seed together, so a study cut short leaves whole seeds. The plan is printed first with the studio's
estimate on this CPU.

Run: .venv/bin/python -m bench.studies.smollm2_trained [--parts l2r-20 l2r-5 m4-20 l2r-100] [--seeds 0 1 2]
     [--report-only]
"""

from __future__ import annotations

import argparse

import pandas as pd

from bench import figures
from bench.sample_runs import (
    BENCH_ENGINE,
    CORPORA,
    DEFAULT_HOME,
    add_precision_options,
    at_defaults,
    end_study,
    finished,
    open_home,
    run_once,
)
from core.backbone.packaged import PACKAGED, SMOLLM2
from core.compare.seeds import paired
from core.runs import Run, Status
from core.runs.estimate import grid_seconds, roughly
from core.train import TrainConfig, load_data, resolve

TAG = "smollm2-trained"
TOP = PACKAGED[SMOLLM2].train_layers  # the K its sweep chose
# name → settings; SmolLM2 unless `backbone` says otherwise
METHODS = {
    "finetune-top": {"method": "finetune", "train_layers": TOP},
    "finetune-all": {"method": "finetune", "train_layers": 0},
    "lora": {"method": "lora", "train_layers": TOP},
    "adapter": {"method": "adapter", "train_layers": TOP},
    "ganbert-noise": {"method": "ganbert", "train_layers": TOP},
    "ganbert-control": {"method": "ganbert", "adversarial": False, "train_layers": TOP},
    "features-lr": {"method": "features-lr", "frozen": True},
    "features-lr-both": {"method": "features-lr", "frozen": True, "features": "both"},
    "head": {"method": "finetune", "frozen": True},
    "finetune@minilm": {"method": "finetune", "backbone": None},
    "ganbert-bow": {"method": "ganbert", "generator": "bow", "train_layers": TOP},
}
TITLES = {"finetune-top": f"fine-tuning, top {TOP} layers", "finetune-all": "fine-tuning, every layer (20)",
          "lora": f"LoRA, top {TOP} layers", "adapter": f"adapters, top {TOP} layers",
          "ganbert-noise": f"GAN-BERT G1, top {TOP} layers, whole pool",
          "ganbert-control": f"GAN-BERT's control, top {TOP} layers",
          "features-lr": "frozen: features + LR (hidden states)",
          "features-lr-both": "frozen: features + LR (hidden states and token probabilities)",
          "head": "frozen: a trained head", "finetune@minilm": "MiniLM fine-tuned (every layer)",
          "ganbert-bow": f"GAN-BERT G2, top {TOP} layers, whole pool"}
CHEAP = ("features-lr", "features-lr-both", "head", "finetune@minilm")
COSTLY = ("finetune-all",)  # every layer trained: an M4 seed's run took 5,503 s, against 238 to 533 for the others
# the parts: (corpus, labels a class, methods), in the order they run
PARTS = {"l2r-20": ("l2r", 20, tuple(m for m in METHODS if m != "ganbert-bow")),
         "l2r-5": ("l2r", 5, tuple(m for m in METHODS if m != "ganbert-bow")),
         "m4-20": ("m4-sample", 20, tuple(m for m in METHODS if m not in ("ganbert-bow", "finetune@minilm"))),
         "l2r-100": ("l2r", 100, ("features-lr", "features-lr-both", "finetune-top", "lora", "ganbert-noise",
                                  "ganbert-control", "ganbert-bow"))}
# what each paired row compares: (a, b, words)
PAIRS = [("finetune-top", "finetune-all", f"fine-tuning: top {TOP} layers − every layer"),
         ("finetune-top", "features-lr-both", f"fine-tuning top {TOP} − frozen features + LR (both)"),
         ("lora", "features-lr-both", f"LoRA top {TOP} − frozen features + LR (both)"),
         ("finetune-top", "features-lr", f"fine-tuning top {TOP} − frozen features + LR (hidden)"),
         ("ganbert-noise", "ganbert-control", "GAN-BERT G1 − its control"),
         ("ganbert-bow", "ganbert-control", "GAN-BERT G2 − its control"),
         ("finetune-top", "finetune@minilm", f"fine-tuning: SmolLM2 top {TOP} − MiniLM")]


def config_of(corpus: str, per_class: int, seed: int, name: str, precision: str = "auto") -> TrainConfig:
    settings = {"backbone": SMOLLM2, **METHODS[name]}
    return TrainConfig.of(data=CORPORA[corpus].spec(), fraction=None, per_class=per_class, seed=seed, tags=(TAG,),
                       precision=precision, encoder_engine=BENCH_ENGINE, **settings)


def plan(parts: list[str], seeds: list[int]) -> list[tuple[str, list[tuple]]]:
    """Each part as (title, runs), a run (corpus, labels a class, seed, name): seed by seed, the frozen references and
    MiniLM first in each seed, then the trained methods, every layer's last (a study cut short in a seed leaves the
    comparisons at K, not one every-layer run)."""
    out = []
    for part in parts:
        corpus, per_class, names = PARTS[part]
        ordered = ([n for n in names if n in CHEAP] + [n for n in names if n not in CHEAP + COSTLY]
                   + [n for n in names if n in COSTLY])
        out.append((f"{corpus}, {per_class} labels a class",
                    [(corpus, per_class, s, n) for s in seeds for n in ordered]))
    return out


def estimated(registry, parts: list, precision: str, any_precision: bool = False) -> None:
    """The plan, each part with its runs still to run and their time on this machine as the studio's estimator (the
    Train page's) puts it."""
    total = 0.0
    print(f"The SmolLM2 study (K = {TOP}): {sum(len(r) for _, r in parts)} runs, in this order:", flush=True)
    for title, runs in parts:
        corpus = runs[0][0]
        configs = [resolve(config_of(*r[:4], precision), registry.home) for r in runs]
        left = [c for c in configs
                if finished(registry, c, any_precision=any_precision, corpus=CORPORA[corpus]) is None]
        seconds = 0.0
        if left:
            ds = load_data(left[0], registry.home)
            texts = ds.texts()
            seconds = grid_seconds(registry, left, len(ds.train), None if ds.val is None else len(ds.val),
                                   len(ds.test), len(ds.labels), texts=texts, test_texts=list(ds.test["text"])).seconds
        total += seconds
        left_words = f"{len(left)} to run, {roughly(seconds)}" if left else "all recorded"
        print(f"  {title}: {len(runs)} runs, {left_words}", flush=True)
    print(f"  in all: {roughly(total)} one after another on this machine", flush=True)


def name_of(config: TrainConfig) -> str | None:
    """A run's name in the study, told from its config (None: not one of the study's)."""
    if config.backbone != SMOLLM2:
        return "finetune@minilm" if config.method == "finetune" and not config.frozen and not config.train_layers \
            else None
    if config.frozen:
        return {"features-lr": "features-lr" if config.features == "hidden" else
                "features-lr-both" if config.features == "both" else None,
                "finetune": "head"}.get(config.method)
    if config.method == "finetune":
        return "finetune-top" if config.train_layers else "finetune-all"
    if config.method == "ganbert":
        return "ganbert-control" if not config.params.adversarial else f"ganbert-{config.params.generator}"
    return config.method


def row_of(run: Run) -> dict:
    c, m = run.config, run.metrics
    return {"corpus": "m4-sample" if "m4-sample" in (c.data.train or "") else "l2r", "per_class": c.per_class,
            "name": name_of(c), "seed": c.seed, "accuracy": m["test"]["accuracy"], "macro_f1": m["test"]["macro_f1"],
            "seconds": m.get("seconds"), "labels_read": run.labels_read, "k": c.train_layers, "max_len": c.max_len,
            "precision": c.precision,
            # as the sidebar says it now: records of before read "CPU (1 threads)"
            "device": (run.device or "a device not recorded").replace("(1 threads)", "(1 thread)")}


def frame_of(runs: list[Run]) -> pd.DataFrame:
    """The study's rows of a corpus's finished runs (as bench.report restores them): each method at the study's
    settings and the method's defaults, whichever bench ran it, SmolLM2's at the max length the study's own runs
    resolved `auto` to (the regime study's frozen runs at 128 tokens are another comparison); empty before any."""
    rows = [row_of(r) for r in runs if r.status == Status.DONE and r.config.per_class is not None
            and (name := name_of(r.config)) is not None
            and at_defaults(r.config, r.config.per_class, {"backbone": SMOLLM2, **METHODS[name]})]
    lengths = {r.config.max_len for r in runs if TAG in r.config.tags and r.config.backbone == SMOLLM2}
    mine = [r for r in rows if r["name"] != "finetune@minilm" and r["max_len"] in lengths]
    cells = {(r["corpus"], r["per_class"]) for r in mine}
    frame = pd.DataFrame(mine + [r for r in rows if r["name"] == "finetune@minilm" and (r["corpus"], r["per_class"])
                                 in cells])
    return frame.drop_duplicates(["corpus", "per_class", "name", "seed"]) if not frame.empty else frame


def results_table(frame: pd.DataFrame) -> str:
    """A row per method, a column per corpus and amount: accuracy [95% CI] (n), macro-F1, wall seconds per run."""
    cells = sorted({(c, n) for c, n in zip(frame["corpus"], frame["per_class"])}, key=lambda x: (x[0] != "l2r", x[1]))
    lines = ["| method | " + " | ".join(f"{c} {n}/class: accuracy [95% CI], macro-F1, s a run" for c, n in cells)
             + " |", "|---|" + "---|" * len(cells)]
    for name in (n for n in METHODS if n in set(frame["name"])):
        row = [figures.scores(frame[(frame["name"] == name) & (frame["corpus"] == c) & (frame["per_class"] == n)],
                              "seconds") for c, n in cells]
        lines.append(f"| {TITLES[name]} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def pairs(frame: pd.DataFrame) -> list[dict]:
    out = []
    for (corpus, per_class), rows in frame.groupby(["corpus", "per_class"], sort=False):
        by = {name: dict(zip(r["seed"], r["accuracy"])) for name, r in rows.groupby("name")}
        for a, b, words in PAIRS:
            if a in by and b in by and (p := paired(a, b, "accuracy", by[a], by[b])).seeds:
                out.append({"corpus": corpus, "per_class": int(per_class), "what": words, "n": len(p.seeds),
                            "difference": p.difference.mean, "low": p.difference.low, "high": p.difference.high,
                            "wins": p.wins, "losses": p.losses, "p_value": p.p_value})
    return out


def machine_note(frame: pd.DataFrame) -> str:
    """The runs at another precision or on another device than most, named: a CPU without native bf16 trains at fp32
    (bf16 runs some 65 times slower there), so a paired row can mix the two, and a mean of seconds two machines."""
    ran = frame["precision"] + " on " + frame["device"]
    counts = ran.value_counts()
    if len(counts) < 2:
        return ""
    usual = min(counts.index, key=lambda k: (-counts[k], k))  # the most runs; a tie by name, not by chance
    odd = frame.assign(ran=ran)[ran != usual]
    named = "; ".join(f"{TITLES[name]}, {corpus} {per_class}/class, seed{'s' if len(g) > 1 else ''} "
                      f"{', '.join(map(str, sorted(g['seed'])))} at {how}"
                      for (corpus, per_class, name, how), g in odd.groupby(["corpus", "per_class", "name", "ran"]))
    return f"Every run at {usual} but these: {named}."


def report(frame: pd.DataFrame) -> str:
    found = pairs(frame)
    lines = ["| corpus | labels a class | comparison | difference in accuracy [95% CI] | ahead / behind | p |",
             "|---|---:|---|---:|---|---:|"]
    lines += [f"| {a['corpus']} | {a['per_class']} | {a['what']} | {figures.difference(a)} | {a['wins']} / "
              f"{a['losses']} | {a['p_value']:.3g} |" for a in found]
    note = machine_note(frame)
    paired_rows = ("\n\n**Paired by seed** (the same labeled rows; an exact sign test up to 5 seeds):\n\n"
                   + "\n".join(lines)) if found else ""
    return results_table(frame) + (f"\n\n{note}" if note else "") + paired_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default=DEFAULT_HOME)
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    add_precision_options(parser)
    parser.add_argument("--report-only", action="store_true", help="the tables from the runs recorded or in --home")
    args = parser.parse_args()
    args.corpus = "l2r"
    opened = open_home(args)
    if opened is None:
        return 2
    _, registry = opened
    parts = plan(args.parts, args.seeds)
    if not args.report_only:
        estimated(registry, parts, args.precision, args.any_precision)
    runs = {corpus: [] for corpus in ("l2r", "m4-sample")}
    for _, part in parts:
        for corpus, per_class, seed, name in part:
            run = run_once(registry, config_of(corpus, per_class, seed, name, args.precision),
                           train=not args.report_only, any_precision=args.any_precision, corpus=CORPORA[corpus])
            if run is None:
                continue
            runs[corpus].append(run)
            print(f"{corpus} {per_class}/class seed {seed} {name}: {run.status}"
                  + (f" acc {run.metrics['test']['accuracy']:.3f} ({run.metrics.get('seconds', 0):.0f} s)"
                     if run.status == Status.DONE else f" {run.message}"), flush=True)
    return end_study(pd.concat([frame_of(r) for r in runs.values() if r] or [pd.DataFrame()]), report, pairs)


if __name__ == "__main__":
    raise SystemExit(main())
