"""Where the paper claims the gain: the GAN-BERT authors' own TREC split, reproduced.

`../shared/data/ganbert-trec/` is the split crux82/ganbert ships (109 labeled questions, 2% of TREC's train set;
5,343 unlabeled; TREC's 500 test questions), on its coarse classes (6) and its fine ones (29 labeled, 44 in all: the
60 test questions of the 15 classes no labeled row shows count as errors, as the authors count them, so fine accuracy
is at most 0.88). Every run reads the authors' labeled rows and no validation (they had none), at 64 tokens as both
official codes ran; at 2% every labeled row, at 1% half of them per class, drawn by the seed (the other half joins
the unlabeled texts). At 2% the labeled rows are fixed, so the seed is the initialisation.

Methods, each as its source ran it beside a control that removes its one idea: GAN-BERT G1 with the `tf` preset
(crux82/ganbert), the `notebook` preset (crux82/ganbert-pytorch) and the studio's measured one, each beside its control
(the same preset, rows and steps with the adversarial part off), and G2 with `tf` and `studio`; fine-tuning with the
`paper` preset (the paper's BERT baseline: bert.py's 3 epochs at batch 64, 5 steps on 109 rows) and at the studio's
defaults; adapters; and without training the encoder, TF-IDF + LR, features + LR, SetFit, and frozen G1 and its
control on MiniLM and on SmolLM2 (SetFit trains its encoder: MiniLM alone on a CPU).

Runs go through the benches' home and `bench/records/trec.jsonl`, so the study resumes where it stopped; the frozen
and closed-form runs first, then the trained-encoder parts at 2% and then at 1% (each printed with the studio's
estimate; the paper's comparison first), each seed's pair together, so a study cut short leaves whole pairs. The
notebook preset's 920-step runs come at 2% on fine for seeds 0-2 first, and the rest of them last. Prints the tables
bench.report writes into docs/results.md, with the paper's figures beside them, and ends with one JSON line.

Run: .venv/bin/python -m bench.studies.trec [--tasks coarse fine] [--amounts 2% 1%] [--seeds 0 1 2 3 4] [--parts ...]
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
    end_study,
    finished,
    open_home,
    run_once,
)
from core.backbone.facts import measured_budget, sentence_pooling
from core.backbone.packaged import PACKAGED, SMOLLM2
from core.compare.seeds import paired
from core.runs import Run, Status
from core.runs.estimate import grid_seconds, roughly
from core.train import TrainConfig, resolve

TASKS = {"coarse": CORPORA["trec-coarse"], "fine": CORPORA["trec-fine"]}
AMOUNTS = {"2%": 1.0, "1%": 0.5}  # the share of the authors' 109 labeled rows a run labels: 2% and 1% of TREC
MAX_LEN = 64  # both official codes' max_seq_length
# The sources' figures, typed once here. The paper: Croce, Castellucci and Basili, ACL 2020, Figure 2c (QC at 2% and
# 1% labeled), read off the repository's ganbert_performances.png as ../shared/data/ganbert-trec/README.md gives
# them ("about"). The notebook: GANBERT_pytorch.ipynb's stored test accuracy after its 10th epoch (bert-base-cased,
# fine classes, 2%).
PAPER = {("coarse", "2%"): (0.21, 0.80), ("fine", "2%"): (0.03, 0.48),
         ("coarse", "1%"): (0.20, 0.63), ("fine", "1%"): (0.01, 0.28)}  # (BERT, GAN-BERT), bert-base-cased
NOTEBOOK = {("fine", "2%"): 0.626}

FROZEN = {"tfidf-lr": {"method": "tfidf-lr"}, "features-lr": {"method": "features-lr", "frozen": True},
          "ganbert-noise-frozen": {"method": "ganbert", "frozen": True},
          "ganbert-control-frozen": {"method": "ganbert", "frozen": True, "adversarial": False}}
# its measured layer-20 hidden states; trained (issue 83), every layer of its cut unless a run names its top K
ON_SMOLLM2 = {"backbone": SMOLLM2, "train_layers": 0}
SMOLLM2_METHODS = ("features-lr", "ganbert-noise-frozen", "ganbert-control-frozen")
TOP = PACKAGED[SMOLLM2].train_layers  # the top K layers its sweep on L2R dev chose (issue 94)
# SmolLM2 trained, cut at its layer 20: each method at its studio defaults, G1 beside its control, every layer; then
# the same at the K its sweep chose, beside them
SMOLLM2_GROUPS = (("fine-tuning", ("finetune",)), ("LoRA", ("lora",)), ("adapters", ("adapter",)),
                  ("G1 and its control, studio preset", ("ganbert-control-studio", "ganbert-noise-studio")),
                  ("fine-tuning, attention dropout 0.1", ("finetune-dropout",)),
                  (f"top {TOP} layers: fine-tuning, LoRA, G1 and its control",
                   ("finetune-top", "lora-top", "ganbert-control-studio-top", "ganbert-noise-studio-top")))
SMOLLM2_TRAINED = tuple(name for _, names in SMOLLM2_GROUPS for name in names)
TRAINED = {"setfit": {"method": "setfit"},
           "finetune-paper": {"method": "finetune", "finetune_preset": "paper"},
           "finetune": {"method": "finetune"}, "adapter": {"method": "adapter"}, "lora": {"method": "lora"},
           **{f"ganbert-{g}-{preset}": {"method": "ganbert", "gan_preset": preset, "generator": generator}
              for preset in ("studio", "tf", "notebook") for g, generator in (("noise", "noise"), ("bow", "bow"))
              if not (preset == "notebook" and g == "bow")},
           **{f"ganbert-control-{preset}": {"method": "ganbert", "gan_preset": preset, "adversarial": False}
              for preset in ("studio", "tf", "notebook")}}
# a probe of why SmolLM2 fine-tuned trails its frozen features: it trains with no dropout (its config's 0), where
# MiniLM's 0.1 regularizes; Llama has attention dropout alone. And its top K layers alone.
SMOLLM2_PROBES = {"finetune-dropout": {"method": "finetune", "attention_dropout": 0.1},
                  **{f"{name}-top": {**TRAINED[name], "train_layers": TOP}
                     for name in ("finetune", "lora", "ganbert-control-studio", "ganbert-noise-studio")}}
# the trained-encoder parts: each seed's runs of a part run together, a game beside its control
# in the order they run at each amount: the paper's comparison (its BERT, G1 at the authors' budget and its control)
# first, then the studio's, the notebook's G1 and the rest
PARTS = {"fine-tuning, paper preset": ("finetune-paper",),
         "G1 and its control, tf preset": ("ganbert-control-tf", "ganbert-noise-tf"),
         "fine-tuning, studio defaults": ("finetune",),
         "G1 and its control, studio preset": ("ganbert-control-studio", "ganbert-noise-studio"),
         "G1 and its control, notebook preset": ("ganbert-control-notebook", "ganbert-noise-notebook"),
         "adapters": ("adapter",), "LoRA": ("lora",), "G2, studio preset": ("ganbert-bow-studio",),
         "G2, tf preset": ("ganbert-bow-tf",),
         "SetFit": ("setfit",)}
TITLES = {"tfidf-lr": "TF-IDF + LR", "features-lr": "Frozen features + LR", "setfit": "SetFit",
          "ganbert-noise-frozen": "GAN-BERT G1 on frozen features", "ganbert-control-frozen": "its control, frozen",
          "finetune-paper": "fine-tuning, paper preset (5 steps at 2%)", "finetune": "fine-tuning, studio defaults",
          "adapter": "adapters", "lora": "LoRA", "finetune-dropout": "fine-tuning, attention dropout 0.1",
          "finetune-top": f"fine-tuning, top {TOP} layers", "lora-top": f"LoRA, top {TOP} layers",
          "ganbert-noise-studio-top": f"GAN-BERT G1, studio preset, top {TOP} layers",
          "ganbert-control-studio-top": f"GAN-BERT control, studio preset, top {TOP} layers",
          **{f"ganbert-{g}-{p}": f"GAN-BERT {label}, {p} preset" for p in ("studio", "tf", "notebook")
             for g, label in (("noise", "G1"), ("bow", "G2"), ("control", "control"))}}
# what each paired row compares: (a, b, the words for it)
PAIRS = [("ganbert-noise-tf", "ganbert-control-tf", "G1 − control, tf preset (the game at the authors' budget)"),
         ("ganbert-bow-tf", "ganbert-control-tf", "G2 − control, tf preset"),
         ("ganbert-noise-notebook", "ganbert-control-notebook", "G1 − control, notebook preset"),
         ("ganbert-noise-studio", "ganbert-control-studio", "G1 − control, studio preset"),
         ("ganbert-bow-studio", "ganbert-control-studio", "G2 − control, studio preset"),
         ("ganbert-noise-frozen", "ganbert-control-frozen", "G1 − control, frozen MiniLM"),
         ("ganbert-noise-frozen@smollm2", "ganbert-control-frozen@smollm2", "G1 − control, frozen SmolLM2"),
         ("ganbert-noise-tf", "finetune-paper", "G1 (tf) − the paper's BERT (the paper's comparison)"),
         ("ganbert-control-tf", "finetune-paper", "control (tf) − the paper's BERT"),
         ("finetune", "finetune-paper", "fine-tuning at the studio's defaults − the paper's BERT"),
         ("ganbert-noise-studio", "finetune", "G1 (studio) − fine-tuning (studio)"),
         ("ganbert-noise-studio@smollm2", "ganbert-control-studio@smollm2",
          "G1 − control, studio preset, SmolLM2 trained"),
         ("finetune@smollm2", "features-lr@smollm2", "SmolLM2 fine-tuned − its frozen features + LR"),
         ("lora@smollm2", "features-lr@smollm2", "SmolLM2 with LoRA − its frozen features + LR"),
         ("finetune@smollm2", "finetune", "fine-tuning: SmolLM2 − MiniLM"),
         ("finetune-dropout@smollm2", "finetune@smollm2", "SmolLM2 fine-tuned: attention dropout 0.1 − none"),
         ("finetune-top@smollm2", "finetune@smollm2", f"SmolLM2 fine-tuned: top {TOP} layers − every layer"),
         ("finetune-top@smollm2", "features-lr@smollm2", f"SmolLM2 fine-tuned, top {TOP} − its frozen features + LR"),
         ("lora-top@smollm2", "lora@smollm2", f"SmolLM2 with LoRA: top {TOP} layers − every layer"),
         ("ganbert-noise-studio-top@smollm2", "ganbert-control-studio-top@smollm2",
          f"G1 − control, studio preset, SmolLM2's top {TOP} layers")]


def config_of(task: str, amount: str, seed: int, name: str, column: str, precision: str,
              tasks: dict = TASKS, **more) -> TrainConfig:
    """One run of the study (`column`: minilm or smollm2); `tasks` names where each task's files are (the GPU check
    unpacks its own copy), `more` adds settings (its device, the dry run's backbone and budget)."""
    settings = {**(ON_SMOLLM2 if column == "smollm2" else {}), **{**FROZEN, **TRAINED, **SMOLLM2_PROBES}[name]}
    return TrainConfig.of(data=tasks[task].spec(), fraction=AMOUNTS[amount], per_class=None, seed=seed, max_len=MAX_LEN,
                       validation="none", precision=precision, encoder_engine=BENCH_ENGINE, tags=("trec",),
                       **settings, **more)


def seed_by_seed(tasks: list[str], amounts: list[str], seeds: list[int]) -> list[tuple]:
    """Every MiniLM run of the study (SmolLM2 is frozen-only where no GPU converts it), seed by seed, each seed's 2%
    before its 1%, so a cut leaves whole seeds of every method; the GPU check's order, after the notebook preset's
    pairs at 2% (`costly_first`)."""
    return [(task, amount, seed, name, "minilm") for seed in seeds for amount in amounts for task in tasks
            for name in (*FROZEN, *TRAINED)]


def costly_first(runs: list[tuple]) -> list[tuple]:
    """`runs` with the notebook preset's pairs at 2% moved to the front, seed by seed: its 920-step runs are the
    ones 2 CPU cores cannot afford at 5 seeds (about 11 hours), and a GPU runs them in seconds."""
    first = [r for r in runs if r[1] == "2%" and r[3] in PARTS["G1 and its control, notebook preset"]]
    return first + [r for r in runs if r not in first]


SMOLLM2_PART = "SmolLM2 trained"  # a part asked for by name, not in `trained`'s
NOTEBOOK_FIRST = {"task": "fine", "amount": "2%", "seeds": (0, 1, 2)}  # the notebook preset's runs that fit first


def plan(tasks: list[str], amounts: list[str], seeds: list[int], parts: list[str]) -> list[list[tuple[str, list]]]:
    """The study in stages, each a list of parts as (title, runs), each run (task, amount, seed, name, backbone): the
    frozen and closed-form runs; then the trained-encoder parts at each amount (2%, the paper's headline, first),
    each seed's runs of a part together. The notebook preset (920 steps of 64 texts a G1 run, about 11 hours here
    for all of it) runs on fine at 2% for seeds 0-2 in the first stage and the rest of it last."""
    cells = [(task, amount, seed) for task in tasks for amount in amounts for seed in seeds]
    frozen = [(*cell, name, backbone) for backbone in ("minilm", "smollm2") for cell in cells for name in FROZEN
              if backbone == "minilm" or name in SMOLLM2_METHODS]
    stages = [[("frozen features and TF-IDF", frozen)]] if "frozen" in parts else []
    wanted = [title for title in PARTS if title in parts or "trained" in parts]
    notebook = "G1 and its control, notebook preset"
    first = {(NOTEBOOK_FIRST["task"], NOTEBOOK_FIRST["amount"], s) for s in NOTEBOOK_FIRST["seeds"]}
    for amount in amounts:
        stage = []
        for title in wanted:
            at = [c for c in cells if c[1] == amount and (title != notebook or c in first)]
            if at:
                stage.append((f"{title}, {amount}" if title != notebook else f"{title}, fine, 2%, seeds 0-2",
                              [(*c, name, "minilm") for c in at for name in PARTS[title]]))
        stages.append(stage)
    if SMOLLM2_PART in parts:  # SmolLM2 trained, asked for by name: 2% first, the cheap methods over every seed first
        at = 1 if "frozen" in parts else 0
        by_seed = sorted(cells, key=lambda c: (c[2], tasks.index(c[0])))  # a cut leaves whole seeds of both tasks
        stages[at:at] = [[(f"{SMOLLM2_PART}: {title}, {amount}", [(*c, name, "smollm2") for c in by_seed
                                                                  if c[1] == amount for name in names])
                          for title, names in SMOLLM2_GROUPS] for amount in amounts]
    if notebook in wanted and (rest := [c for c in cells if c not in first]):
        stages.append([(f"{notebook}, the rest", [(*c, name, "minilm") for c in rest for name in PARTS[notebook]])])
    return [stage for stage in stages if stage]


def estimated(registry, stages: list[list], precision: str, any_precision: bool = False) -> list:
    """The parts stage by stage, in `PARTS`' order, each printed with its runs still to run and their time on this
    machine as the studio's estimator (the Train page's) puts it."""
    from core.train import load_data

    ds = load_data(resolve(config_of(*stages[0][0][1][0], precision), registry.home), registry.home)
    sizes = (len(ds.train), None, len(ds.test), len(ds.labels))
    timed = []
    for stage in stages:
        found = []
        for title, runs in stage:
            configs = [resolve(config_of(*r, precision), registry.home) for r in runs]
            left = [c for c in configs
                    if finished(registry, c, any_precision=any_precision, corpus=TASKS["coarse"]) is None]
            seconds = grid_seconds(registry, left, *sizes, extra=len(ds.unlabeled)).seconds if left else 0.0
            found.append(((title, runs), seconds, len(left)))
        timed += found
    print(f"The TREC study: {sum(len(r) for (_, r), _, _ in timed)} runs, {sum(n for *_, n in timed)} still to run, "
          f"{roughly(sum(s for _, s, _ in timed))} one after another on this machine, as the studio's estimator "
          "puts it, in this order:", flush=True)
    for (title, runs), seconds, n in timed:
        print(f"  {title}: {len(runs)} runs, " + (f"{n} to run, {roughly(seconds)}" if n else "all recorded"),
              flush=True)
    return [part for part, _, _ in timed]


def measure(args) -> pd.DataFrame:
    args.corpus = "trec-coarse"  # the benches' home and the records (both tasks share bench/records/trec.jsonl)
    opened = open_home(args)
    if opened is None:
        raise SystemExit(2)
    _, registry = opened
    precision = args.precision
    stages = plan(args.tasks, args.amounts, args.seeds, args.parts)
    parts = [part for stage in stages for part in stage] if args.report_only else \
        estimated(registry, stages, precision, args.any_precision)
    rows = []
    for _, runs in parts:
        for task, amount, seed, name, backbone in runs:
            run = run_once(registry, config_of(task, amount, seed, name, backbone, precision),
                           train=not args.report_only, any_precision=args.any_precision, corpus=TASKS[task])
            if run is None:
                continue
            print(f"{task:<6} {amount} seed {seed} {name:<24} {backbone:<7}: {run.status}" + (
                f" acc {run.metrics['test']['accuracy']:.3f} ({run.metrics.get('cpu_seconds', 0):.0f} CPU s)"
                if run.status == Status.DONE else f" {run.message}"), flush=True)
            if run.status == Status.DONE:
                rows.append(row_of(run))
    return pd.DataFrame(rows)


POOLER = "+pooler"  # a run that read MiniLM's untrained pooler (before presets read its trained pooling)


def name_of(config: TrainConfig) -> str:
    """A run's name in the study (`FROZEN`, `TRAINED`), told from its config; `@smollm2` on SmolLM2, and `+pooler`
    where a preset's run read the pooler of a backbone that never trained it (`authors_pooling` now reads the
    pooling it trained instead; those runs stay in the tables, apart, as what the untrained pooler did)."""
    on = "@smollm2" if config.backbone == SMOLLM2 else ""
    top = "-top" if config.train_layers else ""  # its top K layers alone
    untrained = POOLER if config.pooling == "pooled" and sentence_pooling(config.backbone) else ""
    if config.method == "finetune":
        dropout = "-dropout" if on and config.attention_dropout else ""  # the probe: SmolLM2's own rate is 0
        paper = config.params.finetune_preset == "paper"
        return ("finetune-paper" if paper else "finetune") + dropout + top + untrained + on
    if config.method != "ganbert":
        return config.method + top + on
    game = config.params.generator if config.params.adversarial else "control"
    return f"ganbert-{game}-{'frozen' if config.frozen else config.params.gan_preset}{top}{untrained}{on}"


def task_of(config: TrainConfig) -> str:
    return "coarse" if config.data.mapping.label == "coarse" else "fine"


def amount_of(config: TrainConfig) -> str:
    return {v: k for k, v in AMOUNTS.items()}.get(config.fraction, f"{config.fraction:g} of the labeled rows")


def row_of(run: Run) -> dict:
    m, c = run.metrics, run.config
    return {"task": task_of(c), "amount": amount_of(c), "name": name_of(c), "seed": c.seed,
            "accuracy": m["test"]["accuracy"], "macro_f1": m["test"]["macro_f1"], "cpu": m.get("cpu_seconds"),
            "steps": m.get("steps"), "labels_read": run.labels_read, "unlabeled": m.get("unlabeled"),
            "precision": c.precision}


def superseded(config: TrainConfig) -> bool:
    """A top-K run trained at a budget its backbone's sweep has since replaced (`Packaged.budgets`: SmolLM2's LoRA
    went from 5e-4 and 150 steps to 1e-3 and 300): the runs at the budget measured best stand for the method."""
    budget = measured_budget(config.backbone, config.method, config.train_layers)
    return budget is not None and not config.frozen and (
        config.lr != budget.lr or (budget.steps is not None and config.steps != budget.steps))


def frame_of(runs: list[Run]) -> pd.DataFrame:
    """The study's rows from finished runs alone (the records restored, as bench.report reads them)."""
    return pd.DataFrame([row_of(r) for r in runs if r.status == Status.DONE and "trec" in r.config.tags
                         and not superseded(r.config)])


CLOSED_FORM = ("tfidf-lr", "features-lr")  # a fit with no randomness of its own: the same rows, the same model


def one_run(name: str, amount: str, at: pd.DataFrame) -> bool:
    """Whether a cell's seeds are one run repeated: a closed-form fit at 2%, where every seed reads the authors'
    same labeled rows, scores the same on each (n=1, no interval: five copies had been counted as five runs)."""
    return (name.partition("@")[0] in CLOSED_FORM and amount == "2%" and at["accuracy"].nunique() == 1
            and at["macro_f1"].nunique() == 1)


def title_of(name: str) -> str:
    base, _, on = name.partition("@")
    base, untrained = base.removesuffix(POOLER), base.endswith(POOLER)
    return TITLES[base] + (", SmolLM2" if on else ", MiniLM" if base in FROZEN and base != "tfidf-lr" else "") + (
        ", MiniLM's untrained pooler" if untrained else "")


def results_table(frame: pd.DataFrame, task: str) -> str:
    """One task: a row per method, a column per amount (accuracy [95% CI] (n), macro-F1, steps, CPU s per run), the
    sources' figures first."""
    amounts = [a for a in AMOUNTS if a in set(frame["amount"])]
    lines = ["| method | " + " | ".join(f"{a}: accuracy [95% CI], macro-F1, steps, CPU s" for a in amounts) + " |",
             "|---|" + "---|" * len(amounts)]
    lines.append("| *the paper: BERT (bert-base-cased)* | " + " | ".join(
        f"about {PAPER[(task, a)][0]:.2f}" for a in amounts) + " |")
    lines.append("| *the paper: GAN-BERT (bert-base-cased)* | " + " | ".join(
        f"about {PAPER[(task, a)][1]:.2f}" for a in amounts) + " |")
    if any((task, a) in NOTEBOOK for a in amounts):
        lines.append("| *the PyTorch notebook's stored GAN-BERT (bert-base-cased)* | " + " | ".join(
            f"{NOTEBOOK[(task, a)]:.3f}" if (task, a) in NOTEBOOK else "–" for a in amounts) + " |")
    mine = frame[frame["task"] == task]
    order = [n for n in (*FROZEN, *(f"{m}@smollm2" for m in (*SMOLLM2_METHODS, *SMOLLM2_TRAINED)), *TRAINED,
                         *(f"{m}{POOLER}" for m in TRAINED)) if n in set(mine["name"])]
    for name in order:
        cells = []
        for a in amounts:
            at = mine[(mine["name"] == name) & (mine["amount"] == a)]
            if not at.empty and one_run(name, a, at):
                at = at.iloc[:1]
            cells.append(figures.scores(at, "steps", "cpu"))
        lines.append(f"| {title_of(name)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pairs(frame: pd.DataFrame, metric: str = "accuracy") -> list[dict]:
    """Each of `PAIRS` at each task and amount where both sides ran, paired by seed."""
    out = []
    for (task, amount), rows in frame.groupby(["task", "amount"], sort=False):
        by = {name: dict(zip(r["seed"], r[metric])) for name, r in rows.groupby("name")}
        for a, b, words in [*PAIRS, *((f"{a}{POOLER}", f"{b}{POOLER}", f"{words}, MiniLM's untrained pooler")
                                      for a, b, words in PAIRS if "frozen" not in a)]:
            if a in by and b in by and (p := paired(a, b, metric, by[a], by[b])).seeds:
                out.append({"task": task, "amount": amount, "what": words, "n": len(p.seeds),
                            "difference": p.difference.mean, "low": p.difference.low, "high": p.difference.high,
                            "wins": p.wins, "losses": p.losses, "p_value": p.p_value, "test": p.test})
    return out


def pairs_table(found: list[dict]) -> str:
    lines = ["| task | labeled | comparison | difference in accuracy [95% CI] | ahead / behind | p |",
             "|---|---|---|---:|---|---:|"]
    for a in found:
        lines.append(f"| {a['task']} | {a['amount']} | {a['what']} | {figures.difference(a)} | "
                     f"{a['wins']} / {a['losses']} | {a['p_value']:.3g} |")
    return "\n".join(lines)


def report(frame: pd.DataFrame) -> str:
    """The tables docs/results.md shows: each task's results with the sources' figures, then the paired ones."""
    parts = [f"**{task.capitalize()} classes** (accuracy on the 500 test questions"
             + (", the 60 of classes no labeled row shows counted as errors: at most 0.88" if task == "fine" else "")
             + ").\n\n" + results_table(frame, task) for task in TASKS if task in set(frame["task"])]
    found = pairs(frame)
    if found:
        parts.append("**Paired by seed** (the same labeled rows; an exact sign test up to 5 seeds):\n\n"
                     + pairs_table(found))
    return "\n\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default=DEFAULT_HOME)
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--amounts", nargs="+", choices=list(AMOUNTS), default=list(AMOUNTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--parts", nargs="+", choices=["frozen", "trained", *PARTS, SMOLLM2_PART],
                        default=["frozen", "trained"],
                        help="frozen: the frozen-feature and closed-form runs; trained: every trained-encoder part on "
                             f"MiniLM; or parts by name ('{SMOLLM2_PART}': {', '.join(SMOLLM2_TRAINED)} on SmolLM2)")
    add_precision_options(parser)
    parser.add_argument("--report-only", action="store_true", help="the tables from the runs recorded or in --home")
    args = parser.parse_args()
    return end_study(measure(args), report, pairs)


if __name__ == "__main__":
    raise SystemExit(main())
