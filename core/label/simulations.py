"""Simulations kept in the studio home beside their session (`labeling/<key>/simulations.jsonl`, one line each),
so Compare draws accuracy against labels for every strategy simulated on a corpus, over its seeds
(`core.compare.charts.labels_curve`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

from core.backbone.packaged import entry_of
from core.label.session import MAX_LINE, Session, append_line, sessions
from core.label.simulate import Point
from core.label.strategies import STRATEGIES

FILE = "simulations.jsonl"
MAX_POINTS = 10_000  # a simulation's points: its label counts (`schedule`), a few dozen


def keep(home: Path, session: Session, strategy: str, backbone: str | None, seed: int, points: list[Point]) -> None:
    append_line(session.folder(home) / FILE, {
        "strategy": strategy, "backbone": backbone, "seed": seed, "at": round(time.time(), 3),
        "points": [[p.labels, round(p.accuracy, 5), round(p.macro_f1, 5)] for p in points]})


def kept(home: Path) -> pd.DataFrame:
    """Every simulation's points, a row a label count: dataset, backbone, strategy, seed, labels, accuracy,
    macro_f1. The last simulation of a (dataset, backbone, strategy, seed) counts; unreadable lines are skipped."""
    rows: dict[tuple, list] = {}
    for session in sessions(home):
        path = session.folder(home) / FILE
        for raw in path.open("rb") if path.is_file() else ():
            if len(raw) > MAX_LINE:
                continue
            try:
                entry = json.loads(raw)
                points = [(int(n), float(a), float(f)) for n, a, f in entry["points"][:MAX_POINTS]]
                name = STRATEGIES[entry["strategy"]].title
                backbone = entry.get("backbone")  # None: the default, as sessions named it before named backbones
                shown = known.short if (known := entry_of(backbone)) else str(backbone)
                key = (session.data.short_name, shown, name, int(entry["seed"]))
            except (ValueError, KeyError, TypeError):
                continue
            rows[key] = [(*key, *point) for point in points]
    return pd.DataFrame([r for points in rows.values() for r in points],
                        columns=["dataset", "backbone", "strategy", "seed", "labels", "accuracy", "macro_f1"])

