"""GAN-BERT Studio core: data, exploration, training and runs, with no UI in it."""

import os

# Never reach a model hub: a hub id would hang for about 48 s before failing on this offline machine.
# Set before any transformers / huggingface_hub import reads them.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# A Ray instance the studio starts (the dispatcher without a cluster address) must not report usage
# statistics over the internet either; Ray reads this when it starts.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
