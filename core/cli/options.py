"""Flags from the one description of the options: every `TrainConfig` field (and every cleaning toggle)
becomes a flag with the field's help, choices and default, so the CLI cannot drift from the config.

`sweep` takes lists where `train` takes one value: the method, its variants (GAN-BERT's generators), the
labeled amount and the seed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING

from core.data import Amount, CleaningConfig, ColumnMapping, CorpusConfig, DataSpec, declared_labels
from core.errors import InputError
from core.runs.backends import NAMES
from core.train.catalog import CATALOG, DEFAULT_FRACTIONS, DEFAULT_METHODS, DEFAULT_SEEDS, VARIANTS
from core.train.config import SHARED, TrainConfig, options, params_of
from core.train.settings import Option, option_of

if TYPE_CHECKING:
    from core.train.sweep import Sweep

BUILTIN = "builtin"


def sweep_flag(o: Option) -> str:
    """A swept field's list flag: `--generators`; an on/off field keeps its name (`--adversarial on off`)."""
    return o.flag if o.kind == "bool" else o.flag + "s"


# Fields a sweep takes as lists, under these flags: the method, every method's variants (from the catalog),
# the labeled amount and the seed.
SWEPT = {"method": "--methods", **{v: sweep_flag(options()[v]) for v in VARIANTS}, "fraction": "--fractions",
         "per_class": "--per-class", "seed": "--seeds"}


class UsageError(InputError):
    """A bad flag value, reported like bad data: message and exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep its message short and on stderr
        self.print_usage(sys.stderr)
        raise UsageError(message)


def add_data_args(p: argparse.ArgumentParser, train_flag: bool = False) -> None:
    """Data arguments shared by every command that reads a dataset."""
    if train_flag:
        p.add_argument("--train", required=True, help="train file, a directory of subtaskB_*.jsonl files (or of train, "
                                                       "dev, test and unlabeled files), or "
                                                       f"'{BUILTIN}' for the synthetic corpus")
    p.add_argument("--unlabeled", help="texts without labels, for GAN-BERT's unlabeled set (labels in it are ignored; "
                                       "default: a directory's unlabeled file, if it has one)")
    p.add_argument("--unlabeled-rows", action="store_true",
                   help="train rows without a label are unlabeled texts (default: such a row is an error)")
    p.add_argument("--labels", help="the classes, comma-separated (default: every class a split's labels name, so "
                                    "test rows of a class no labeled row shows are kept and scored as errors)")
    p.add_argument("--test", help="test file (labels optional)")
    p.add_argument("--val", help="validation file (runs draw their validation texts from it, by --validation); "
                                  "default: none, and runs draw them from train")
    mapping = ColumnMapping()
    p.add_argument("--text-col", default=mapping.text, help=f"column holding the text (default: {mapping.text})")
    p.add_argument("--label-col", default=mapping.label, help=f"column holding the label (default: {mapping.label})")
    p.add_argument("--source-col", default=mapping.source, help="optional column holding the source/domain")
    p.add_argument("--split-col", default=mapping.split, help="optional column holding train/val/test")




def add_backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=list(NAMES), default="local",
                   help="where background runs execute: local processes, or tasks on a Ray cluster")
    p.add_argument("--ray-address", help="Ray cluster to use (default: RAY_ADDRESS, the latest local cluster, "
                                         "else a new local instance)")
    p.add_argument("--ray-storage", help="where Ray runs write their results, then copied here: an absolute "
                                         "folder the nodes share or a URI such as s3://bucket/studio "
                                         "(default: sent back directly)")
    p.add_argument("--ray-cpus", type=float, default=1.0, help="CPUs each Ray run asks for")
    p.add_argument("--ray-gpu-fraction", type=float, default=1.0,
                   help="share of a GPU each frozen-feature Ray run asks for (e.g. 0.25: four per GPU)")


def follow(bar) -> Callable[[int, int], None]:
    """A progress callback `(done, total)` moving a tqdm bar, its total learnt as it comes."""
    def show(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
    return show


def spec_from_args(train: str, args: argparse.Namespace) -> DataSpec:
    if train == BUILTIN:
        return DataSpec(builtin=CorpusConfig())
    mapping = ColumnMapping(text=args.text_col, label=args.label_col, source=args.source_col, split=args.split_col)
    return DataSpec(train=train, test=args.test, val=args.val, unlabeled=args.unlabeled, mapping=mapping,
                    labels=declared_labels(args.labels), unlabeled_rows=args.unlabeled_rows)



def _add(p: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup, o: Option, flag: str | None = None,
         many: bool = False, default: object = None) -> None:
    """One flag for an option: its type, choices, help and default from the field."""
    help_text = o.help.replace("%", "%%")
    choices = list(o.choices) if o.choices else None
    if o.name == "method":  # checked against the method table when the command runs (plug-ins included)
        help_text += ": " + ", ".join(f"{name} ({entry.title})" for name, entry in CATALOG.items())
    if o.kind == "bool" and o.default:  # on by default: `--adversarial off` turns it off (a sweep: `on off`)
        p.add_argument(flag or o.flag, dest=o.name, type=on_off, nargs="+" if many else None,
                       default=o.default if default is None else default, metavar="{on,off}",
                       help=help_text + " (default: on)")
    elif o.kind == "bool":
        p.add_argument(flag or o.flag, dest=o.name, action="store_true", help=help_text)
    elif o.kind == "tags":
        p.add_argument(flag or o.flag, dest=o.name, action="append", default=list(o.default),
                       help=help_text + " (repeatable)")
    else:
        kind = {"int": int, "float": float, "str": str}[o.kind]
        if o.unset != "default" and o.kind in ("int", "float"):  # `--max-len auto` names the None default
            kind, help_text = or_word(kind, o.unset), help_text + f" (default: {o.unset})"
        p.add_argument(flag or o.flag, dest=o.name, type=kind, choices=choices, nargs="+" if many else None,
                       default=o.default if default is None else default, help=help_text)


def on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"give on or off, got {text!r}")
    return text == "on"


def or_word(kind: type, word: str):
    """A number, or the word that stands for None (`auto`)."""
    def parse(text: str):
        if text == word:
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"give a number or {word}, got {text!r}") from None
    parse.__name__ = f"{kind.__name__} or {word}"
    return parse


def add_config_args(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    """A flag for every TrainConfig field; `sweep` takes lists for the swept fields."""
    add_data_args(p, train_flag=True)
    opts = options()
    if sweep:
        for name, default in (("method", DEFAULT_METHODS), *((v, opts[v].variant_default) for v in VARIANTS),
                              ("fraction", ()), ("per_class", ()), ("seed", DEFAULT_SEEDS)):
            _add(p, opts[name], SWEPT[name], many=True, default=list(default))
    else:
        for name in ("method", *VARIANTS, "seed"):
            _add(p, opts[name])
        share = p.add_mutually_exclusive_group()
        for name in ("fraction", "per_class"):
            _add(share, opts[name])
    for name, o in opts.items():
        if name not in SWEPT:
            _add(p, o)
    for f in fields(CleaningConfig):
        _add(p, option_of(f))
    p.add_argument("--allow-download", action="store_true",
                   help="download a hub-id backbone that is not in the local Hugging Face cache (the only time the "
                        "studio uses the network; without it a missing model is an error)")


def config_from_args(args: argparse.Namespace, sweep: bool = False) -> TrainConfig:
    """The TrainConfig the flags describe; for a sweep, its base config (the swept fields keep their
    defaults: the sweep sets each run's)."""
    values = settings_from_args(args)
    values["tags"] = tuple(args.tags)
    values["cleaning"] = CleaningConfig(**{f.name: getattr(args, f.name) for f in fields(CleaningConfig)})
    values["data"] = spec_from_args(args.train, args)
    if sweep:
        return TrainConfig.of(foreign=True, **values)
    values.update(seed=args.seed, **{v: getattr(args, v) for v in VARIANTS},
                  **Amount.chosen(args.fraction, args.per_class).fields())
    opts, own = options(), params_of(args.method).names() if args.method in CATALOG else ()
    given = [opts[k].flag for k, v in values.items() if k in opts and k not in SHARED and k not in own
             and v != opts[k].default]
    if given:
        raise UsageError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} another method's setting; "
                         f"--method {args.method} does not read {'it' if len(given) == 1 else 'them'}")
    return TrainConfig.of(args.method, foreign=True, **values)  # every method's flags have values: its own are read


def settings_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The settings the flags give, every method's own among them, but those a sweep takes as lists."""
    return {name: getattr(args, name) for name in options() if name not in SWEPT}


def sweep_of(args: argparse.Namespace) -> Sweep:
    """The sweep the flags describe: the chosen methods with their own variants, the fractions and counts
    per class given (else the default fractions), and the seeds."""
    from core.train.sweep import Sweep, amounts  # here: the method table imports torch

    variants = {v: tuple(getattr(args, v)) for v in VARIANTS if any(v in CATALOG[m].variants for m in args.method
                                                                   if m in CATALOG)}
    fractions = list(args.fraction) if args.fraction or args.per_class else list(DEFAULT_FRACTIONS)
    return Sweep(tuple(args.method), variants, amounts(fractions, list(args.per_class)), tuple(args.seed),
                 settings_from_args(args))
