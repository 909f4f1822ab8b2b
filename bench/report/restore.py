"""The committed records restored into a scratch studio home: what every section of the report reads."""

from __future__ import annotations

import json
from pathlib import Path

from bench.sample_runs import CORPORA, RECORDS_DIR, on_gpu, recorded, restore
from core.backbone.locate import ADAPTED_DIR, ADAPTED_RECORD
from core.runs import Registry

TITLES = {"m4-sample": "The M4 sample: 128 texts to train on, 65 dev texts to test on",
          "l2r-dev": "L2R, tested on its dev split (where settings are chosen)",
          "l2r": "L2R, tested on its test split (the regime study)"}


def restored(name: str, registry: Registry, gpu: bool = False) -> list:
    """A corpus's recorded runs, restored into `registry`, in the order they were recorded: those that ran on a
    CPU, or (`gpu`) those of the GPU check (`<corpus>-gpu.jsonl`) and any other that ran on a GPU; the adapted
    backbones they name are stubbed in its home first (`adapted_stubs`)."""
    corpus = CORPORA[name]
    adapted_stubs(registry.home)
    files = [corpus.records.with_name(f"{corpus.records.stem}-gpu.jsonl"), corpus.records] if gpu else [corpus.records]
    return [restore(registry, entry, corpus.folder) for f in files for entry in recorded(f) if on_gpu(entry) == gpu]


def adapted_stubs(home: Path) -> None:
    """Each recorded adapted backbone's record where runs name it (`studio:backbones/<name>`), so its name and its
    base read the same whether or not this machine holds its weights."""
    for entry in recorded(RECORDS_DIR / "adapt.jsonl"):
        folder = home / ADAPTED_DIR / entry["folder"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ADAPTED_RECORD).write_text(json.dumps(entry))
