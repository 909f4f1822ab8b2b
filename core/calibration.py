"""The machine speeds and ratios the time and memory estimates rest on, each kept with where it was measured.

`calibration.json` beside this module holds every one: its value, what it is, the bench that measured it, when, and
on which machine. A bench run with `--calibrate` writes its own figures there (`bench/calibrate.py`); the code reads
them here, never a number typed into a module. The figures are laptop-CPU ones: a run's own history replaces them
once runs like it have finished here (`core.runs.estimate`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

FILE = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class Measured:
    value: float
    what: str  # what the figure is, in its unit
    source: str  # the bench that measured it, as run ("bench/speed/memory.py")
    when: str  # the date it was measured
    machine: str  # the CPU (or GPU) and threads it was measured on


def read(path: Path = FILE) -> MappingProxyType:
    """Every figure by name; a file that is missing or malformed is an error here, at import, not a guess later."""
    raw = json.loads(path.read_text())
    return MappingProxyType({name: Measured(**entry) for name, entry in raw.items()})


MEASURED = read()


def measured(name: str) -> float:
    """A figure's value."""
    return MEASURED[name].value
