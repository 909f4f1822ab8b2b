"""How long a labeling round takes (issue 96's goal: under a second on the L2R pool once its features are stored):
each strategy picks the next text and the logistic regression is refit, at 10, 100 and 500 labels, on the
11,421-text L2R pool's stored features (MiniLM's 4,608 dimensions, SmolLM2's 576), on one thread. Side by side in
the same run, the two choices this bench made: TypiClust clustering the features themselves against their
`CLUSTER_DIMENSIONS` principal components (what `core.label.strategies.Space` does), and full k-means against
mini-batch k-means (`CLUSTERING`).

The features come from the benches' feature store (bench/studies/active.py encodes them); a backbone whose L2R
features are not stored is skipped, said. Prints the table and appends it to bench/records/speed.jsonl.
Run: OMP_NUM_THREADS=1 .venv/bin/python -m bench.speed.label_round [--labels 10 100 500] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from unittest.mock import patch

import numpy as np

from bench.sample_runs import DATA_ROOT, DEFAULT_HOME, machine, record_speed

BACKBONES = {"MiniLM": None, "SmolLM2": "smollm2-135m"}


def timed(work, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def table(entry: dict) -> str:
    """One run of this bench as a table: seconds a round, by backbone, labels so far and strategy."""
    rows = entry["summary"]["rows"]
    lines = ["Seconds a labeling round takes (the pick and the refit, best of its repeats; bench/speed/label_round.py) "
             f"on the L2R pool (11,421 texts), on {entry['summary']['machine']}:", "",
             "| Features | Labels | Strategy | Seconds |", "|---|---|---|---|"]
    lines += [f"| {r['backbone']} | {r['labels'] or '–'} | {r['strategy']} | {r['seconds']:.3f} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", nargs="+", type=int, default=[10, 100, 500])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--home", default=DEFAULT_HOME)
    args = parser.parse_args()
    home = Path(args.home)

    from sklearn.cluster import KMeans

    from core.data import DataSpec, load_texts
    from core.label import strategies
    from core.label.features import feature_config
    from core.label.model import fit
    from core.label.strategies import MISSING, QUERIES, Space, pick
    from core.train.feature_store import cached_share, feature_store

    ds = load_texts(DataSpec(train=str(DATA_ROOT / "l2r" / "train.jsonl")), home)
    known, classes = ds.train["label"].to_numpy(), len(ds.labels)
    rows = []
    for title, backbone in BACKBONES.items():
        config = feature_config(ds, backbone, home)
        store = feature_store(home, config.resolved_backbone(home), config.max_len, config.resolved_pooling,
                              config.precision == "bf16", config.encoder_engine)
        if cached_share(store, ds.train["text"].tolist()) < 1:
            print(f"{title}: the L2R pool's features are not all stored; run bench.studies.active first")
            continue
        from core.label.features import features
        started = time.perf_counter()
        space = Space.of(features(config, ds, home)[0])
        prepare = time.perf_counter() - started
        full = Space(space.x, space.x)  # TypiClust on the features themselves, for the side-by-side
        for n in args.labels:
            y = np.full(len(known), MISSING)
            drawn = np.random.default_rng(0).choice(len(known), n, replace=False)
            y[drawn] = known[drawn]
            for name in QUERIES:
                def round_() -> None:
                    model = fit(space.x, y, classes)
                    pick(name, space, y, classes, 0, model=model)
                rows.append({"backbone": title, "labels": n, "strategy": name, "seconds": timed(round_, args.repeats)})
            if n <= 100:  # k-means over 4,608 dimensions at 500 clusters runs for minutes
                rows.append({"backbone": title, "labels": n, "strategy": "typiclust, unreduced features",
                             "seconds": timed(lambda: pick("typiclust", full, y, classes, 0), 1)})
            with patch.object(strategies, "CLUSTERING", KMeans):
                rows.append({"backbone": title, "labels": n, "strategy": "typiclust, full k-means",
                             "seconds": timed(lambda: pick("typiclust", space, y, classes, 0), args.repeats)})
        rows.append({"backbone": title, "labels": 0, "strategy": "reading the features, scaling, PCA (once)",
                     "seconds": prepare})
    print(f"a round (pick + refit), best of {args.repeats}, on {machine()}:")
    print(f"{'backbone':8s} {'labels':>6s}  {'strategy':45s} {'seconds':>8s}")
    for r in rows:
        print(f"{r['backbone']:8s} {r['labels']:6d}  {r['strategy']:45s} {r['seconds']:8.3f}")
    record_speed("label_round", {"machine": machine(), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
