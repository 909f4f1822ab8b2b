"""The command line: `python -m core ...`. Only argument parsing lives here; the work is in core.

Exit codes: 0 success, 2 bad input or usage (with a one-line message on stderr), 1 internal failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.corpus import CorpusConfig
from core.data import ColumnMapping, DataSpec, Dataset, load_dataset
from core.errors import InputError
from core.paths import studio_home

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
