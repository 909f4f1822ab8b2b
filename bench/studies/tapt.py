"""Task-adaptive pretraining's settings, chosen by measurement (`bench/studies/defaults.py --mode tapt`): MiniLM adapted
to L2R's 11,421 train texts (labels unused) at 1 and 3 epochs, two learning rates and two max lengths, each adapted
backbone judged by frozen features + LR at 20 labels a class on L2R's dev split, 3 seeds, beside the base backbone on
the same rows, with the CPU time the adaptation took.

Adapted backbones live in the benches' home (`backbones/`); what each was made from and what it cost is kept in
`bench/records/adapt.jsonl`, and the runs on them in the corpus's records, so the table prints again from the
records (`--report-only`) on a machine that no longer has the weights.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from bench import figures
from bench.sample_runs import BENCH_ENGINE, CORPORA, RECORDS_DIR, run_once
from core.compare.seeds import paired
from core.data import DataSpec
from core.runs import Registry, Status, adapting, execute_run, logging_into
from core.train import TrainConfig
from core.train.adaptation import RECORD, AdaptConfig, adapted_folder, pinned

ADAPT_RECORDS = RECORDS_DIR / "adapt.jsonl"
# cheapest first, so a stopped sweep has its short rows: one epoch at two rates, 3 epochs, and one epoch at twice the
# max length, each point whole (a point that leaned on `AdaptConfig`'s defaults changed when they did). 10 epochs is
# left out: an epoch of the 11k pool took 15.9 CPU minutes at 128 tokens here, so 10 would take 2.6 CPU hours, far
# past the half hour a laptop default may take. The 256-token point (twice an epoch's cost) was stopped for time.
POINTS = [{"epochs": 1, "lr": 1e-4}, {"epochs": 1, "lr": 3e-4}, {"epochs": 3, "lr": 1e-4},
          {"epochs": 1, "lr": 1e-4, "max_len": 256}]


def point_config(point: dict, home: Path, corpus: str = "l2r") -> AdaptConfig:
    """An adaptation to a corpus's train texts (L2R's by default): its spec names the train file alone, and the
    folder is named by the texts, so every bench (and the Train page) adapting to them with these settings finds the
    same backbone."""
    found = CORPORA[corpus]
    return pinned(AdaptConfig(data=DataSpec(train=str(found.folder / found.files["train"])), **point), home)


def recorded_adaptations() -> dict[str, dict]:
    if not ADAPT_RECORDS.exists():
        return {}
    return {r["folder"]: r for r in map(json.loads, ADAPT_RECORDS.read_text().splitlines()) if r}


def adapted(registry: Registry, config: AdaptConfig, train: bool) -> tuple[Path, dict] | None:
    """The adapted backbone of `config` and its record: made before (in the home, or only recorded), or made now."""
    out = adapted_folder(config, registry.home)
    while not (out / RECORD).is_file() and adapting(registry, config):
        time.sleep(30)  # the same adaptation queued or running (from the Train page, say): wait for it, not twice
    if (out / RECORD).is_file():
        record = json.loads((out / RECORD).read_text())
    elif out.name in (known := recorded_adaptations()):
        return out, known[out.name]
    elif not train:
        return None
    else:
        record = make(registry, config)
    if out.name not in recorded_adaptations():
        entry = {"folder": out.name, **record}
        with ADAPT_RECORDS.open("a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
    return out, record


def make(registry: Registry, config: AdaptConfig) -> dict:
    """Adapt now (a run in the registry) and return the new backbone's record."""
    run_id = registry.create(config)
    registry.claim(run_id)
    with logging_into(registry.folder(run_id)):
        status = execute_run(registry, run_id)
    if status != Status.DONE:
        raise SystemExit(f"adaptation {run_id} ended {status}: {registry.get(run_id).message}")
    return json.loads((adapted_folder(config, registry.home) / RECORD).read_text())


def on_disk(registry: Registry, config: AdaptConfig) -> Path:
    """The adapted backbone's folder, made again when it is only recorded (a fresh bench home has the records, not
    the weights): for a run about to load it."""
    out = adapted_folder(config, registry.home)
    if not (out / RECORD).is_file():
        print(f"the adapted backbone {out.name} is recorded but not in this home: adapting again", file=sys.stderr)
        make(registry, config)
    return out


def judged(registry: Registry, backbone: str | None, seeds: list[int], train: bool, per_class: int = 20
           ) -> dict[int, float]:
    """Features + LR at `per_class` on L2R's dev split, per seed, on a backbone (None: the bundled MiniLM)."""
    corpus = CORPORA["l2r-dev"]
    if corpus.spec() is None:
        return {}
    scores = {}
    for seed in seeds:
        config = TrainConfig(data=corpus.spec(), method="features-lr", frozen=True, fraction=None,
                             per_class=per_class, seed=seed, backbone=backbone, tags=("tapt",),
                             encoder_engine=BENCH_ENGINE)
        run = run_once(registry, config, train=train, corpus=corpus)
        if run is not None and run.status == Status.DONE:
            scores[seed] = run.metrics["test"]["accuracy"]
    return scores


HEAD = ["| adaptation | CPU min | masked-LM loss before → after | features + LR, 20/class, L2R dev [95% CI] "
        "| adapted − base (paired) |", "|---|---:|---|---:|---:|"]


def base_row(base: dict[int, float]) -> str:
    return f"| none (the bundled MiniLM) | – | – | {figures.mean(base.values(), empty='not run')} | – |"


def table_row(record: dict, scores: dict[int, float], base: dict[int, float]) -> tuple[str, float | None]:
    """One adaptation's row, from its record (`adapted.json`, or its line in the records) and the scores of features +
    LR on it by seed, beside the base's; and what it adds (None without a shared seed). bench.report writes the
    same table from the records."""
    d, default = paired("adapted", "base", "accuracy", scores, base).difference, AdaptConfig()  # reads no texts
    settings = (record["epochs"], record["lr"], record["max_len"])
    name = (f"epochs {settings[0]}, lr {settings[1]:g}, max_len {settings[2]}"
            + " (default)" * (settings == (default.epochs, default.lr, default.max_len)))
    adds = figures.difference(d, n=False)
    return (f"| {name} | {record['cpu_seconds'] / 60:.1f} | {record['mlm_loss_before']:.3f} → "
            f"{record['mlm_loss_after']:.3f} | {figures.mean(scores.values(), empty='not run')} | {adds} |",
            d.mean if d.n else None)


def tapt_table(registry: Registry, seeds: list[int], train: bool) -> tuple[str, dict]:
    """The settings table (one row per point, the base backbone first) as markdown, and its figures."""
    base = judged(registry, None, seeds, train)
    lines, rows = [*HEAD, base_row(base)], []
    for point in POINTS:
        made = adapted(registry, point_config(point, registry.home), train)
        if made is None:
            continue
        out, record = made
        scores = judged(registry, str(out), seeds, train)
        line, adds = table_row(record, scores, base)
        lines.append(line)
        print(line, flush=True)
        rows.append({"point": point, "folder": out.name, "cpu_seconds": record["cpu_seconds"],
                     "accuracy": scores, "adds": adds})
    return "\n".join(lines), {"base": base, "rows": rows}
