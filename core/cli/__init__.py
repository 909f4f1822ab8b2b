"""The command line: `python -m core ...`. Only the parser lives here, built without torch or transformers;
the work is in `commands`, `data` and `records`, imported once a command runs.

Exit codes: 0 success, 2 bad input or usage (with a one-line message on stderr), 1 internal failure.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys

from core.cli.adapt_options import add_adapt_args
from core.cli.options import BUILTIN, Parser, add_backend_args, add_config_args, add_data_args
from core.errors import InputError
from core.paths import home_from_environment


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m core", description="GAN-BERT Studio: explore corpora, train low-label "
                                                          "classifiers, compare runs, classify texts.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    data = sub.add_parser("data", help="check a dataset; clean stored uploads").add_subparsers(
        dest="data_command", required=True, parser_class=Parser)
    check = data.add_parser("check", help="validate a dataset and print its class counts")
    check.add_argument("path", help=f"file, directory of official files, or '{BUILTIN}'")
    add_data_args(check)
    check.add_argument("--json", action="store_true", help="print the summary as JSON")
    check.set_defaults(func="data:cmd_data_check")
    clean = data.add_parser("clean-uploads", help="remove uploaded files no run or workspace names, past an age")
    clean.add_argument("--older-than", type=float, default=30.0, metavar="DAYS",
                       help="only uploads not touched for this many days (default: 30)")
    clean.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
    clean.set_defaults(func="data:cmd_clean_uploads")

    exp = sub.add_parser("explore", help="write an HTML exploration report and summary.json")
    exp.add_argument("path", help=f"file, directory of official files, or '{BUILTIN}'")
    add_data_args(exp)
    exp.add_argument("--out", required=True, help="output folder")
    exp.add_argument("--backbone", help="model folder or cached hub id whose tokenizer counts tokens (default: MiniLM)")
    exp.add_argument("--max-len", type=int, default=128, help="token limit shown on length charts")
    exp.add_argument("--map", choices=("pca", "umap"), default="pca", help="2-D map method")
    exp.add_argument("--no-cache", action="store_true", help="recompute every view")
    exp.set_defaults(func="commands:cmd_explore")

    tr = sub.add_parser("train", help="train one run (foreground with a progress bar, or --background)")
    add_config_args(tr)
    tr.add_argument("--background", action="store_true", help="queue the run and return its id at once")
    add_backend_args(tr)
    tr.set_defaults(func="commands:cmd_train")

    sw = sub.add_parser("sweep", help="queue methods × generators × labeled amounts × seeds in the background")
    add_config_args(sw, sweep=True)
    sw.add_argument("--concurrency", type=int, help="local runs at once (default: one per GPU, else one)")
    add_backend_args(sw)
    sw.set_defaults(func="commands:cmd_sweep")

    ad = sub.add_parser("adapt", help="adapt a backbone to a dataset's texts: masked-LM pretraining continued on them "
                                      "(TAPT), labels unused; the result is a backbone every method can use")
    add_data_args(ad, train_flag=True)
    add_adapt_args(ad)
    ad.set_defaults(func="adapt:cmd_adapt")

    lb = sub.add_parser("label", help="label a corpus text by text as a strategy picks them (active learning), export "
                                      "the labels as a dataset, or --simulate a strategy with the corpus's labels")
    lb.add_argument("path", help=f"file or directory of texts (labels, where it has them, are never shown), or "
                                 f"'{BUILTIN}'")
    add_data_args(lb)
    lb.add_argument("--strategy", default="margin", help="which texts to pick: random, entropy, margin (breaking ties, "
                                                         "the default: docs/labeling.md), typiclust, hybrid, or, with "
                                                         "--simulate, stratified")
    lb.add_argument("--backbone", help="whose frozen features score the texts (default: the bundled MiniLM)")
    lb.add_argument("--seed", type=int, default=0, help="the strategy's random stream")
    lb.add_argument("--export", metavar="DIR", help="write the labels so far as labeled.jsonl, unlabeled.jsonl and "
                                                    "test.jsonl in DIR, and print the spec to train on")
    lb.add_argument("--simulate", action="store_true", help="run the strategy with the corpus's own labels as the "
                                                            "oracle, scored on its test split at each label count")
    lb.add_argument("--budget", type=int, default=100, help="labels a simulation goes to (default: 100)")
    lb.add_argument("--json", action="store_true", help="a simulation's points as JSON")
    lb.set_defaults(func="label:cmd_label")

    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--json", action="store_true", help="print JSON")
    runs.set_defaults(func="records:cmd_runs")

    cp = sub.add_parser("compare", help="groups over seeds with 95%% CIs, paired tests between groups, verdicts")
    cp.add_argument("--tag", action="append", help="only runs with this tag (repeatable)")
    cp.add_argument("--metric", choices=("accuracy", "macro_f1", "mcc"), default="accuracy",
                    help="the metric the text output and the verdicts rank by (JSON pairs carry every metric)")
    cp.add_argument("--json", action="store_true", help="print JSON: groups, pairs and verdicts")
    cp.set_defaults(func="records:cmd_compare")

    st = sub.add_parser("states", help="what the stored states of top-K runs hold (each text's states below the "
                                       "layers a run trains), or --clear them")
    st.add_argument("--clear", action="store_true", help="delete every stored state; a run reading them computes its "
                                                         "texts again")
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func="stores:cmd_states")

    cn = sub.add_parser("cancel", help="cancel queued or running runs (together: none of them starts meanwhile)")
    cn.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    cn.set_defaults(func="records:cmd_cancel")

    ex = sub.add_parser("export", help="finished runs into an MLflow tracking store: params, metrics, curves, files "
                                       "and the model as an MLflow pyfunc (needs `make setup-mlflow`)")
    ex.add_argument("run_ids", nargs="*", metavar="RUN_ID")
    ex.add_argument("--all", action="store_true", help="every finished run")
    ex.add_argument("--tag", action="append", help="the finished runs with this tag (repeatable)")
    ex.add_argument("--mlflow", metavar="URI", help="the tracking URI (default: sqlite:/// mlflow.db in the studio "
                                                    "home); exporting a run again updates its MLflow run")
    ex.set_defaults(func="export:cmd_export")

    pr = sub.add_parser("predict", help="classify texts (or every row of a file) with a run's checkpoint")
    pr.add_argument("run_id")
    pr.add_argument("text", nargs="*", help="texts to classify")
    pr.add_argument("--explain", action="store_true",
                    help="add per-token attributions for the predicted class ({token, score} in text order)")
    pr.add_argument("--file", help="a JSONL, CSV or Parquet file: predict every row (its labels, if any, score "
                                   "the model)")
    pr.add_argument("--out", help="where --file writes its predictions: X.jsonl is the SemEval submission format "
                                  "({id, label} per line: Subtask B ids for a model of Subtask B's classes, the class "
                                  "names for any other), X.csv a table of id, gold, predicted and each class's "
                                  "probability (default: a CSV in the run's folder, whose path is printed)")
    pr.add_argument("--text-col", default="text", help="the file's text column (default: text)")
    pr.add_argument("--label-col", default="label", help="the file's label column (default: label)")
    pr.set_defaults(func="commands:cmd_predict")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.home = home_from_environment()  # read here alone, and passed down
        # the commands (and torch, transformers) load only now: help and usage errors return at once
        module, func = args.func.split(":")
        return getattr(importlib.import_module(f"core.cli.{module}"), func)(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped by Ctrl+C", file=sys.stderr)
        return 130
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        print(f"error: the disk is full: no space left to write {e.filename or 'a file'}; free some space and run it "
              "again (nothing half-written is kept)", file=sys.stderr)
        return 1
