"""The regime study: what GAN-BERT's unlabeled texts buy as the pool grows, on real text at the scale users bring.

L2R (`../shared/data/l2r`, `--corpus l2r`): the train split's 11,421 texts are the pool, each run validates on its
dev split (as many texts per class as it labels) and is tested on its test split. On frozen MiniLM features:
GAN-BERT G1 and G2 and their control (the same discriminator with the adversarial part off) at unlabeled pools of
0, 1,000 and all, beside the trained head, features + LR and TF-IDF + LR, which read no unlabeled text, at 5, 20
and 100 labels a class, seeds 0-4; with `--backbones smollm2-both smollm2-hidden smollm2-probabilities`, features +
LR, the head, G1 and its control (whole pool) on SmolLM2's hidden states, token probabilities and both (encoded once:
the first column's store holds the other two). Then with the encoder training (`--part full`), at 5 and 20 labels a
class, seeds 0-2: fine-tuning and adapters, which read no unlabeled text; GAN-BERT G1 and its control at pools of 0,
1,000 and all; G2 on the whole pool; and G1 as the paper ran it (the `tf` preset: 3 epochs) at 5/class on the whole
pool. Before it starts, the full part prints each part's time on this machine as the studio's own estimator (the
Train page's) puts it, and runs the cheapest parts first, each seed's runs together, so a study cut short leaves
whole pairs.
`--pools 0` keeps its GAN-BERT parts to pool 0: with fine-tuning and adapters, the runs the step cap cannot touch,
which can run before the trained-encoder budget is settled.

Runs go through the benches' home and the corpus's records (`bench/records/l2r.jsonl`), so the study resumes
where it stopped. Prints accuracy and macro-F1 with 95% intervals and CPU seconds per run, then the central
table: GAN-BERT − its control, paired by seed, at each labeled amount and pool size. Ends with one JSON line.

Run: .venv/bin/python -m bench.studies.regime [--part frozen|full|both] [--seeds 0 1 2 3 4] [--per-class 5 20 100]
     [--pools 0 1,000 all] [--report-only]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from bench import figures
from bench.sample_runs import BENCH_ENGINE, DEFAULT_HOME, corpus_of, finished, open_home, run_once, sample_parser
from bench.studies.tapt import adapted, on_disk, point_config
from core import compare
from core.backbone.packaged import MINILM, SMOLLM2
from core.compare.seeds import paired
from core.runs import Run, Status
from core.runs.estimate import roughly
from core.train import TrainConfig, resolve
from core.train.adaptation import RECORD
from core.train.methods.presets import floored

FROZEN = {"tfidf-lr": {"method": "tfidf-lr"}, "features-lr": {"method": "features-lr", "frozen": True},
          "head": {"method": "finetune", "frozen": True},
          "ganbert-noise": {"method": "ganbert", "generator": "noise", "frozen": True},
          "ganbert-bow": {"method": "ganbert", "generator": "bow", "frozen": True},
          "ganbert-control": {"method": "ganbert", "adversarial": False, "frozen": True}}
FULL = {"finetune-full": {"method": "finetune"}, "adapter": {"method": "adapter"},
        "ganbert-noise-tf": {"method": "ganbert", "generator": "noise", "gan_preset": "tf"},
        "ganbert-noise-full": {"method": "ganbert", "generator": "noise"},
        "ganbert-bow-full": {"method": "ganbert", "generator": "bow"},
        "ganbert-control-full": {"method": "ganbert", "adversarial": False}}
POOLS = {"0": 0, "1,000": 1000, "all": None}  # unlabeled texts GAN-BERT may read (`unlabeled_limit`)
FULL_AMOUNTS = (5, 20)  # the trained-encoder study's labeled amounts (issue 60); 100/class would cost hours a run
# its parts: (title, the runs of one seed and amount as (name, pool), the amounts it runs at)
FULL_PARTS = [("fine-tuning", [("finetune-full", "–")], FULL_AMOUNTS),
              ("adapters", [("adapter", "–")], FULL_AMOUNTS),
              *((f"G1 and its control, pool {pool}", [("ganbert-control-full", pool), ("ganbert-noise-full", pool)],
                 FULL_AMOUNTS) for pool in POOLS),
              ("G2, whole pool", [("ganbert-bow-full", "all")], FULL_AMOUNTS),
              ("G1 as the paper ran it (tf preset), whole pool", [("ganbert-noise-tf", "all")], (5,))]
# SmolLM2 (issue 63): its hidden states, its token probabilities, and both, each a column beside MiniLM's, for the
# methods that read frozen features, GAN-BERT on the whole pool
SMOLLM2_FEATURES = {f"smollm2-{features}": {"backbone": SMOLLM2, "features": features}
                    for features in ("both", "hidden", "probabilities")}  # both first: the others read its store
SMOLLM2_METHODS = ("features-lr", "head", "ganbert-noise", "ganbert-control")
GAMES = {"ganbert-noise": "G1", "ganbert-bow": "G2", "ganbert-noise-full": "G1", "ganbert-bow-full": "G2",
         "ganbert-noise-tf": "G1 (tf)", "ganbert-bow-tf": "G2 (tf)"}
CONTROL = {"ganbert-noise": "ganbert-control", "ganbert-bow": "ganbert-control",
           "ganbert-noise-full": "ganbert-control-full", "ganbert-bow-full": "ganbert-control-full"}


def plan(part: str, per_class: list[int], seeds: list[int], pools: list[str], backbones: dict[str, dict]
         ) -> list[tuple[str, str, str, int, int, dict]]:
    """(name, pool, backbone, labeled per class, seed, settings) for every run of the study, cheap ones first; the
    trained-encoder part on the base backbone alone. `backbones` maps a column to the settings that choose it."""
    runs = []
    if part in ("frozen", "both"):
        def wanted(name: str, backbone: str) -> bool:  # TF-IDF reads words, not the backbone: the same on every one
            return not ((backbone != "base" and name == "tfidf-lr")
                        or (backbone in SMOLLM2_FEATURES and name not in SMOLLM2_METHODS))

        # the methods that read no unlabeled text first, on every backbone; then GAN-BERT, each seed's runs and
        # their control together, so that a study cut short leaves pairs
        for name, settings in FROZEN.items():
            if not name.startswith("ganbert"):
                runs += [(name, "–", backbone, n, seed, {**settings, "unlabeled_limit": None, **chosen_backbone})
                         for backbone, chosen_backbone in backbones.items() if wanted(name, backbone)
                         for n in per_class for seed in seeds]
        for n in per_class:
            for seed in seeds:
                for backbone, chosen_backbone in backbones.items():
                    chosen = {"all": None} if backbone in SMOLLM2_FEATURES else {p: POOLS[p] for p in pools}
                    runs += [(name, pool, backbone, n, seed, {**settings, "unlabeled_limit": limit, **chosen_backbone})
                             for pool, limit in chosen.items() for name, settings in FROZEN.items()
                             if name.startswith("ganbert") and wanted(name, backbone)]
    return runs


def full_parts(per_class: list[int], seeds: list[int], pools: tuple[str, ...] | list[str] = tuple(POOLS)
               ) -> list[tuple[str, list[tuple[str, str, str, int, int, dict]]]]:
    """The trained-encoder study's parts (`FULL_PARTS`) on the base backbone, seeds 0-2 at most, each as its title
    and its runs in the plan's shape, seed by seed and each seed's runs together. `pools` keeps the GAN-BERT parts
    at those pools, so the parts the step cap cannot touch (no pool, pool 0) can run before the budget is settled."""
    parts = []
    for title, names, amounts in FULL_PARTS:
        runs = [(name, pool, "base", n, seed, {**FULL[name], "unlabeled_limit": POOLS.get(pool)})
                for seed in seeds[:3] for n in amounts if n in per_class for name, pool in names
                if pool == "–" or pool in pools]
        if runs:
            parts.append((title, runs))
    return parts


def cheapest_first(parts: list, estimates: list[tuple[float, int]]) -> list:
    """The parts in order of their estimated time on this machine, each printed with its estimate and how many of
    its runs are still to run (the others are recorded or in this home already)."""
    ordered = sorted(zip(parts, estimates), key=lambda p: p[1][0])
    total, left = sum(len(runs) for _, runs in parts), sum(n for _, n in estimates)
    print(f"The trained-encoder study: {total} runs, {left} still to run, {roughly(sum(s for s, _ in estimates))} "
          "one after another on this machine, as the studio's estimator puts it, cheapest parts first:", flush=True)
    for (title, runs), (seconds, n) in ordered:
        print(f"  {title}: {len(runs)} runs, " + (f"{n} to run, {roughly(seconds)}" if n else "all recorded"),
              flush=True)
    return [part for part, _ in ordered]


def estimated(registry, parts: list, config_of, args) -> list[tuple[float, int]]:
    """Each part's seconds by the studio's estimator (`grid_seconds`, from this home's finished runs where they
    match, else the laptop figures) and its runs still to run, those already finished or recorded left out."""
    from core.runs.estimate import grid_seconds
    from core.train import load_data

    first = resolve(config_of(parts[0][1][0]), registry.home)
    ds = load_data(first, registry.home)
    out = []
    for _, runs in parts:  # every run reads the same texts with the same backbone: one max length, found once
        configs = [resolve(config_of(r).with_(max_len=first.max_len), registry.home) for r in runs]
        left = [c for c in configs if finished(registry, c, any_precision=args.any_precision, corpus=corpus_of(args))
                is None]
        out.append((grid_seconds(registry, left, len(ds.train), None if ds.val is None else len(ds.val),
                                 len(ds.test), len(ds.labels),
                                 extra=0 if ds.unlabeled is None else len(ds.unlabeled)).seconds if left else 0.0,
                    len(left)))
    return out


def adapted_column(registry, corpus: str, report_only: bool) -> Path | None:
    """The folder of the default adaptation to this corpus's train texts (bench/studies/tapt.py), with its weights:
    every run on it, recorded or not, is resolved against them (its tokenizer and depth). A fresh home holds only its
    record, so the adaptation is made again here, or, in a report, its column is left out."""
    config = point_config({}, registry.home, corpus)
    made = adapted(registry, config, train=not report_only)
    folder = None if made is None else made[0]
    if folder is not None and not (folder / RECORD).is_file():
        folder = None if report_only else on_disk(registry, config)
    if folder is None:
        print("the adapted backbone is not in this home (nor made now): its column is left out", file=sys.stderr)
    return folder


def measure(args) -> pd.DataFrame:
    """Run (or reuse) every run of the plan; one row per finished run."""
    opened = open_home(args)
    if opened is None:
        raise SystemExit(2)
    spec, registry = opened
    backbones: dict[str, dict] = {"base": {"backbone": None}} if "base" in args.backbones else {}
    if "adapted" in args.backbones and (folder := adapted_column(registry, corpus_of(args).name, args.report_only)):
        backbones["adapted"] = {"backbone": str(folder)}
    backbones |= {name: SMOLLM2_FEATURES[name] for name in SMOLLM2_FEATURES if name in args.backbones}
    def config_of(run: tuple) -> TrainConfig:
        n, seed, settings = run[3], run[4], run[5]
        return TrainConfig.of(data=spec, fraction=None, per_class=n, seed=seed, tags=("regime",),
                           precision=args.precision, encoder_engine=BENCH_ENGINE, **settings)

    study = plan(args.part, args.per_class, args.seeds, args.pools, backbones)
    if args.part in ("full", "both") and (parts := full_parts(args.per_class, args.seeds, args.pools)):
        ordered = parts if args.report_only else cheapest_first(parts, estimated(registry, parts, config_of, args))
        study += [run for _, runs in ordered for run in runs]
    rows = []
    for name, pool, backbone, n, seed, settings in study:
        config = config_of((name, pool, backbone, n, seed, settings))
        run = run_once(registry, config, train=not args.report_only, any_precision=args.any_precision,
                       corpus=corpus_of(args))
        if run is None:
            continue
        print(f"{name:<22} {backbone:<7} pool {pool:>5} {n:>3}/class seed {seed}: {run.status}" + (
            f" acc {run.metrics['test']['accuracy']:.3f} ({run.metrics.get('cpu_seconds', 0):.0f} CPU s)"
            if run.status == Status.DONE else f" {run.message}"), flush=True)
        if run.status == Status.DONE:
            rows.append(row_of(name, pool, run) | {"backbone": backbone})
    return pd.DataFrame(rows)


def name_of(config: TrainConfig) -> str:
    """A run's name in the study's plan (`FROZEN`, `FULL`), told from its config."""
    if config.method != "ganbert":
        return {"finetune": "head" if config.frozen else "finetune-full"}.get(config.method, config.method)
    if not config.params.adversarial:
        return "ganbert-control" + ("" if config.frozen else "-full")
    if config.params.gan_preset == "tf":
        return f"ganbert-{config.params.generator}-tf"
    return f"ganbert-{config.params.generator}" + ("" if config.frozen else "-full")


def column_of(config: TrainConfig) -> str:
    """A run's backbone column: base (MiniLM), adapted, or SmolLM2 with the features it read."""
    if config.backbone == MINILM:
        return "base"
    return f"smollm2-{config.features}" if config.backbone == SMOLLM2 else "adapted"


def frame_of(runs: list[Run]) -> pd.DataFrame:
    """The study's table from finished runs alone (the records restored, as bench.report reads them)."""
    return pd.DataFrame([row_of(name_of(r.config), pool_of(r.config), r) | {"backbone": column_of(r.config)}
                         for r in runs if r.status == Status.DONE
                         and not (r.config.backbone != MINILM and r.config.method == "tfidf-lr")])


AUTHORS_COPIES = " (the authors' copies alone)"


def pool_of(config: TrainConfig) -> str:
    """A GAN-BERT run's pool as the study names it ("–" for a method that reads none). A studio-preset run recorded
    before the floor on batches without labels, where the floor would have added copies (its record says 1.0:
    bench/migrate_records.py), is another method than today's and has a pool of its own, so it never pairs with or
    averages into a run of today's."""
    if config.method != "ganbert":
        return "–"
    pools = {limit: pool for pool, limit in POOLS.items()}
    pool = pools.get(config.unlabeled_limit, str(config.unlabeled_limit))
    floor = config.params.batches_without_labels
    written = config.params.gan_preset in ("studio", "seed-report") and floor is not None
    return pool + (AUTHORS_COPIES if written and not floored(floor) else "")


def row_of(name: str, pool: str, run: Run) -> dict:
    m = run.metrics
    return {"name": name, "pool": pool, "per_class": run.config.per_class, "seed": run.config.seed,
            "accuracy": m["test"]["accuracy"], "macro_f1": m["test"]["macro_f1"], "cpu": m.get("cpu_seconds"),
            "seconds": m.get("seconds"),
            "unlabeled": m.get("unlabeled"), "labels_read": run.labels_read, "precision": run.config.precision,
            "method": compare.method_name(run)}


def results_table(frame: pd.DataFrame, time: tuple[str, str] = ("cpu", "CPU s")) -> str:
    """One row per method, backbone and pool, one column per labeled amount: accuracy [95% CI], macro-F1, and the
    time per run (`time`: the column and its name; CPU seconds here, wall seconds for a GPU's runs)."""
    amounts = sorted(frame["per_class"].unique())
    column, unit = time
    lines = ["| method | backbone | pool | " + " | ".join(f"{n}/class: accuracy [95% CI], macro-F1, {unit}"
                                                      for n in amounts) + " |",
             "|---|---|---|" + "---:|" * len(amounts)]
    for (method, backbone, pool), rows in frame.groupby(["method", "backbone", "pool"], sort=False):
        cells = [figures.scores(rows[rows["per_class"] == n], column) for n in amounts]
        lines.append(f"| {method} | {backbone} | {pool} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def adds(frame: pd.DataFrame, metric: str = "accuracy") -> list[dict]:
    """GAN-BERT − its control on the same rows, paired by seed, at each labeled amount, pool and backbone."""
    out = []
    keys = ["name", "pool", "per_class", "backbone"]
    for (name, pool, n, backbone), rows in frame[frame["name"].isin(list(CONTROL))].groupby(keys):
        control = frame[(frame["name"] == CONTROL[name]) & (frame["pool"] == pool) & (frame["per_class"] == n)
                        & (frame["backbone"] == backbone)]
        p = paired(name, CONTROL[name], metric, dict(zip(rows["seed"], rows[metric])),
                   dict(zip(control["seed"], control[metric])))
        if p.seeds:
            out.append(pair_row(p) | {"game": GAMES[name], "name": name, "pool": pool, "per_class": int(n),
                                      "backbone": backbone,
                                      "encoder": "trained" if name.endswith("-full") else "frozen"})
    return out


def encoder_adds_table(found: list[dict]) -> str:
    """GAN-BERT − its control with the encoder trained beside the same on frozen features, per labeled amount, pool
    and generator, on the base backbone; the rows that have a trained-encoder pair."""
    def said(a: dict | None) -> str:
        if a is None:
            return "–"
        return f"{figures.difference(a)}, {a['wins']} / {a['losses']}, p {a['p_value']:.3g}"

    by = {(a["per_class"], a["pool"], a["game"], a["encoder"]): a for a in found if a["backbone"] == "base"}
    order = pool_order()
    keys = sorted({k[:3] for k in by if k[3] == "trained"}, key=lambda k: (k[0], order.get(k[1], 9), k[2]))
    lines = ["| labeled | pool | generator | encoder trained: GAN-BERT − control [95% CI], ahead / behind, p "
             "| frozen features: the same |", "|---|---|---|---|---|"]
    lines += [f"| {n}/class | {pool} | {game} | {said(by[(n, pool, game, 'trained')])} | "
              f"{said(by.get((n, pool, game, 'frozen')))} |" for n, pool, game in keys]
    return "\n".join(lines)


def backbone_adds(frame: pd.DataFrame, columns: tuple[str, ...], metric: str = "accuracy") -> list[dict]:
    """A method on each backbone column of `columns` − the same on the base (MiniLM), paired by seed, at each
    labeled amount and pool."""
    out = []
    for (name, pool, n), rows in frame.groupby(["name", "pool", "per_class"]):
        on = {b: dict(zip(r["seed"], r[metric])) for b, r in rows.groupby("backbone")}
        for column in (c for c in columns if c in on and "base" in on):
            p = paired(name, "base", metric, on[column], on["base"])
            if p.seeds:
                out.append(pair_row(p) | {"method": f"{rows['method'].iloc[0]}, {column}", "pool": pool,
                                          "per_class": int(n)})
    return out


def pool_order() -> dict[str, int]:
    """Pools in the study's order, each followed by its runs with the authors' copies alone."""
    order = {}
    for i, pool in enumerate(POOLS):
        order[pool], order[pool + AUTHORS_COPIES] = 2 * i, 2 * i + 1
    return order


def pair_row(p) -> dict:
    return {"n": len(p.seeds), "difference": p.difference.mean, "low": p.difference.low, "high": p.difference.high,
            "wins": p.wins, "losses": p.losses, "p_value": p.p_value, "test": p.test}


def adds_table(found: list[dict], what: str = "game", head: str = "adapted − base") -> str:
    """The paired differences as a table: GAN-BERT − control (`game`), or a backbone − the base (`method`, with
    `head` naming the difference)."""
    head = "GAN-BERT − control" if what == "game" else head
    lines = [f"| labeled | pool | {'generator' if what == 'game' else 'method'} | "
             + ("backbone | " if what == "game" else "") + f"{head}, accuracy [95% CI] | ahead / behind | p |",
             "|---|---|---|" + ("---|" if what == "game" else "") + "---:|---|---:|"]
    order = pool_order()
    for a in sorted(found, key=lambda a: (a["per_class"], order.get(a["pool"], 9), a[what], a.get("backbone", ""))):
        lines.append(f"| {a['per_class']}/class | {a['pool']} | {a[what]} | "
                     + (f"{a['backbone']} | " if what == "game" else "")
                     + f"{figures.difference(a)} | {a['wins']} / {a['losses']} | {a['p_value']:.3g} |")
    return "\n".join(lines)


def main() -> int:
    parser = sample_parser(__doc__, DEFAULT_HOME)
    parser.set_defaults(corpus="l2r", per_class=[5, 20, 100])
    parser.add_argument("--part", choices=("frozen", "full", "both"), default="frozen")
    parser.add_argument("--pools", nargs="+", choices=list(POOLS), default=list(POOLS),
                        help="GAN-BERT's unlabeled pool sizes (all: the whole pool)")
    parser.add_argument("--backbones", nargs="+", choices=("base", "adapted", *SMOLLM2_FEATURES), default=["base"],
                        help="adapted: every frozen method also on the backbone adapted to the corpus's train texts "
                             "with the default settings (bench/studies/tapt.py); smollm2-hidden|probabilities|both: "
                             "features + LR, the head, G1 and its control (whole pool) on SmolLM2's hidden states, "
                             "token probabilities or both")
    args = parser.parse_args()
    frame = measure(args)
    if frame.empty:
        print("no finished runs yet")
        return 0
    print(results_table(frame))
    found = adds(frame)
    print("\nWhat the adversarial part adds (GAN-BERT − control on the same rows, paired by seed):")
    print(adds_table([a for a in found if a["encoder"] == "frozen"]))
    if any(a["encoder"] == "trained" for a in found):
        print("\nWith the encoder trained, beside frozen features:")
        print(encoder_adds_table(found))
    if (adapting := backbone_adds(frame, ("adapted",))):
        print("\nWhat adapting the backbone adds (a method on the adapted backbone − on the base, paired by seed):")
        print(adds_table(adapting, "method"))
    if (smollm2 := backbone_adds(frame, tuple(SMOLLM2_FEATURES))):
        print("\nWhat SmolLM2's features add (a method on them − on MiniLM's, paired by seed):")
        print(adds_table(smollm2, "method", "SmolLM2 − MiniLM"))
    print("runs by precision: " + ", ".join(f"{n} at {p}" for p, n in frame["precision"].value_counts().items()))
    print(json.dumps({"runs": len(frame), "adds": found}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
