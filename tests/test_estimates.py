"""The Train page's grid estimate held to the grids bench/speed/estimates.py timed on this machine's corpora: each
recorded grid priced again by today's estimator, from what its estimate read when it ran (the finished runs, the
encoding speeds, the share already cached), against the time the grid took."""

from __future__ import annotations

import json

import pytest

from bench.sample_runs import CORPORA
from bench.speed.estimates import RECORD, replay
from core.backbone.packaged import SMOLLM2
from core.data import load_dataset
from tests.conftest import L2R_DIR, M4_DIR
from tests.helpers import need_shared

# issue 84: a first grid within 2x, a grid done before (other seeds) within 1.5x
GOALS = {"first grid, no history": 2.0, "same grid, other seeds": 1.5}
# every grid issue 84 asks for: MiniLM and SmolLM2 (hidden states, and both feature sets) on each corpus
TIMED = [(corpus, backbone, features) for corpus in ("m4-sample", "l2r")
         for backbone, features in (("minilm", "hidden"), (SMOLLM2, "hidden"), (SMOLLM2, "both"))]


def latest_replayable() -> dict[tuple[str, str, str], dict]:
    """The latest record per corpus, backbone and feature set that kept what its estimates read."""
    rows = [json.loads(line) for line in RECORD.read_text().splitlines() if line.strip()]
    return {(r["corpus"], r["backbone"], r.get("features", "hidden")): r for r in rows
            if all("replay" in grid for grid in r["grids"].values())}


@pytest.mark.corpus
@pytest.mark.parametrize(("corpus", "backbone", "features"), TIMED)
def test_the_grid_estimate_holds_to_the_timed_grids(corpus: str, backbone: str, features: str):
    need_shared({"m4-sample": M4_DIR, "l2r": L2R_DIR}[corpus], corpus)
    record = latest_replayable().get((corpus, backbone, features))
    assert record, f"no replayable bench/speed/estimates.py record for {corpus}, {backbone}, {features}"
    ds = load_dataset(CORPORA[corpus].spec())
    for name, goal in GOALS.items():
        grid = record["grids"][name]
        ratio = replay(grid["replay"], ds.texts(), list(ds.test["text"])) / grid["took_s"]
        assert 1 / goal <= ratio <= goal, f"{name}: estimated {ratio:.2f}x the {grid['took_s']:.0f} s it took"
