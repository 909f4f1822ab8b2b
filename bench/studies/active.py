"""Which texts to label (issue 96): each strategy of `core.label` simulated with the corpus's own labels as the
oracle, on L2R (its 11,421-text train pool, scored on its 1,867 test texts) and the M4 sample (128 texts, scored
on its 65 dev texts), on MiniLM's and SmolLM2's frozen features (the features + LR reference's, from the benches'
feature store), to 500 labels in all, seeds 0-4.

Every strategy starts from no label; random (unstratified) is what a user without labels can do, stratified random
(the same count from every class, drawn knowing the classes: a run's labeled rows today) the reference. Each
(corpus, backbone, strategy, seed) is one record in `bench/records/active-learning.jsonl`, with its accuracy and
macro-F1 at every label count of `core.label.simulate.schedule` and the seconds each round took, so the bench
resumes where it stopped; bench.report writes the tables into docs/results.md.

Run: .venv/bin/python -m bench.studies.active [--corpora l2r m4-sample] [--backbones minilm smollm2]
     [--strategies ...] [--seeds 0 1 2 3 4] [--budget 500] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bench.sample_runs import DATA_ROOT, DEFAULT_HOME, RECORDS_DIR, machine, recorded
from bench.studies.active_tables import REFERENCE_PER_CLASS, labeling_section

RECORDS = RECORDS_DIR / "active-learning.jsonl"
# what the pool's clusters follow (TypiClust picks from clusters): authors, or the domains the texts are about
CLUSTERS = RECORDS_DIR / "active-learning-clusters.jsonl"
CLUSTER_COUNTS = (25, 100)
CORPORA = {"l2r": {"train": "l2r/train.jsonl", "test": "l2r/test.jsonl"},
           "m4-sample": {"train": "m4-sample/train.jsonl", "test": "m4-sample/dev.jsonl"}}
BACKBONES = {"minilm": None, "smollm2": "smollm2-135m"}
STRATEGIES = ("random", "stratified", "entropy", "margin", "typiclust", "hybrid")


def key(entry: dict) -> tuple:
    return entry["corpus"], entry["backbone"], entry["strategy"], entry["seed"], entry["budget"]


def purity(clusters: np.ndarray, groups: np.ndarray) -> float:
    """The share of texts in their cluster's most common group: 1 when clusters are the groups."""
    _, ids = np.unique(groups, return_inverse=True)
    return float(sum(np.bincount(ids[clusters == c]).max() for c in np.unique(clusters)) / len(groups))


def record_clusters(corpus: str, backbone: str, lab) -> None:
    """How far the pool's clusters in the space TypiClust clusters in follow the classes, and how far the texts'
    domains (`source`), at `CLUSTER_COUNTS` clusters."""
    from sklearn.cluster import MiniBatchKMeans

    if any((e["corpus"], e["backbone"]) == (corpus, backbone) for e in recorded(CLUSTERS)):
        return
    train = lab.ds.train
    rows = []
    for k in CLUSTER_COUNTS:
        clusters = MiniBatchKMeans(k, random_state=0).fit_predict(lab.space.reduced)
        rows.append({"clusters": k, "by_class": round(purity(clusters, train["label"].to_numpy()), 4),
                     "by_source": round(purity(clusters, train["source"].to_numpy()), 4)})
    largest = float(train["label"].value_counts(normalize=True).max())
    with CLUSTERS.open("a") as out:
        out.write(json.dumps({"corpus": corpus, "backbone": backbone, "rows": rows, "largest_class": round(largest, 4),
                              "sources": int(train["source"].nunique())}, sort_keys=True) + "\n")


def run(args: argparse.Namespace) -> None:
    from core.data import DataSpec, load_texts
    from core.label.features import feature_config, features
    from core.label.rounds import Labeling
    from core.label.simulate import simulate

    done = {key(e) for e in recorded(RECORDS)}
    plan = [(c, b, s, seed) for c in args.corpora for b in args.backbones for s in args.strategies
            for seed in args.seeds if (c, b, s, seed, args.budget) not in done]
    print(f"{len(plan)} simulations to run ({len(done)} recorded) on {machine()}", flush=True)
    clustered = {(e["corpus"], e["backbone"]) for e in recorded(CLUSTERS)}
    plan += [(c, b, None, None) for c in args.corpora for b in args.backbones if (c, b) not in clustered
             and not any(p[:2] == (c, b) for p in plan)]  # a pair whose clusters alone are still to record
    loaded: dict[tuple[str, str], tuple] = {}
    home = Path(args.home)
    for corpus, backbone, name, seed in plan:
        if (corpus, backbone) not in loaded:
            files = CORPORA[corpus]
            ds = load_texts(DataSpec(train=str(DATA_ROOT / files["train"]), test=str(DATA_ROOT / files["test"])), home)
            config = feature_config(ds, BACKBONES[backbone], home)
            started = time.time()
            pool, test = features(config, ds, home, lambda done, total: print(f"  features {done}/{total}", flush=True)
                                  if done % 2048 == 0 else None)
            print(f"{corpus} · {backbone}: features {pool.shape} in {time.time() - started:.0f} s", flush=True)
            loaded = {(corpus, backbone): (Labeling(ds, pool, test), config)}
        lab, config = loaded[(corpus, backbone)]
        record_clusters(corpus, backbone, lab)
        if name is None:
            continue
        started = time.time()
        known = lab.ds.train["label"].to_numpy()
        present = len(set(known[known >= 0].tolist()))
        points = simulate(lab.space, known, lab.test_x, lab.test_y, len(lab.classes), name, seed, args.budget,
                          (REFERENCE_PER_CLASS * present,))
        entry = {"corpus": corpus, "backbone": backbone, "strategy": name, "seed": seed, "budget": args.budget,
                 "features": {"max_len": config.max_len, "pooling": config.resolved_pooling,
                              "precision": config.precision, "dimensions": int(lab.space.x.shape[1])},
                 "pool": len(lab.ids), "test": int(len(lab.test_y)), "classes": list(lab.classes), "present": present,
                 "points": [[p.labels, round(p.accuracy, 5), round(p.macro_f1, 5), round(p.seconds, 4)]
                            for p in points],
                 "seconds": round(time.time() - started, 1), "machine": machine()}
        with RECORDS.open("a") as out:
            out.write(json.dumps(entry, sort_keys=True) + "\n")
        at = {p.labels: p.accuracy for p in points}
        print(f"{corpus} · {backbone} · {name} · seed {seed}: " + ", ".join(
            f"{n}: {at[n]:.3f}" for n in (10, 25, 50, 100, 250, 500) if n in at) + f" ({entry['seconds']} s)",
            flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--backbones", nargs="+", default=list(BACKBONES), choices=list(BACKBONES))
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--home", default=DEFAULT_HOME, help="the studio home whose feature store is read")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    if not args.report_only:
        run(args)
    print(labeling_section(recorded(RECORDS), recorded(CLUSTERS)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
