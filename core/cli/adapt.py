"""`python -m core adapt`: continue a backbone's masked-LM pretraining on a dataset's texts (TAPT), in the
foreground with a progress bar or queued in the background like a training run. Its last stdout line is JSON with
at least `backbone` (what `--backbone` then takes) and its `status`; `cpu_seconds` once the backbone exists."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import fields

from tqdm import tqdm

from core.cli.commands import as_before, ensure_backbone
from core.cli.options import spec_from_args
from core.data import CleaningConfig
from core.runs import Registry, adapting, enqueue, execute_run, failed_on_error, logging_into
from core.runs.lifecycle import Status
from core.train.adaptation import RECORD, AdaptConfig, adapted_folder, pinned


def config_of(args: argparse.Namespace) -> AdaptConfig:
    splits = tuple(dict.fromkeys(["train", *args.splits]))
    config = AdaptConfig(data=spec_from_args(args.train, args),
                         cleaning=CleaningConfig(**{f.name: getattr(args, f.name) for f in fields(CleaningConfig)}),
                         backbone=args.backbone, revision=args.revision, splits=splits, epochs=args.epochs,
                         max_steps=args.max_steps, lr=args.lr, max_len=args.max_len, batch_size=args.batch_size,
                         mask=args.mask, seed=args.seed, precision=args.precision, device=args.device)
    return config


def cmd_adapt(args: argparse.Namespace) -> int:
    asked = config_of(args)  # checked before the backbone is looked for: a causal LM is refused, not converted
    ensure_backbone(args)
    registry = Registry(args.home)
    # a file with the bytes of one runs read is named as they named it; then pinned as launched (`pinned`)
    config = pinned(as_before(registry, asked), args.home)
    out = adapted_folder(config, args.home)
    if (out / RECORD).is_file():  # the same adaptation made before: its backbone is there
        record = json.loads((out / RECORD).read_text())
        print(f"note: already adapted with these settings: {out}", file=sys.stderr)
        print(json.dumps({"backbone": str(out), "cpu_seconds": record["cpu_seconds"], "status": Status.DONE,
                          "reused": True}))
        return 0
    if args.background:
        going = adapting(registry, config)
        if going:
            print("note: this adaptation is already queued or running; its job:", file=sys.stderr)
        run_id = going[0].id if going else enqueue(registry, [config])[0]
        print(json.dumps({"run_id": run_id, "status": registry.get(run_id).status, "backbone": str(out)}))
        return 0
    run_id = registry.create(config, run_by=os.getpid())  # claimed as it is made: no queue starts it elsewhere
    with tqdm(total=1, desc=config.label, unit="step", file=sys.stderr) as bar, logging_into(registry.folder(run_id)):
        def show(event: dict) -> None:
            if event["type"] in ("progress", "evaluation"):
                bar.total, bar.n = event["total_steps"], event["step"]
                if event["type"] == "evaluation":
                    bar.set_postfix_str(f"masked-LM loss {event['losses']['mlm_loss']:.3f}")
                bar.refresh()
            elif event["type"] == "status":
                tqdm.write(event["message"], file=sys.stderr)
        with failed_on_error(registry, run_id):
            status = execute_run(registry, run_id, show)
    run = registry.get(run_id)
    if status != Status.DONE:
        print(f"adaptation {run_id} ended {status}: {run.message} (its log: {registry.folder(run_id).log})",
              file=sys.stderr)
        print(json.dumps({"run_id": run_id, "status": status, "message": run.message}))
        return 1
    print(json.dumps({"run_id": run_id, "status": status, **run.metrics}))
    return 0
