"""`data check`: what a dataset holds (and `data clean-uploads`), read without loading a model (no torch),
so it answers in a second or two."""

from __future__ import annotations

import argparse
import json

from core.cli.options import spec_from_args
from core.data import Dataset, load_dataset
from core.errors import InputError


def describe(ds: Dataset) -> dict:
    counts = ds.class_counts()
    return {"dataset": ds.name, "synthetic": ds.synthetic, "labels": list(ds.labels),
            "rows": {split: int(len(frame)) for split, frame in ds.splits.items()},
            "class_counts": {split: dict(zip(ds.labels, map(int, col))) for split, col in counts.items()},
            "absent_classes": ds.absent, "absent": ds.absent_note(), "cut": ds.cut_note(),
            "unlabeled": ds.unlabeled_note(),
            "validation": ds.validation_note()}


def cmd_data_check(args: argparse.Namespace) -> int:
    ds = load_dataset(spec_from_args(args.path, args), args.home)
    info = describe(ds)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{info['dataset']}: " + ", ".join(f"{n} {s}" for s, n in info["rows"].items()) + " rows")
    print(ds.class_counts().to_string())
    for note in (ds.absent_note(), ds.cut_note()):
        if note:
            print(f"note: {note}")
    print(f"note: {ds.validation_note()}")
    print(f"note: {ds.unlabeled_note()}")
    return 0


def cmd_clean_uploads(args: argparse.Namespace) -> int:
    """Uploads the studio keeps under its home, removed when nothing names them and they are old."""
    from core.label.session import named_files
    from core.runs import Registry, clean_uploads

    if args.older_than < 0:
        raise InputError(f"--older-than must be 0 or more days, got {args.older_than:g}")
    registry = Registry(args.home)
    cleaned = clean_uploads(registry, args.older_than, args.dry_run, named_files(registry.home))
    print(("would have " if args.dry_run else "") + cleaned.words())
    return 0
