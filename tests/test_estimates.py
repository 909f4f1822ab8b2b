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
def test_the_grid_estimate_holds_to_the_timed_grids(corpus: str, backbone: str, features: str, studio_home):
    need_shared({"m4-sample": M4_DIR, "l2r": L2R_DIR}[corpus], corpus)
    record = latest_replayable().get((corpus, backbone, features))
    assert record, f"no replayable bench/speed/estimates.py record for {corpus}, {backbone}, {features}"
    ds = load_dataset(CORPORA[corpus].spec(), studio_home)
    for name, goal in GOALS.items():
        grid = record["grids"][name]
        ratio = replay(grid["replay"], ds.texts(), list(ds.test["text"]), studio_home) / grid["took_s"]
        assert 1 / goal <= ratio <= goal, f"{name}: estimated {ratio:.2f}x the {grid['took_s']:.0f} s it took"


def test_an_estimate_on_a_packaged_backbone_converts_nothing(studio_home, monkeypatch):
    """A lookup changes nothing: the grid estimate of SmolLM2 runs in a home where it is not converted yet had
    converted it (25 s) to read the shape of a step's memory plan from its config file. The entry holds the shape."""
    import core.backbone.locate
    from core.backbone.packaged import is_converted
    from core.runs import Registry
    from core.runs.estimate import grid_seconds
    from core.train import TrainConfig
    from tests.helpers import DATA

    def converting(*args, **kwargs):
        raise AssertionError("a time estimate converted a packaged backbone")
    monkeypatch.setattr(core.backbone.locate, "converted_folder", converting)
    configs = [TrainConfig(data=DATA, backbone=SMOLLM2, method=m, frozen=frozen, train_layers=4, per_class=20,
                           fraction=None, max_len=128)
               for m, frozen in (("finetune", False), ("lora", False), ("ganbert", False), ("features-lr", True))]
    estimate = grid_seconds(Registry(studio_home), configs, 12_000, None, 3_000, 6)
    assert estimate.seconds > 0 and len(estimate.each) == len(configs)
    assert not is_converted(SMOLLM2, studio_home)
