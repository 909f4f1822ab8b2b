"""Exploration at full Subtask B size: cold and warm time per view, against the targets.

Targets (issue 2): all views together under 60 s cold; every view under 1 s warm (switching views).

`--corpus l2r|m4-sample` times the views on that real corpus instead, and the backbone-embedding map (500 texts a
split) three ways side by side: as the view drew it before issue 61 (its own fp32 pass, mean pooling at 128 tokens,
apart from the runs' features), through the runs' feature store with nothing cached, and once a run has cached them;
and the UMAP map, after the background warm-up the page starts.
Run: .venv/bin/python -m bench.speed.explore [--train-per-class 11840 --test-per-class 3000] [--corpus l2r]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.sample_runs import CORPORA
from core.backbone.encode import embed_texts, load_tokenizer
from core.data import CorpusConfig, builtin_dataset, load_dataset, sample_per_group
from core.explore import ExploreOptions, compute_views, umap_map
from core.explore.stats import MAP_SPLITS, _labeled_splits, embedding_map, tfidf_map
from core.train.view_features import view_features

COLD_TARGET_S, WARM_TARGET_S = 60.0, 1.0


def timed_views(ds, tokenizer, cache: Path) -> dict[str, float]:
    times: dict[str, float] = {}
    last = [None, 0.0]

    def step(name: str) -> None:
        now = time.perf_counter()
        if last[0] is not None:
            times[last[0]] = now - last[1]
        last[:] = [name, now]

    compute_views(ds, tokenizer, ExploreOptions(), cache, on_step=step)
    times[last[0]] = time.perf_counter() - last[1]
    return times


def embedding_times(ds, per_split: int = 500) -> dict[str, float]:
    """The embedding map's seconds before (its own pass) and after (the runs' store: cold, then cached)."""
    sample = sample_per_group(_labeled_splits(ds, MAP_SPLITS), "split", "class", per_split, 0)
    t0 = time.perf_counter()
    embed_texts(sample["text"].tolist(), max_len=128, pooling="mean")
    times = {"before: its own pass": time.perf_counter() - t0}
    with tempfile.TemporaryDirectory() as home:
        embed, features = view_features(ds.spec, Path(home))  # an empty feature store
        for name in ("after: nothing cached", "after: a run cached them"):
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory() as cache:  # the map's own result cache empty each time
                embedding_map(ds, embed, features, per_split=per_split, cache=Path(cache))
            times[name] = time.perf_counter() - t0
    print(f"embedding map, {len(sample):,} texts:")
    for name, seconds in times.items():
        print(f"  {name:<28}{seconds:>8.1f} s")
    return times


def umap_times(ds) -> dict[str, float]:
    """UMAP's map, the choice the Explore page offers beside PCA: the page compiles UMAP in the background when it
    opens (`umap_map.warm`), so the user waits for the map alone once that is done."""
    times = {}
    for name, compute in (("warm-up in the background", umap_map.warm),
                          ("map, cold", lambda: tfidf_map(ds, "umap"))):
        t0 = time.perf_counter()
        compute()
        times[name] = time.perf_counter() - t0
    print("UMAP map:")
    for name, seconds in times.items():
        print(f"  {name:<28}{seconds:>8.1f} s")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train-per-class", type=int, default=11840, help="71,040 train texts by default")
    parser.add_argument("--test-per-class", type=int, default=3000, help="18,000 test texts by default")
    parser.add_argument("--corpus", choices=list(CORPORA), help="a real corpus instead of the built-in one")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-explore-"))  # a studio home for the generated corpus
    t0 = time.perf_counter()
    if args.corpus:
        spec = CORPORA[args.corpus].spec()
        if spec is None:
            return 2
        ds = load_dataset(spec, scratch)
        print(f"loaded {args.corpus}: {len(ds.train):,} train texts in {time.perf_counter() - t0:.1f} s")
    else:
        ds = builtin_dataset(CorpusConfig(args.train_per_class, args.test_per_class), scratch)
        print(f"generated {len(ds.train):,} train + {len(ds.test):,} test texts "
              f"in {time.perf_counter() - t0:.1f} s")
    tokenizer = load_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        cold = timed_views(ds, tokenizer, Path(tmp))
        warm = timed_views(ds, tokenizer, Path(tmp))
    print(f"{'view':<12}{'cold s':>9}{'warm s':>9}")
    for name in cold:
        print(f"{name:<12}{cold[name]:>9.2f}{warm[name]:>9.3f}")
    total_cold, worst_warm = sum(cold.values()), max(warm.values())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'total':<12}{total_cold:>9.2f}{sum(warm.values()):>9.3f}")
    print(f"peak memory: {peak_mb:,.0f} MB")
    if args.corpus:
        embedding, umap = embedding_times(ds), umap_times(ds)
        print(json.dumps({"corpus": args.corpus, "views_cold_s": {k: round(v, 2) for k, v in cold.items()},
                          "embedding_map_s": {k: round(v, 2) for k, v in embedding.items()},
                          "umap_map_s": {k: round(v, 2) for k, v in umap.items()}}))
    ok = total_cold < COLD_TARGET_S and worst_warm < WARM_TARGET_S
    print(f"targets: cold total {total_cold:.1f} s < {COLD_TARGET_S:.0f} s, slowest warm view {worst_warm:.3f} s "
          f"< {WARM_TARGET_S:.0f} s: {'PASS' if ok else 'FAIL'}")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
