"""The flags of `python -m core adapt`, from AdaptConfig's defaults; built without torch, like every parser."""

from __future__ import annotations

import argparse
from dataclasses import fields

from core.cli.options import _add as add_option
from core.data import CleaningConfig
from core.train.adaptation import AdaptConfig
from core.train.settings import option_of

DEFAULTS = AdaptConfig()


def add_adapt_args(p: argparse.ArgumentParser) -> None:
    """The adaptation's own flags, with AdaptConfig's defaults (the data flags are the shared ones)."""
    p.add_argument("--backbone", help="the base: a model folder or a cached hub id (default: the bundled MiniLM)")
    p.add_argument("--revision", help="snapshot of a hub-id backbone (default: the one the cache's main ref names)")
    p.add_argument("--splits", nargs="+", choices=("train", "val", "test"), default=list(DEFAULTS.splits),
                   help="the splits whose texts it reads (never their labels). Default: train's alone; name val or "
                        "test to read theirs too, and the backbone's record will say so")
    p.add_argument("--epochs", type=int, default=DEFAULTS.epochs, help=f"passes over the texts (default: "
                                                                       f"{DEFAULTS.epochs})")
    p.add_argument("--max-steps", type=int, help="stop after this many optimizer steps (a quick try)")
    p.add_argument("--lr", type=float, default=DEFAULTS.lr, help=f"peak learning rate (default: {DEFAULTS.lr:g})")
    p.add_argument("--max-len", type=int, default=DEFAULTS.max_len,
                   help=f"tokens per text; longer texts are cut (default: {DEFAULTS.max_len})")
    p.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size,
                   help=f"texts per step (default: {DEFAULTS.batch_size})")
    p.add_argument("--mask", type=float, default=DEFAULTS.mask,
                   help=f"share of words masked, whole (default: {DEFAULTS.mask:g})")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed, help="seed for the order and the masking")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto",
                   help="auto: bf16 where the hardware runs it natively, else fp32")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto takes a GPU when there "
                                                                                     "is one")
    p.add_argument("--background", action="store_true", help="queue it and return its job id at once")
    p.add_argument("--allow-download", action="store_true",
                   help="download a hub-id base that is not in the local Hugging Face cache")
    for f in fields(CleaningConfig):
        add_option(p, option_of(f))
