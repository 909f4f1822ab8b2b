"""How long "why this label" takes for TF-IDF + LR on real text (target: under 2 s for a 1,000-character
text, the first explanation of a freshly loaded model included). A run is trained on the real M4 sample at
20 labels per class in a scratch studio home, reloaded as Classify and the CLI load it, and explained.

Run: .venv/bin/python -m bench.speed.explain
Ends with one JSON line: the vocabulary size and the seconds of the first and a second explanation.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench.sample_runs import run_once, sample_spec
from core.runs import Registry
from core.train import TrainConfig, explain, load_data

TARGET_S = 2.0


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    spec = sample_spec()
    if spec is None:
        return 2
    home = Path(tempfile.mkdtemp(prefix="gan-bert-studio-explain-"))
    registry = Registry(home)
    config = TrainConfig(data=spec, method="tfidf-lr", fraction=None, per_class=20)
    # records of its own: a run restored from the committed records has no checkpoint to explain with
    run = run_once(registry, config, records=home / "records.jsonl")
    text = " ".join(load_data(run.config, home).test["text"].tolist())[:1000]
    model = registry.folder(run.id).load_model(home)
    timings = []
    for _ in range(2):
        started = time.perf_counter()
        why = explain(model, text)
        timings.append(time.perf_counter() - started)
    figures = {"ngrams": len(model.ngram_names), "text_chars": len(text), "first_s": round(timings[0], 3),
               "second_s": round(timings[1], 3), "named": len(why.tokens), "target_s": TARGET_S}
    print(f"TF-IDF + LR over {figures['ngrams']:,} n-grams explains a {len(text):,}-character text in "
          f"{timings[0]:.2f} s (first, names built) and {timings[1]:.2f} s (again); target under {TARGET_S} s")
    print(json.dumps(figures))
    return 0 if max(timings) < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
