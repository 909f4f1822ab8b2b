"""bench/studies/defaults.py's successive halving: which points of a sweep go on to the remaining seeds;
bench/studies/regime.py's
trained-encoder plan."""

from __future__ import annotations

import pytest

from bench.studies.defaults import average, survivors


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


def test_sweeps_run_seed_by_seed_across_every_named_sweep(monkeypatch):
    """Two sweeps cut short after their first seed leave each point of both at that seed (a method beside its
    control), not one sweep's every seed and none of the other's."""
    from argparse import Namespace

    import bench.studies.defaults as defaults

    calls = []
    monkeypatch.setattr(defaults, "measure", lambda registry, spec, name, row, amounts, seeds, **_: calls.append(
        (seeds[0], name, row["point"].get("max_steps"))))
    names = ["GAN-BERT G1 trained budget", "GAN-BERT control trained budget"]
    args = Namespace(seeds=[0, 1], halving=None, points=None, per_class=[20], precision="auto", any_precision=False)
    defaults.run_sweeps(None, None, names, args, corpus=None, train=True)
    first = [(name, steps) for name in names for steps in (None, 250, 1500)]
    assert calls == [(0, *c) for c in first] + [(1, *c) for c in first]


def test_a_points_average_weighs_each_amount_once_whatever_its_seeds():
    row = point({}, [0.2, 0.4], [0.6])
    assert average(row, [5, 20]) == pytest.approx((0.3 + 0.6) / 2)  # not (0.2 + 0.4 + 0.6) / 3


def test_the_trained_encoder_study_holds_the_issues_runs_cheapest_parts_first(capsys):
    """bench/studies/regime.py --part full: 5 and 20/class on seeds 0-2 (100/class and seed 3 asked for, left out), G1
    and its control at each pool with each seed's pair together, G2 on the whole pool, the `tf` preset at 5/class only;
    the parts run in order of their estimate, which is printed."""
    from bench.studies.regime import cheapest_first, full_parts, name_of
    from core.train import TrainConfig

    parts = dict(full_parts([5, 20, 100], [0, 1, 2, 3]))
    runs = [r for part in parts.values() for r in part]
    assert {r[3] for r in runs} == {5, 20} and {r[4] for r in runs} == {0, 1, 2} and {r[2] for r in runs} == {"base"}
    assert len(runs) == 2 * 3 * (2 + 2 * 3 + 1) + 3
    pairs = parts["G1 and its control, pool 1,000"]
    assert [(r[0], r[3], r[4]) for r in pairs[:2]] == [("ganbert-control-full", 5, 0), ("ganbert-noise-full", 5, 0)]
    assert all(r[5]["unlabeled_limit"] == 1000 for r in pairs)
    assert {r[3] for r in parts["G1 as the paper ran it (tf preset), whole pool"]} == {5}
    for name, pool, _, n, seed, settings in runs:  # the report tells each run's name back from its config
        assert name_of(TrainConfig.of(fraction=None, per_class=n, seed=seed, **settings)) == name
    titles = list(parts)
    estimates = [(float(len(titles) - i), 0 if i == 0 else 2) for i in range(len(titles))]
    ordered = cheapest_first(list(parts.items()), estimates)
    assert [title for title, _ in ordered] == titles[::-1]
    printed = capsys.readouterr().out
    assert f"{len(runs)} runs, {2 * (len(titles) - 1)} still to run" in printed
    assert printed.index(titles[-1]) < printed.index(titles[0])
    assert f"{titles[0]}: {len(parts[titles[0]])} runs, all recorded" in printed  # finished: no estimate
    assert f"{titles[1]}: {len(parts[titles[1]])} runs, 2 to run, " in printed
    # --pools 0: the parts the step cap cannot touch, before the budget sweep settles it
    assert list(dict(full_parts([5, 20], [0, 1, 2], ["0"]))) == ["fine-tuning", "adapters",
                                                                 "G1 and its control, pool 0"]


def test_old_records_get_the_floor_they_ran_at_and_runs_without_it_stay_apart_in_the_study(tmp_path):
    """A GAN-BERT record from before the floor on batches without labels says what it ran: the floor's 0.05 where
    the floor gives the authors' copies anyway (so today's defaults find it), 1.0 where it would have added copies
    (L2R's whole pool in batches of 16: 6 against 24). The study's tables keep the latter apart."""
    import json

    from bench.migrate_records import migrate, with_floor
    from bench.studies.regime import pool_of
    from core.train import TrainConfig

    def entry(batch: int, labeled: int, unlabeled: int, **config) -> dict:
        return {"id": "r", "config": {"method": "ganbert", "gan_preset": "studio", "batch_size": batch, **config},
                "metrics": {"labeled": labeled, "unlabeled": unlabeled}}

    whole, pool = entry(16, 100, 11221), entry(16, 100, 1000)
    assert with_floor(whole)["config"]["batches_without_labels"] == 1.0
    assert with_floor(pool)["config"]["batches_without_labels"] == 0.05
    assert with_floor(entry(64, 100, 11221))["config"]["batches_without_labels"] == 0.05  # batch 64: 6 copies do
    for kept in (entry(16, 100, 11221, gan_preset="tf"), entry(16, 100, 11221, batches_without_labels=0.05),
                 {"id": "f", "config": {"method": "finetune"}, "metrics": {}}, {"bench": "train"}):
        assert with_floor(kept) == kept
    with pytest.raises(ValueError, match="no labeled and unlabeled counts"):
        with_floor({"id": "x", "config": whole["config"], "metrics": {}})

    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in (whole, pool, {"bench": "train"})))
    assert migrate(path) == 2 and migrate(path) == 0  # idempotent
    assert [json.loads(line).get("config", {}).get("batches_without_labels") for line in path.read_text().splitlines()
            ] == [1.0, 0.05, None]

    today = TrainConfig.of(method="ganbert", batches_without_labels=0.05)
    assert pool_of(today) == "all" and pool_of(today.with_(unlabeled_limit=1000)) == "1,000"
    assert pool_of(today.with_(batches_without_labels=1.0)) == "all (the authors' copies alone)"
    assert pool_of(today.with_(gan_preset="tf")) == "all" and pool_of(TrainConfig(method="finetune")) == "–"


def test_the_adapted_column_has_its_weights_before_any_run_on_it_is_resolved(tmp_path, monkeypatch, capsys,
                                                                             studio_home):
    """A fresh bench home holds the adapted backbone's record (bench/records/adapt.jsonl), not its weights, and
    every run on it resolves against them, recorded or not: the study makes it again first (a report leaves the
    column out, saying so), and one already in the home is used as it is."""
    import bench.studies.regime as regime
    from core.runs import Registry
    from core.train.adaptation import RECORD

    folder, remade = tmp_path / "minilm-tapt-l2r-x", []
    monkeypatch.setattr(regime, "point_config", lambda point, home, corpus: ("adapt", corpus))  # reads no corpus here
    monkeypatch.setattr(regime, "adapted", lambda registry, config, train: (folder, {"recorded": True}))

    def on_disk(registry, config):
        remade.append(config)
        assert config == ("adapt", "l2r")
        folder.mkdir()
        (folder / RECORD).write_text("{}")
        return folder

    monkeypatch.setattr(regime, "on_disk", on_disk)
    registry = Registry(studio_home)
    assert regime.adapted_column(registry, "l2r", report_only=True) is None and not remade
    assert "left out" in capsys.readouterr().err
    assert regime.adapted_column(registry, "l2r", report_only=False) == folder and len(remade) == 1
    assert regime.adapted_column(registry, "l2r", report_only=False) == folder and len(remade) == 1  # in the home now
