"""The process environment every entry point of the studio sets before it loads a model: called by the
app, the CLI, a run's worker process, the Ray dispatcher (whose nodes get the same variables), the benches
and the tests. Importing `core` sets nothing."""

from __future__ import annotations

import os

# Never reach a model hub: a hub id would hang for about 48 s before failing on an offline machine.
# Read when transformers / huggingface_hub are first imported.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
STUDIO = {
    **OFFLINE,
    # A Ray instance the studio starts must not report usage statistics over the internet; Ray reads this
    # when it starts.
    "RAY_USAGE_STATS_ENABLED": "0",
    # The same seed, data and config give the same numbers whatever the thread count: MKL's strict conditional
    # numerical reproducibility keeps a matrix product's sums in one order however many threads split it (at
    # this CPU's own instruction set, measured no slower). MKL reads it when torch first loads it.
    "MKL_CBWR": "AUTO,STRICT",
}


def prepare() -> None:
    """Set the studio's variables where the user has not set them: call first, before torch is imported."""
    for name, value in STUDIO.items():
        os.environ.setdefault(name, value)
