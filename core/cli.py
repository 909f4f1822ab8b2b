"""The command line: `python -m core ...`. Only argument parsing lives here; the work is in core.

Exit codes: 0 success, 2 bad input or usage (with a one-line message on stderr), 1 internal failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.backbone import resolve_backbone
from core.cleaning import CleaningConfig
from core.config import ADAPTER_KINDS, GANBERT_PRESETS, GENERATORS, METHODS, TrainConfig, grid
from core.corpus import CorpusConfig
from core.data import ColumnMapping, DataSpec, Dataset, load_dataset
from core.errors import InputError
from core.paths import studio_home
from core.runs import BACKENDS, Registry

BUILTIN = "builtin"


class UsageError(InputError):
    """A bad flag value, reported like bad data: message and exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep its message short and on stderr
        self.print_usage(sys.stderr)
        raise UsageError(message)


def add_data_args(p: argparse.ArgumentParser, train_flag: bool = False) -> None:
    """Data arguments shared by every command that reads a dataset."""
    if train_flag:
        p.add_argument("--train", required=True, help="train file, a directory of subtaskB_*.jsonl files, "
                                                       f"or '{BUILTIN}' for the synthetic corpus")
    p.add_argument("--test", help="test file (labels optional)")
    p.add_argument("--val", help="validation file; default: 10%% of train, stratified")
    p.add_argument("--text-col", default="text", help="column holding the text (default: text)")
    p.add_argument("--label-col", default="label", help="column holding the label (default: label)")
    p.add_argument("--source-col", default="source", help="optional column holding the source/domain")
    p.add_argument("--split-col", default="split", help="optional column holding train/val/test")


def spec_from_args(train: str, args: argparse.Namespace, unlabeled: str | None = None) -> DataSpec:
    if train == BUILTIN:
        return DataSpec(builtin=CorpusConfig())
    mapping = ColumnMapping(text=args.text_col, label=args.label_col, source=args.source_col, split=args.split_col)
    return DataSpec(train=train, test=args.test, val=args.val, unlabeled=unlabeled, mapping=mapping)


def describe(ds: Dataset) -> dict:
    counts = ds.class_counts()
    return {"dataset": ds.name, "synthetic": ds.synthetic, "labels": list(ds.labels),
            "rows": {split: int(len(frame)) for split, frame in ds.splits.items()},
            "class_counts": {split: dict(zip(ds.labels, map(int, col))) for split, col in counts.items()},
            "absent_classes": [c for c, n in zip(ds.labels, counts["train"]) if n == 0]}


def cmd_data_check(args: argparse.Namespace) -> int:
    ds = load_dataset(spec_from_args(args.path, args))
    info = describe(ds)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{info['dataset']}: " + ", ".join(f"{n} {s}" for s, n in info["rows"].items()) + " rows")
    print(ds.class_counts().to_string())
    if info["absent_classes"]:
        print(f"note: declared but absent from train: {', '.join(info['absent_classes'])}")
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from core.backbone import load_tokenizer
    from core.report import VIEWS, ExploreOptions, write_report

    ds = load_dataset(spec_from_args(args.path, args))
    tokenizer = load_tokenizer(args.backbone)
    options = ExploreOptions(max_len=args.max_len, map_method=args.map)
    cache = None if args.no_cache else studio_home() / "explore"
    with tqdm(total=len(VIEWS) + 1, desc="explore", unit="step", file=sys.stderr) as bar:
        def step(name: str) -> None:
            bar.set_postfix_str(name)
            bar.update(1)
        data = write_report(ds, tokenizer, Path(args.out), options, cache, on_step=step)
    print(json.dumps({"report": str(Path(args.out) / "report.html"), "summary": str(Path(args.out) / "summary.json"),
                      "kl_overall": data["kl_overall"]}))
    return 0


def add_train_args(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    """Training flags; `sweep` takes lists where `train` takes one value."""
    add_data_args(p, train_flag=True)
    p.add_argument("--unlabeled", help="extra texts for GAN-BERT's unlabeled set (labels in it are ignored)")
    if sweep:
        p.add_argument("--methods", nargs="+", choices=METHODS, default=["finetune", "ganbert"], help="methods to run")
        p.add_argument("--generators", nargs="+", choices=GENERATORS, default=["noise", "bow"],
                       help="GAN-BERT generators (G1 noise, G2 bag of words)")
        p.add_argument("--fractions", nargs="+", type=float, default=[0.01, 0.05, 0.1, 0.5],
                       help="labeled fractions (0.01 is 1%%)")
        p.add_argument("--seeds", nargs="+", type=int, default=[0], help="seeds")
        p.add_argument("--concurrency", type=int, help="local runs at once (default: one per GPU, else one)")
        add_backend_args(p)
    else:
        p.add_argument("--method", choices=METHODS, required=True, help="finetune, adapter or ganbert")
        p.add_argument("--generator", choices=GENERATORS, default="noise", help="GAN-BERT: noise (G1) or bow (G2)")
        share = p.add_mutually_exclusive_group(required=True)
        share.add_argument("--fraction", type=float, help="labeled share of the train pool (0.01 is 1%%)")
        share.add_argument("--per-class", type=int, help="labeled texts per class")
        p.add_argument("--seed", type=int, default=0, help="seed for sampling and initialisation")
        p.add_argument("--background", action="store_true", help="queue the run and return its id at once")
        add_backend_args(p)
    p.add_argument("--epochs", type=int, default=3, help="maximum epochs (early stopping may end sooner)")
    p.add_argument("--patience", type=int, default=3,
                   help="early stopping: stop after this many epochs without a better validation macro-F1")
    p.add_argument("--max-len", type=int, default=128, help="tokens per text (longer texts are truncated)")
    p.add_argument("--batch-size", type=int,
                   help="texts per batch (default: 16; frozen: 64, GAN-BERT 256)")
    p.add_argument("--lr", type=float, help="learning rate (default: 2e-5 encoder, 1e-4 adapters, 1e-3 frozen)")
    p.add_argument("--frozen", action="store_true", help="frozen encoder with cached features: fast on a CPU")
    p.add_argument("--pooling", choices=("cls", "mean", "layers"), help="default: layers frozen, else mean")
    p.add_argument("--backbone", help="local Hugging Face model folder (default: the bundled MiniLM)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto takes a GPU if any")
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast for the encoder")
    p.add_argument("--adapter", choices=tuple(ADAPTER_KINDS), default="houlsby", help="adapter architecture")
    p.add_argument("--reduction-factor", type=int, default=16, help="adapter bottleneck: hidden size / this")
    p.add_argument("--gan-preset", choices=GANBERT_PRESETS, default="official", help="GAN-BERT layer sizes")
    p.add_argument("--noise", choices=("uniform", "gaussian"), default="uniform", help="G1 noise distribution")
    p.add_argument("--expand-contractions", action="store_true", help="cleaning: expand contractions")
    p.add_argument("--strip-special", action="store_true", help="cleaning: strip special characters and digits")
    p.add_argument("--lowercase", action="store_true", help="cleaning: lowercase")
    p.add_argument("--tag", action="append", default=[], help="a tag to filter runs by (repeatable)")


def add_backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="where background runs execute: local processes, or tasks on a Ray cluster")
    p.add_argument("--ray-address", help="Ray cluster to use (default: RAY_ADDRESS, the latest local cluster, "
                                         "else a new local instance)")
    p.add_argument("--ray-storage", help="where Ray runs write their results, then copied here: an absolute "
                                         "folder the nodes share or a URI such as s3://bucket/studio "
                                         "(default: sent back directly)")
    p.add_argument("--ray-cpus", type=float, default=1.0, help="CPUs each Ray run asks for")
    p.add_argument("--ray-gpu-fraction", type=float, default=1.0,
                   help="share of a GPU each frozen-feature Ray run asks for (e.g. 0.25: four per GPU)")


def backend_from_args(args: argparse.Namespace, registry: Registry, config: TrainConfig) -> dict | None:
    """Check the backend flags; for Ray, remember the address and storage, and return the resource
    request of each run (a sweep's runs share --frozen, which is all the request depends on)."""
    from core.ray_runs import ray_resources, use_address, use_storage

    if args.backend != "ray":
        return None
    if args.ray_address:
        use_address(registry, args.ray_address)
    if args.ray_storage is not None:
        use_storage(registry, args.ray_storage)
    return ray_resources(config, args.ray_cpus, args.ray_gpu_fraction)


def config_from_args(args: argparse.Namespace, **overrides) -> TrainConfig:
    values = dict(
        data=spec_from_args(args.train, args, args.unlabeled),
        cleaning=CleaningConfig(args.expand_contractions, args.strip_special, args.lowercase),
        epochs=args.epochs, patience=args.patience, max_len=args.max_len, batch_size=args.batch_size, lr=args.lr,
        frozen=args.frozen,
        pooling=args.pooling, backbone=args.backbone, device=args.device, bf16=args.bf16,
        adapter_kind=args.adapter, reduction_factor=args.reduction_factor, gan_preset=args.gan_preset,
        noise=args.noise, tags=tuple(args.tag))
    if hasattr(args, "method"):
        values.update(method=args.method, generator=args.generator, fraction=args.fraction,
                      per_class=args.per_class, seed=args.seed)
    values.update(overrides)
    return TrainConfig(**values)


def cmd_train(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from core.jobs import submit
    from core.training import load_data
    from core.worker import execute_run

    config = config_from_args(args)
    resolve_backbone(config.backbone)
    load_data(config)  # bad data: exit 2 now, not a failed run later
    registry = Registry()
    if args.backend != "local" and not args.background:
        raise UsageError("--backend ray runs in the background: add --background")
    if args.background:
        run_id = submit(registry, config, backend=args.backend, resources=backend_from_args(args, registry, config))
        print(json.dumps({"run_id": run_id, "status": registry.get(run_id).status}))
        return 0
    run_id = registry.create(config)
    registry.claim(run_id)
    with tqdm(total=1, desc=config.label(), unit="step", file=sys.stderr) as bar:
        def show(event: dict) -> None:
            if event["type"] in ("progress", "epoch"):
                bar.total = event["total_steps"]
                bar.n = event["step"]
                if event["type"] == "epoch":
                    bar.set_postfix_str(f"epoch {event['epoch']} val macro-F1 {event['val']['macro_f1']:.3f}")
                bar.refresh()
            elif event["type"] == "features":
                bar.set_postfix_str(f"encoding {event['done']}/{event['total']}")
        status = execute_run(registry, run_id, show)
    run = registry.get(run_id)
    if status != "done":
        print(f"run {run_id} ended {status}: {run.message}", file=sys.stderr)
    summary = run.summary
    print(json.dumps({k: summary[k] for k in ("run_id", "status", "accuracy", "macro_f1", "mcc", "message")}))
    return 0 if status == "done" else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from core.jobs import pump, set_concurrency
    from core.training import load_data

    base = config_from_args(args, method="finetune", fraction=args.fractions[0])
    resolve_backbone(base.backbone)
    load_data(base)
    configs = grid(base, args.methods, args.generators, args.fractions, None, args.seeds)
    registry = Registry()
    if args.concurrency is not None:
        set_concurrency(registry, args.concurrency)
    resources = backend_from_args(args, registry, base)
    run_ids = [registry.create(c, args.backend, resources) for c in configs]
    pump(registry)
    print(json.dumps({"run_ids": run_ids, "queued": len(run_ids)}))
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from core.jobs import pump

    registry = Registry()
    pump(registry)
    rows = [r.summary for r in registry.list()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no runs yet: start one with `python -m core train ...`")
        return 0
    for r in rows:
        score = f"acc {r['accuracy']:.3f} F1 {r['macro_f1']:.3f}" if r["accuracy"] is not None else f"{r['progress']:.0%}"
        print(f"{r['run_id']}  {r['status']:<11} {r['label']:<40} {score}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from core.jobs import cancel

    status = cancel(Registry(), args.run_id)
    print(json.dumps({"run_id": args.run_id, "status": status}))
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from core.predict import classify, load_run_model

    if not args.text:
        raise UsageError("give at least one text")
    model = load_run_model(Registry(), args.run_id)
    preds = [p.to_json() for p in classify(model, args.text)]
    print(json.dumps(preds[0] if len(preds) == 1 else preds, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m core", description="GAN-BERT Studio: explore corpora, train low-label "
                                                          "classifiers, compare runs, classify texts.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    data = sub.add_parser("data", help="check a dataset").add_subparsers(dest="data_command", required=True,
                                                                        parser_class=_Parser)
    check = data.add_parser("check", help="validate a dataset and print its class counts")
    check.add_argument("path", help=f"file, directory of official files, or '{BUILTIN}'")
    add_data_args(check)
    check.add_argument("--json", action="store_true", help="print the summary as JSON")
    check.set_defaults(func=cmd_data_check)

    exp = sub.add_parser("explore", help="write an HTML exploration report and summary.json")
    exp.add_argument("path", help=f"file, directory of official files, or '{BUILTIN}'")
    add_data_args(exp)
    exp.add_argument("--out", required=True, help="output folder")
    exp.add_argument("--backbone", help="local model folder whose tokenizer counts tokens (default: MiniLM)")
    exp.add_argument("--max-len", type=int, default=128, help="token limit shown on length charts")
    exp.add_argument("--map", choices=("pca", "umap"), default="pca", help="2-D map method")
    exp.add_argument("--no-cache", action="store_true", help="recompute every view")
    exp.set_defaults(func=cmd_explore)

    tr = sub.add_parser("train", help="train one run (foreground with a progress bar, or --background)")
    add_train_args(tr)
    tr.set_defaults(func=cmd_train)

    sw = sub.add_parser("sweep", help="queue methods × generators × fractions × seeds in the background")
    add_train_args(sw, sweep=True)
    sw.set_defaults(func=cmd_sweep)

    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--json", action="store_true", help="print JSON")
    runs.set_defaults(func=cmd_runs)

    cn = sub.add_parser("cancel", help="cancel a queued or running run")
    cn.add_argument("run_id")
    cn.set_defaults(func=cmd_cancel)

    pr = sub.add_parser("predict", help="classify texts with a run's best checkpoint")
    pr.add_argument("run_id")
    pr.add_argument("text", nargs="*", help="texts to classify")
    pr.set_defaults(func=cmd_predict)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
