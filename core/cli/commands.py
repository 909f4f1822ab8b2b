"""What the commands that load a model do (`explore`, `train`, `sweep`, `predict`); the parser in `core.cli`
only routes to these. `data check` and the registry's commands are in `core.cli.data` and `core.cli.records`,
which import no torch."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tqdm import tqdm

from core.backbone import BackboneError, is_hub_id, prepare_backbone
from core.backbone.download import download
from core.backbone.encode import load_tokenizer
from core.cli.options import UsageError, config_from_args, follow, spec_from_args, sweep_of
from core.compare import training_notes
from core.data import Amount, ColumnMapping, Dataset, load_dataset, load_frame, read_bytes
from core.explore import VIEWS, ExploreOptions, write_report
from core.runs import (
    Registry,
    as_runs_read_it,
    enqueue,
    execute_run,
    failed_on_error,
    grid_seconds,
    logging_into,
    not_yet_run,
    ray_resources,
    set_concurrency,
    use_address,
    use_storage,
)
from core.runs.lifecycle import Status
from core.train import (
    TrainConfig,
    capped_note,
    classify,
    classify_frame,
    explain,
    load_data,
    method_for,
    resolve,
    run_label,
)
from core.train.attribution import STEPS
from core.train.submission import check_format, is_subtask_b, jsonl_format, write_predictions


def cmd_explore(args: argparse.Namespace) -> int:
    ds = load_dataset(spec_from_args(args.path, args), args.home)
    if note := ds.cut_note():
        print(f"note: {note}", file=sys.stderr)
    tokenizer = load_tokenizer(prepare_backbone(args.backbone, home=args.home))
    options = ExploreOptions(max_len=args.max_len, map_method=args.map)
    cache = None if args.no_cache else args.home / "explore"
    with tqdm(total=len(VIEWS) + 1, desc="explore", unit="step", file=sys.stderr) as bar:
        def step(name: str) -> None:
            bar.set_postfix_str(name)
            bar.update(1)
        data = write_report(ds, tokenizer, Path(args.out), options, cache, on_step=step)
    print(json.dumps({"report": str(Path(args.out) / "report.html"), "summary": str(Path(args.out) / "summary.json"),
                      "kl_overall": data["kl_overall"]}))
    return 0


def backend_from_args(args: argparse.Namespace, registry: Registry, config: TrainConfig) -> dict | None:
    """Check the backend flags; for Ray, remember the address and storage, and return the resource
    request of each run (a sweep's runs share --frozen, which is all the request depends on)."""
    if args.backend != "ray":
        return None
    if args.ray_address:
        use_address(registry, args.ray_address)
    if args.ray_storage is not None:
        use_storage(registry, args.ray_storage)
    return ray_resources(config, args.ray_cpus, args.ray_gpu_fraction)


def ensure_backbone(args: argparse.Namespace) -> None:
    """The backbone is there now (exit 2 naming how to get a model that is not cached; a packaged one converted, each
    stage said), or, opted in with --allow-download, a missing hub model is downloaded into the cache first, with a
    progress bar."""
    try:
        prepare_backbone(args.backbone, args.revision, home=args.home, on_stage=lambda done, total, what: print(
            f"converting {args.backbone} from its GGUF file, once for this studio home: {what} ({done + 1} of "
            f"{total})", file=sys.stderr))
    except BackboneError:
        if not (args.allow_download and is_hub_id(args.backbone)):
            raise
        with tqdm(desc=f"download {args.backbone}", unit="B", unit_scale=True, file=sys.stderr) as bar:
            download(args.backbone, args.revision, follow(bar))


def say_settled(configs: list[TrainConfig]) -> None:
    """Tell on stderr what each method changes in the chosen settings (adapters are never frozen)."""
    for config in configs:
        if note := method_for(config).settle_note(config):
            print(f"note: {note}", file=sys.stderr)


def say_estimate(registry: Registry, configs: list[TrainConfig], ds: Dataset) -> None:
    """The runs' estimated time on stderr, as the Train page gives it, and what a CPU without native bf16 means for
    a run that trains a causal LM."""
    if not configs:
        return
    sizes = (len(ds.train), None if ds.val is None else len(ds.val), len(ds.test), len(ds.labels))
    estimate = grid_seconds(registry, configs, *sizes, texts=ds.texts(),
                            extra=0 if ds.unlabeled is None else len(ds.unlabeled), test_texts=list(ds.test["text"]))
    print(f"estimate: {len(configs)} run(s), {estimate.words()}", file=sys.stderr)
    for note in training_notes(configs, estimate):
        print(f"note: {note}", file=sys.stderr)


def say_capped(chosen: list[Amount], ds: Dataset) -> None:
    """Warn on stderr when a count per class asks for more than a class holds (the sampler caps it)."""
    if note := capped_note(chosen, ds.class_counts()["train"].to_dict()):
        print(f"warning: {note}", file=sys.stderr)


def as_before(registry: Registry, config: TrainConfig) -> TrainConfig:
    """The config with its files named as runs here named the same bytes (`as_runs_read_it`), said on stderr."""
    data, notes = as_runs_read_it(registry, config.data)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return config.with_(data=data)


def cmd_train(args: argparse.Namespace) -> int:
    ensure_backbone(args)
    registry = Registry(args.home)
    chosen = as_before(registry, config_from_args(args))
    say_settled([chosen])
    config = resolve(chosen, args.home)
    ds = load_data(config, args.home)
    say_capped([config.labeled], ds)  # bad data: exit 2 now, not a failed run later
    say_estimate(registry, [config], ds)
    if args.backend != "local" and not args.background:
        raise UsageError("--backend ray runs in the background: add --background")
    if args.background:
        resources = backend_from_args(args, registry, config)
        run_id, = enqueue(registry, [config], args.backend, resources)
        print(json.dumps({"run_id": run_id, "status": registry.get(run_id).status}))
        return 0
    run_id = registry.create(config, run_by=os.getpid())  # claimed as it is made: no queue starts it elsewhere
    with tqdm(total=1, desc=run_label(config), unit="step", file=sys.stderr) as bar, \
            logging_into(registry.folder(run_id)):
        def show(event: dict) -> None:
            if event["type"] in ("progress", "evaluation"):
                bar.total = event["total_steps"]
                bar.n = event["step"]
                if event["type"] == "evaluation" and event["val"]:
                    bar.set_postfix_str(f"val macro-F1 {event['val']['macro_f1']:.3f}")
                bar.refresh()
            elif event["type"] == "status":
                tqdm.write(event["message"], file=sys.stderr)
            elif event["type"] == "features":
                bar.set_postfix_str(f"encoding {event['done']}/{event['total']}")
            elif event["type"] == "states":
                bar.set_postfix_str(f"storing states {event['done']}/{event['total']}")
        with failed_on_error(registry, run_id):
            status = execute_run(registry, run_id, show)
    run = registry.get(run_id)
    if status != Status.DONE:
        print(f"run {run_id} ended {status}: {run.message} (its log: {registry.folder(run_id).log})", file=sys.stderr)
    summary = run.summary
    print(json.dumps({k: summary[k] for k in ("run_id", "status", "accuracy", "macro_f1", "mcc", "message")}))
    return 0 if status == Status.DONE else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    ensure_backbone(args)
    registry = Registry(args.home)
    base = as_before(registry, config_from_args(args, sweep=True))
    sweep = sweep_of(args)
    say_settled([sweep.start(base, name) for name in args.method])
    ds = load_data(base, args.home)
    say_capped(sweep.amounts, ds)
    grid = sweep.configs(base, args.home)
    configs = not_yet_run(registry, grid)
    if len(configs) < len(grid):
        print(f"note: {len(grid) - len(configs)} of the grid's {len(grid)} runs are done or queued here already; "
              f"queueing the other {len(configs)}", file=sys.stderr)
    say_estimate(registry, configs, ds)
    if args.concurrency is not None:
        set_concurrency(registry, args.concurrency)
    run_ids = enqueue(registry, configs, args.backend, backend_from_args(args, registry, base))
    print(json.dumps({"run_ids": run_ids, "queued": len(run_ids)}))
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    if not args.text and not args.file:
        raise UsageError("give at least one text, or --file")
    registry = Registry(args.home)
    run = registry.get(args.run_id)
    folder = registry.folder(args.run_id)
    if not folder.has_checkpoint():
        raise UsageError(f"run {run.id} is {run.status} and has no checkpoint to predict with")
    if run.status != Status.DONE:  # its checkpoint is what it had kept when it stopped, never tested
        print(f"warning: run {run.id} is {run.status} ({run.message or 'no message'}): it predicts with the checkpoint "
              "it had kept when it stopped, which was never scored on the test set", file=sys.stderr)
    if args.file:
        target = Path(args.out) if args.out else folder.predictions_for(Path(args.file))
        check_format(target)  # a format the studio cannot write is refused before any work
        return predict_file(folder.load_model(args.home), args, target)
    model = folder.load_model(args.home)
    preds = [p.to_json() for p in classify(model, args.text)]
    if args.explain:  # integrated gradients' steps in a bar: some 36 s a text for SmolLM2 on a CPU
        with tqdm(total=len(preds) * STEPS, desc=f"explain {len(preds)} text(s)", unit="step", file=sys.stderr) as bar:
            for i, (pred, text) in enumerate(zip(preds, args.text)):
                pred["attributions"] = explain(model, text, on_progress=lambda done, total: bar.update(
                    i * STEPS + done - bar.n)).to_json()
                bar.update((i + 1) * STEPS - bar.n)  # an n-gram model's, at once
    print(json.dumps(preds[0] if len(preds) == 1 else preds, indent=2))
    return 0


def predict_file(model, args: argparse.Namespace, target: Path) -> int:
    """Every row of a file, with a progress bar, written to `target` (a SemEval submission for .jsonl, a table
    with probabilities for .csv); the scores too when the file has labels."""
    path = Path(args.file)
    frame, labels = load_frame(read_bytes(path), path.name, ColumnMapping(text=args.text_col, label=args.label_col),
                               require_labels=False)
    if frame.attrs.get("ids") == "row":
        print(f"note: {path.name} has no id column, so the predictions name rows by number (0 is the first)",
              file=sys.stderr)
    with tqdm(total=len(frame), desc="predict", unit="text", file=sys.stderr) as bar:
        out, metrics = classify_frame(model, frame, labels, on_progress=lambda done, total: bar.update(done - bar.n))
    write_predictions(out, frame, target, model.labels)
    summary = {"rows": len(out), "predictions": str(target),
               "format": jsonl_format(model.labels) if target.suffix.lower() == ".jsonl" else "csv"}
    if target.suffix.lower() == ".jsonl" and not is_subtask_b(model.labels):
        print(f"note: {jsonl_format(model.labels)}", file=sys.stderr)
    if metrics is not None:
        summary |= {k: metrics[k] for k in ("accuracy", "macro_f1")}
    elif "unscored" in out.attrs:
        print(f"note: {out.attrs['unscored']}", file=sys.stderr)
    print(json.dumps(summary))
    return 0
