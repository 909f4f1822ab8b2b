"""A bench's measured figures written into `core/calibration.json`, the file the studio's estimates read: each with
the bench that measured it, the date and the machine. A bench writes only when run with `--calibrate`, so a run on
a busy or unusual machine changes nothing by itself."""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path

from bench.sample_runs import machine
from core.calibration import FILE
from core.paths import atomic_write_text


def add_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calibrate", action="store_true",
                        help=f"write this bench's figures into {FILE.relative_to(FILE.parents[1])}, which the studio's "
                             "estimates read, with this machine and today's date")


def record(figures: dict[str, float], source: str, path: Path = FILE, on: str | None = None) -> None:
    """Each figure's value, source, date and machine (`on`: this one); what it is stays as the file says. A name the
    file does not hold is an error: a new figure is described there first, by hand."""
    raw = json.loads(path.read_text())
    unknown = [name for name in figures if name not in raw]
    if unknown:
        raise KeyError(f"{path} describes no figure named {unknown[0]!r}")
    for name, value in figures.items():
        raw[name] = {**raw[name], "value": float(f"{float(value):.6g}"), "source": source,
                     "when": date.today().isoformat(), "machine": on or machine()}
    atomic_write_text(path, json.dumps(raw, indent=2, ensure_ascii=False) + "\n")
    print(f"calibration: {', '.join(f'{k} {v:.4g}' for k, v in figures.items())} written to {path}", flush=True)
