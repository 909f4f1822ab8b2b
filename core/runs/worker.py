"""`python -m core.runs.worker RUN_ID`: the process the local backend starts for one run. When the run
ends, the worker pumps the queue, so the next queued run starts with nobody watching."""

from __future__ import annotations

import logging
import sys

from core.runs.execute import LOG_FORMAT, execute_run
from core.runs.queue import pump
from core.runs.registry import Registry, check_run_id
from core.runs.lifecycle import Status


def main(argv: list[str]) -> int:
    run_id = check_run_id(argv[0])
    registry = Registry()
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    try:
        status = execute_run(registry, run_id)
    finally:
        pump(registry)
    return 0 if status == Status.DONE else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
