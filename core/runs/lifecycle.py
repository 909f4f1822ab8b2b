"""The run lifecycle, declared once: every status, and the moves the registry allows between them.

    queued → starting → running → done | failed | cancelled | diverged
    any active status → interrupted (its process is gone)

A run may also end before it runs: cancelled while queued or starting, or failed when it could not be
started (a Ray cluster that cannot be reached, data that went away).
"""

from __future__ import annotations

from enum import StrEnum

from core.errors import InputError


class Status(StrEnum):
    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DIVERGED = "diverged"
    INTERRUPTED = "interrupted"


MOVES: dict[Status, frozenset[Status]] = {
    Status.QUEUED: frozenset({Status.STARTING, Status.CANCELLED, Status.FAILED, Status.INTERRUPTED}),
    Status.STARTING: frozenset({Status.RUNNING, Status.CANCELLED, Status.FAILED, Status.INTERRUPTED}),
    Status.RUNNING: frozenset({Status.DONE, Status.FAILED, Status.CANCELLED, Status.DIVERGED, Status.INTERRUPTED}),
    Status.DONE: frozenset(), Status.FAILED: frozenset(), Status.CANCELLED: frozenset(),
    Status.DIVERGED: frozenset(), Status.INTERRUPTED: frozenset(),
}
FIRST = Status.QUEUED  # every run is created queued
ACTIVE: tuple[str, ...] = tuple(s.value for s, moves in MOVES.items() if moves)
FINISHED: tuple[str, ...] = tuple(s.value for s, moves in MOVES.items() if not moves)


class IllegalMove(InputError):
    """A status change the lifecycle does not allow, such as a finished run starting again."""


def check_move(run_id: str, current: str, new: str) -> None:
    if Status(new) not in MOVES[Status(current)]:
        allowed = ", ".join(sorted(MOVES[Status(current)])) or "nothing: it has ended"
        raise IllegalMove(f"run {run_id} is {current} and cannot become {new} (it can become {allowed})")
