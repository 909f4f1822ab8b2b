"""GAN-BERT Studio core: data, exploration, training and runs, with no UI in it."""

import os

# Never reach a model hub: a hub id would hang for about 48 s before failing on this offline machine.
# Set before any transformers / huggingface_hub import reads them.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# A Ray instance the studio starts (the dispatcher without a cluster address) must not report usage
# statistics over the internet either; Ray reads this when it starts.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# The same seed, data and config give the same numbers whatever the thread count: MKL's strict conditional
# numerical reproducibility keeps a matrix product's sums in one order however many threads split it (at this
# CPU's own instruction set, measured no slower). MKL reads it when torch first loads it.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")
