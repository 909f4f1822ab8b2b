"""The benches, one room each: `studies/` (accuracy, each resumable from its records), `speed/` (texts/s, memory,
estimates), `gpu/` (the check a lent GPU runs, and its kit) and `report/` (docs/results.md and the README's table,
from the records alone). `sample_runs.py` runs and records what the studies train, `figures.py` writes every mean
and interval they print, and `records/` holds what they measured. Run one as `python -m bench.<room>.<bench>`.

Every bench is an entry point, so importing the package prepares the process before torch loads (offline,
reproducible sums), as the app, the CLI and the tests do."""

from core.environment import prepare

prepare()
