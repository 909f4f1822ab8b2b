"""A strategy run with the corpus's own labels as the oracle: what it would have reached, label count by label
count, had a user labeled the texts it picked. The stratified reference draws each count as a run's labeled rows
are drawn today (`core.data.stratified_mask`, the same seed), knowing every text's class."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.data import stratified_mask
from core.errors import InputError
from core.label.model import fit, scores
from core.label.strategies import MISSING, Space, pick, strategy

BUDGETS = (10, 25, 50, 100, 250, 500)


def schedule(budget: int, start: int = 10) -> list[int]:
    """The label counts a simulation is scored at: `start`, then every 5 to 100, every 25 to 500, every 100 beyond,
    up to `budget` (a strategy picks each step's texts as one batch)."""
    counts, n = [], min(start, budget)
    while n < budget:
        counts.append(n)
        n += 5 if n < 100 else 25 if n < 500 else 100
    return counts + [budget]


def even_counts(known: np.ndarray, count: int, classes: int, seed: int) -> dict[int, int]:
    """`count` labels spread over the classes as evenly as their sizes allow (the remainder to classes drawn by
    the seed): at 20 a class times the classes, today's draw."""
    sizes = np.bincount(known[known != MISSING], minlength=classes)
    wanted = {c: 0 for c in range(classes) if sizes[c]}
    order = np.random.default_rng([seed, count]).permutation(list(wanted))
    left = min(count, int(sizes.sum()))
    while left:
        for c in order:
            if left and wanted[c] < sizes[c]:
                wanted[c] += 1
                left -= 1
    return wanted


@dataclass(frozen=True)
class Point:
    labels: int
    accuracy: float
    macro_f1: float
    seconds: float  # the round that picked these labels (scoring the pool and refitting)


def simulate(space: Space, known: np.ndarray, test_x: np.ndarray, test_y: np.ndarray, classes: int, name: str,
             seed: int, budget: int = max(BUDGETS), also: tuple[int, ...] = (),
             on_progress: Callable[[int, int], None] = lambda done, total: None) -> list[Point]:
    """Accuracy and macro-F1 on the test texts at each count of `schedule(budget)` and of `also` (within the
    budget). `known` holds every pool text's class (`MISSING` for a text without one, which is never picked: the
    oracle could not answer it)."""
    strategy(name)
    if not (test_y != MISSING).any():
        raise InputError("a simulation scores the labels on a labeled test split; this corpus has none")
    answerable = known != MISSING  # a text the oracle could not answer is never offered
    space, known = Space(space.x[answerable], space.reduced[answerable], space.mean, space.std), known[answerable]
    budget = min(budget, len(known))
    counts = sorted(set(schedule(budget)) | {n for n in also if 0 < n <= budget})
    y, points, model = np.full(len(known), MISSING), [], None
    for step, count in enumerate(counts):
        started = time.perf_counter()
        if name == "stratified":
            y = np.where(stratified_mask(known, seed, even_counts(known, count, classes, seed)), known, MISSING)
        else:
            chosen = pick(name, space, y, classes, seed, count - int((y != MISSING).sum()), model)
            y[chosen] = known[chosen]
        model = fit(space.x, y, classes)
        seconds = time.perf_counter() - started
        scored = scores(model, test_x, test_y, classes)
        points.append(Point(count, scored.accuracy if scored else float("nan"),
                            scored.macro_f1 if scored else float("nan"), seconds))
        on_progress(step + 1, len(counts))
    return points
