"""What the benches on the real M4 sample share: the sample's data spec, and running a config through the
registry once, so a bench cut short (or a later session with the same studio home) goes on where it stopped
instead of training the same run again."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.environment import prepare  # noqa: E402

prepare()  # before torch loads: offline, reproducible sums

from core.data import DataSpec  # noqa: E402
from core.runs import Registry, Run, execute_run  # noqa: E402
from core.train import TrainConfig, method_for, resolve  # noqa: E402

# Fine-tuning's trained-encoder rate until bench/defaults.py measured it: run_glue's README example, and the
# SemEval RoBERTa baseline's.
FINETUNE_LR_UNTIL_MEASURED = 2e-5
SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "m4-sample"
# One home for every sample bench, so a run one bench needs and another has finished is not trained twice,
# outside /tmp and the work tree, which a later session on the same machine may not find as they were.
DEFAULT_HOME = str(Path.home() / ".cache" / "gan-bert-studio" / "bench")


def sample_spec() -> DataSpec | None:
    """Train on the sample's train file, test on its dev file; None when the sample is not beside the checkout."""
    if not (SAMPLE / "train.jsonl").exists():
        print(f"the real sample is not at {SAMPLE}", file=sys.stderr)
        return None
    return DataSpec(train=str(SAMPLE / "train.jsonl"), test=str(SAMPLE / "dev.jsonl"))


def sample_parser(doc: str, home: str) -> argparse.ArgumentParser:
    """The flags every sample bench takes: its studio home (kept, so runs are reused), seeds, amounts, and a
    report from the runs already there."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default=home)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--per-class", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--report-only", action="store_true", help="the table from the runs in --home")
    return parser


def open_home(args: argparse.Namespace) -> tuple[DataSpec, Registry] | None:
    """The sample and the bench's registry (under --home), or None when the sample is not there."""
    spec = sample_spec()
    if spec is None:
        return None
    os.environ["STUDIO_HOME"] = args.home
    return spec, Registry()


def identity(config: TrainConfig) -> str:
    """A run's settings without its tags: two benches asking for the same run share it."""
    raw = asdict(config)
    raw.pop("tags")
    return json.dumps(raw, sort_keys=True, default=str)


def as_ran(config: TrainConfig) -> TrainConfig:
    """A stored config with the learning rate and batch it ran at. Runs stored before those were written in
    (2026-11-25) left them to the method and ran at that day's defaults: today's, but for fine-tuning's rate
    with the encoder training, which bench/defaults.py has moved since."""
    settled = method_for(config).settle(config)
    if config.lr is None and config.method == "finetune" and not settled.frozen:
        return settled.with_(lr=FINETUNE_LR_UNTIL_MEASURED)
    return settled


def run_once(registry: Registry, config: TrainConfig, train: bool = True) -> Run | None:
    """The finished run of this config (validated as a launch would), training it only if none is done yet
    (with `train` off, None then)."""
    config = resolve(config)
    wanted = identity(config)
    for run in registry.list(statuses=("done",)):
        settled = as_ran(run.config)
        if identity(settled) == wanted:
            return replace(run, config=settled)
    if not train:
        return None
    run_id = registry.create(config)
    registry.claim(run_id)
    execute_run(registry, run_id)
    return registry.get(run_id)
