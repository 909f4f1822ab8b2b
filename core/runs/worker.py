"""`python -m core.runs.worker RUN_ID`: the process the local backend starts for a run. When the run ends, it
takes on the oldest queued local run itself, in the same process, and so on until none is left; then it pumps
the queue. Starting a process and importing torch and transformers cost 8-11 s between the runs of a grid
(70 s of a 191-s grid of eight frozen runs), which the runs after the first no longer pay. Each run's output goes
to its own log."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from core.paths import home_from_environment
from core.runs.execute import LOG_FORMAT, execute_run
from core.runs.lifecycle import Status
from core.runs.local import concurrency
from core.runs.queue import pump
from core.runs.registry import Registry, check_run_id


def next_run(registry: Registry) -> str | None:
    """The oldest queued local run, claimed for this process, while the local runs going stay below the concurrency
    (another process's pump may have filled this slot while the last run was finishing); else None."""
    going = [r for r in registry.list(statuses=(Status.STARTING, Status.RUNNING), kind=None) if r.backend == "local"]
    if len(going) >= concurrency(registry):
        return None
    for run in registry.list(statuses=(Status.QUEUED,), kind=None):
        if run.backend == "local" and registry.claim(run.id, pid=os.getpid()):
            return run.id
    return None


def write_to(log: Path) -> None:
    """This process's stdout and stderr (a traceback, a library's warning) into `log`, appended."""
    sys.stdout.flush()
    sys.stderr.flush()
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)


def main(argv: list[str]) -> int:
    run_id: str | None = check_run_id(argv[0])
    registry = Registry(home_from_environment())  # the entry point: its launcher set STUDIO_HOME
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    status = Status.FAILED
    try:
        while run_id is not None:
            status = execute_run(registry, run_id)
            # a failure may leave the process unfit (a GPU out of memory): the next run gets a process of its own
            run_id = next_run(registry) if status in (Status.DONE, Status.CANCELLED) else None
            if run_id is not None:
                write_to(registry.folder(run_id).log)
    finally:
        pump(registry)
    return 0 if status == Status.DONE else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
