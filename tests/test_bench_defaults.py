"""bench/defaults.py's successive halving: which points of a sweep go on to the remaining seeds."""

from __future__ import annotations

import pytest

from bench.defaults import average, survivors


def point(setting: dict, five: list[float], twenty: list[float], fake: list[float] = ()) -> dict:
    return {"point": setting, "acc": {5: five, 20: twenty}, "fake": list(fake), "cpu": [], "stopped": False}


def test_the_better_half_goes_on_and_the_default_always_does():
    default = point({}, [0.30, 0.32], [0.40, 0.42])  # the worst of five
    rows = [default,
            point({"lr": 1e-4}, [0.50, 0.52], [0.60, 0.62]),
            point({"lr": 3e-4}, [0.45, 0.47], [0.55, 0.57]),
            point({"lr": 1e-3}, [0.40, 0.42], [0.50, 0.52]),
            point({"lr": 3e-3}, [0.35, 0.37], [0.45, 0.47])]
    kept = survivors(rows, [5, 20], keep=0.5)
    assert [r["point"] for r in kept] == [{}, {"lr": 1e-4}, {"lr": 3e-4}, {"lr": 1e-3}]  # ceil(5/2) + default


def test_an_unhealthy_discriminator_or_a_missing_amount_does_not_go_on():
    rows = [point({}, [0.40], [0.50]),
            point({"lr": 1e-3}, [0.60], [0.70], fake=[0.2, 0.7]),  # best, but once called real texts fake
            point({"lr": 3e-4}, [0.55], []),  # no 20/class run finished
            point({"lr": 1e-4}, [0.45], [0.52])]
    assert [r["point"] for r in survivors(rows, [5, 20], keep=0.5)] == [{}, {"lr": 1e-4}]


def test_a_points_average_weighs_each_amount_once_whatever_its_seeds():
    row = point({}, [0.2, 0.4], [0.6])
    assert average(row, [5, 20]) == pytest.approx((0.3 + 0.6) / 2)  # not (0.2 + 0.4 + 0.6) / 3
