"""The process environment every entry point of the studio sets before it loads a model: called by the
app, the CLI, a run's worker process, the Ray dispatcher (whose nodes get the same variables), the benches
and the tests. Importing `core` sets nothing."""

from __future__ import annotations

import importlib
import os
import threading

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
    # An MLflow server that does not answer fails a live log or an export within seconds, not after MLflow's
    # default retries (minutes); the export draws its own progress. MLflow reads these at each request.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
}


def prepare() -> None:
    """Set the studio's variables where the user has not set them: call first, before torch is imported."""
    for name, value in STUDIO.items():
        os.environ.setdefault(name, value)


# What the pages import that takes seconds on a first open: transformers' model classes (3.5 s on 2 cores, most of
# the Data page's first open) and scikit-learn.
HEAVY_MODULES = ("core.backbone.encode", "core.explore.stats")


def preload(modules: tuple[str, ...] = HEAVY_MODULES) -> threading.Thread:
    """Import `modules` in a background thread, so the page a user opens next finds them loaded. A page must wait
    for the thread (app.py joins it) rather than import transformers beside it: its lazy module is not safe to import
    from two threads, and the Data page's `from transformers import AutoConfig` failed with ImportError while the
    thread was still importing it."""
    thread = threading.Thread(target=lambda: [importlib.import_module(m) for m in modules], name="preload",
                              daemon=True)
    thread.start()
    return thread
