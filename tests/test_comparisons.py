"""What makes comparisons fair: step budgets, the same labeled rows for every method with the same seed,
the selection rule small data can carry, classes with no labeled rows left out, the reference baselines
saved without pickle, and the seed statistics checked against scipy on hand-made numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from core.cli import main
from core.compare import (
    METRICS,
    follow_rows,
    mean_ci,
    paired,
    paired_test,
    runs_frame,
    seed_points,
    summarize,
    verdict_line,
)
from core.compare.names import dataset_names
from core.data import CorpusConfig, DataSpec
from core.runs import Registry, RunFolder
from core.runs.execute import train_into
from core.train import METHODS, TrainConfig, classify, load_data, resolve, split_pool
from core.train.methods.stepwise import MIN_VAL_PER_CLASS, selection_rule
from tests.helpers import data_args, hand_runs_frame

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))


def m4(m4_dir, **kw) -> TrainConfig:
    return TrainConfig.of(data=DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl")),
                       **{"fraction": None, "per_class": 5, **kw})


# ---------------------------------------------------------------- budgets, pairing, selection

def test_budgets_are_steps_and_epochs_convert_to_steps():
    finetune = METHODS["finetune"]
    frozen = TrainConfig(frozen=True)
    assert finetune.budget(frozen.with_(steps=123), 25)[0] == 123
    assert finetune.budget(frozen.with_(epochs=7), 130)[0] == 7 * 3  # 130 rows at batch 64: 3 steps an epoch
    # the default converges whatever the epoch arithmetic: 25 labeled rows are one step an epoch
    assert finetune.budget(frozen, 25)[0] == finetune.min_steps_frozen
    assert finetune.budget(frozen, 64 * 100)[0] == 10 * 100  # a large set: 10 epochs
    with pytest.raises(Exception, match="steps or epochs, not both"):
        TrainConfig(steps=5, epochs=5)


def test_the_same_seed_labels_the_same_rows_for_every_method(m4_dir, studio_home):
    per_seed = {}
    for seed in (0, 1):
        rows = set()
        for name in METHODS:
            cfg = resolve(m4(m4_dir, method=name, seed=seed), studio_home)
            rows.add(tuple(split_pool(cfg, load_data(cfg, studio_home)).labeled))
        assert len(rows) == 1, f"methods labeled different rows for seed {seed}"
        per_seed[seed] = rows.pop()
    assert per_seed[0] != per_seed[1]


def test_selection_keeps_the_last_checkpoint_when_validation_is_too_small(m4_dir, studio_home):
    cfg = resolve(m4(m4_dir, frozen=True), studio_home)
    data = split_pool(cfg, load_data(cfg, studio_home))  # a 10% carve of 128 texts: about 2 per class
    rule, why = selection_rule(cfg, data)
    assert rule == "last" and f"fewer than {MIN_VAL_PER_CLASS}" in why
    assert selection_rule(cfg.with_(selection="best"), data)[0] == "best"
    big = resolve(TrainConfig(data=DataSpec(builtin=CorpusConfig(train_per_class=200, test_per_class=10)),
                               frozen=True), studio_home)
    assert selection_rule(big, split_pool(big, load_data(big, studio_home)))[0] == "best"  # 20 validation texts a class


def test_a_small_validation_run_trains_to_its_budget_and_says_so(m4_dir, tiny_backbone, tmp_path, studio_home):
    messages = []
    config = resolve(m4(m4_dir, frozen=True, steps=12, evaluations=3, backbone=str(tiny_backbone)), studio_home)
    result = train_into(config, RunFolder(tmp_path), studio_home,
                        lambda e: e["type"] == "status" and messages.append(e["message"]),
                        lambda: False)
    assert result["selection"] == "last" and result["steps"] == result["budget_steps"] == 12
    assert any(m.startswith("selection: last checkpoint") for m in messages)
    # a head learns nothing from unlabeled rows, so it uses (and encodes) none; it validates on 5/class more
    assert {"labeled": 25, "unlabeled": 0, "val_rows": 25, "test_rows": 65, "labels_read": 50}.items() <= result.items()


# ---------------------------------------------------------------- classes left out, baselines

@pytest.mark.parametrize("method", ["finetune", "ganbert", "tfidf-lr", "features-lr"])
def test_a_class_without_labeled_rows_is_never_predicted(m4_dir, tiny_backbone, tmp_path, method, studio_home):
    cfg = m4(m4_dir, method=method, frozen=method != "tfidf-lr", steps=5, evaluations=1,
             backbone=str(tiny_backbone))
    result = train_into(resolve(cfg, studio_home), RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    assert result["classes_left_out"] == ["bloomz"]
    saved = pd.read_parquet(tmp_path / RunFolder.PREDICTIONS)
    assert "p_bloomz" not in saved and (saved["pred"] != 4).all()
    model = RunFolder(tmp_path).load_model(studio_home)
    assert "bloomz" not in model.labels
    assert all(p.label != "bloomz" and "bloomz" not in p.probabilities for p in classify(model, ["a text"] * 3))


@pytest.mark.parametrize("method", ["tfidf-lr", "features-lr"])
def test_reference_baselines_save_without_pickle_and_reload_identically(tiny_backbone, tmp_path, method, studio_home):
    # fp32, where a reload is exact (on a CPU with native bf16, `auto` is bf16; its reload: test_backbones)
    cfg = resolve(TrainConfig(data=DATA, method=method, frozen=True, fraction=0.5, backbone=str(tiny_backbone),
                               precision="fp32"), studio_home)
    result = train_into(cfg, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    assert result["selection"] == "fixed" and result["test"]["accuracy"] > 1 / 6
    files = {p.name for p in (tmp_path / RunFolder.CHECKPOINT).iterdir()}
    assert files <= {"model.safetensors", "model.json", "vocabulary.json"}
    saved = pd.read_parquet(tmp_path / RunFolder.PREDICTIONS)
    texts = load_data(cfg, studio_home).test["text"].tolist()
    again = classify(RunFolder(tmp_path).load_model(studio_home), texts)
    probs = np.array([[p.probabilities[name] for name in result_labels(saved)] for p in again])
    # padding neighbours differ: float noise
    assert probs == pytest.approx(saved[[f"p_{n}" for n in result_labels(saved)]].to_numpy(), abs=1e-4)


def result_labels(saved: pd.DataFrame) -> list[str]:
    return [c[2:] for c in saved.columns if c.startswith("p_")]


# ---------------------------------------------------------------- statistics against scipy

def test_mean_interval_is_students_t():
    x = [0.41, 0.47, 0.39, 0.52, 0.45]
    low, high = stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
    ci = mean_ci(x)
    assert (ci.n, ci.mean, ci.low, ci.high) == (5, pytest.approx(np.mean(x)), pytest.approx(low), pytest.approx(high))
    assert mean_ci([0.5]).low is None
    flat = paired("A", "B", "accuracy", {0: 0.3, 1: 0.4}, {0: 0.423, 1: 0.523})  # the walk's two seeds, both -0.123
    assert "every one of the 2 seeds differs by exactly that" in flat.explain()[2]


def test_the_pair_names_a_and_b_and_the_group_its_sign_favours():
    """The issue's case: the head beat GAN-BERT on 3 of 3 seeds, A − B = −0.087, and the page named neither."""
    p = paired("GAN-BERT G1 @ 5/class", "Trained head @ 5/class", "accuracy",
               {0: 0.30, 1: 0.35, 2: 0.32}, {0: 0.40, 1: 0.42, 2: 0.411})
    a, b, difference, test = p.explain()
    assert (a, b) == ("A = GAN-BERT G1 @ 5/class", "B = Trained head @ 5/class")
    assert difference.startswith("A − B = -0.087 (accuracy; B leads); 95% CI [")
    assert "excludes 0" in difference and p.ci_excludes_zero
    assert test == ("B wins on 3 of 3 seeds; exact sign test p = 0.25 (the smallest p 3 seeds allow is 0.25, so no "
                    "test on them can reach 0.05)")
    mixed = paired("A", "B", "accuracy", {s: v for s, v in enumerate([0.5, 0.6, 0.4, 0.7, 0.5, 0.6])},
                   {s: v for s, v in enumerate([0.4, 0.7, 0.3, 0.6, 0.4, 0.5])})
    assert "A higher on average, not a lead" in mixed.explain()[2] and "includes 0" in mixed.explain()[2]
    assert mixed.smallest_p == pytest.approx(2 / 64) and "can reach" not in mixed.explain()[3]
    f1 = paired("A", "B", "macro_f1", {0: 0.5, 1: 0.6}, {0: 0.4, 1: 0.5})
    assert "(macro-F1; A leads)" in f1.explain()[2]  # the metric in words, as the page names it
    one = paired("A", "B", "accuracy", {0: 0.5}, {0: 0.4})  # a walk read "A is ahead" from one seed
    assert "higher for A on its one seed, which cannot tell a lead from the draw" in one.explain()[2]


def test_paired_comparison_uses_a_sign_test_up_to_five_seeds_then_wilcoxon():
    a = {0: 0.50, 1: 0.60, 2: 0.55, 3: 0.70, 4: 0.52}
    b = {0: 0.40, 1: 0.62, 2: 0.50, 3: 0.60, 4: 0.50, 9: 0.99}  # seed 9 has no partner
    p = paired("A", "B", "accuracy", a, b)
    diffs = np.array([a[s] - b[s] for s in range(5)])
    assert p.seeds == [0, 1, 2, 3, 4] and p.diffs == pytest.approx(diffs.tolist())
    assert (p.wins, p.losses, p.ties) == (4, 1, 0) and p.test == "exact sign test"
    assert p.p_value == pytest.approx(stats.binomtest(4, 5, 0.5).pvalue)
    low, high = stats.t.interval(0.95, 4, loc=diffs.mean(), scale=stats.sem(diffs))
    assert (p.difference.low, p.difference.high) == (pytest.approx(low), pytest.approx(high))
    assert p.sentence() == "A wins on 4 of 5 seeds" and not p.significant
    even = paired("A", "B", "accuracy", {0: 0.5, 1: 0.6, 2: 0.4}, {0: 0.6, 1: 0.5, 2: 0.4})
    assert (even.wins, even.losses, even.ties) == (1, 1, 1) and even.p_value == 1.0
    assert even.sentence() == "A and B are even: each wins on 1 of 3 seeds"

    rng = np.random.default_rng(0)
    a8 = {s: 0.6 + rng.normal(0, 0.02) for s in range(8)}
    b8 = {s: a8[s] - 0.03 - rng.normal(0, 0.01) for s in range(8)}
    p8 = paired("A", "B", "accuracy", a8, b8)
    assert p8.test == "Wilcoxon signed-rank" and p8.significant
    assert p8.p_value == pytest.approx(stats.wilcoxon([a8[s] - b8[s] for s in range(8)]).pvalue)


def frame_of(rows: list[dict]) -> pd.DataFrame:
    """A runs table as `runs_frame` makes it, from hand-set settings and scores."""
    return hand_runs_frame([(TrainConfig(method=r["method"], seed=r["seed"], lr=r.get("lr"), fraction=r["fraction"],
                                         data=DataSpec(train=r.get("data", "a.jsonl"), test="t.jsonl")), r["score"])
                            for r in rows])


def test_a_groups_interval_is_kept_as_computed_and_says_when_it_runs_past_the_metrics_range():
    rows = [{"method": "finetune", "seed": 0, "fraction": 0.1, "score": 0.05},
            {"method": "finetune", "seed": 1, "fraction": 0.1, "score": 0.95}]
    group = summarize(frame_of(rows), "accuracy", METRICS).groups.iloc[0]
    ci = mean_ci([0.05, 0.95])
    assert ci.low < 0 and ci.high > 1  # two seeds' t interval runs past
    assert (group["accuracy_low"], group["accuracy_high"]) == (ci.low, ci.high)  # not cut to [0, 1]
    assert group["accuracy_interval"] == (f"[{ci.low:.3f}, {ci.high:.3f}]: past [0, 1], too few seeds to bound "
                                          "the mean")
    assert group["mcc_interval"].endswith("past [-1, 1], too few seeds to bound the mean")


def test_a_run_again_of_a_seed_counts_once():
    """A walk ran one seed again: its group showed n=4 over seeds 0 1 1 2 and a narrower interval."""
    rows = [{"method": "finetune", "seed": s, "fraction": 0.1, "score": v} for s, v in ((0, 0.4), (1, 0.5), (2, 0.6))]
    rows += [{"method": "finetune", "seed": 1, "fraction": 0.1, "score": 0.55}]  # the later run of seed 1 stands
    rows += [{"method": "tfidf-lr", "seed": s, "fraction": 0.1, "score": 0.3} for s in range(3)]
    frame = frame_of(rows)
    summary = summarize(frame, "accuracy", METRICS)
    group = summary.groups.set_index("method").loc["BERT fine-tuning"]
    assert (group["n"], group["seeds"]) == (3, [0, 1, 2])
    assert group["accuracy_mean"] == pytest.approx(0.5166667) and group["accuracy_low"] == pytest.approx(
        mean_ci([0.4, 0.55, 0.6]).low)
    pair, = summary.pairs["accuracy"]
    assert pair.seeds == [0, 1, 2] and sorted(abs(d) for d in pair.diffs) == pytest.approx([0.1, 0.25, 0.3])
    assert len(seed_points(frame, summary.groups)) == 6


def test_groups_pairs_and_verdicts():
    rows = [{"method": "finetune", "seed": s, "fraction": 0.1, "score": 0.5 + 0.01 * s} for s in range(5)]
    rows += [{"method": "tfidf-lr", "seed": s, "fraction": 0.1, "score": 0.6 + 0.01 * s} for s in range(5)]
    rows += [{"method": "finetune", "seed": s, "fraction": 0.1, "lr": 1e-3, "score": 0.4} for s in range(3)]
    rows += [{"method": "finetune", "seed": s, "fraction": 0.5, "score": 0.7} for s in range(2)]
    rows += [{"method": "finetune", "seed": s, "fraction": 0.1, "score": 0.9, "data": "b.jsonl"} for s in range(2)]
    summary = summarize(frame_of(rows), "accuracy", METRICS)
    g = summary.groups.set_index("group")
    assert len(g) == 5 and g["n"].sum() == len(rows)  # never averaged across datasets, amounts or settings
    finetune = g.loc["BERT fine-tuning (learning rate default) · a.jsonl @ 10% (10 labeled + 10 validation)"]
    assert finetune["accuracy_mean"] == pytest.approx(0.52)
    assert finetune["accuracy_low"] == pytest.approx(mean_ci([0.5, 0.51, 0.52, 0.53, 0.54]).low)
    assert "BERT fine-tuning (learning rate 0.001) · a.jsonl @ 10% (10 labeled + 10 validation)" in g.index
    # two datasets never share a line, a bar or a panel, even at the same amount as chosen
    assert g.groupby("series")["dataset"].nunique().max() == 1
    assert set(g.loc[g["amount"] == "10%", "panel"]) == {"10% (10 labeled) · a.jsonl", "10% (10 labeled) · b.jsonl"}
    # pairs only within one dataset and amount: three groups at 10% on a.jsonl, three pairs
    assert len(summary.pairs["accuracy"]) == 3
    verdict = summary.verdicts.set_index(["dataset", "amount"]).loc[("a.jsonl", "10%")]
    assert verdict["best"] == "TF-IDF + LR · a.jsonl @ 10% (10 labeled)"
    assert verdict["runner_up"] == ("BERT fine-tuning (learning rate default) · a.jsonl @ 10% (10 labeled + 10 "
                                    "validation)")
    assert (verdict["best_series"], verdict["runner_up_series"]) == (  # for a table whose row names the amount
        "TF-IDF + LR · a.jsonl", "BERT fine-tuning (learning rate default) · a.jsonl")
    assert verdict["difference"] == pytest.approx(0.1) and verdict["n"] == 5
    # five wins of five: the exact sign test's smallest p, 0.0625, is not below 0.05; the t interval is clear of 0
    assert verdict["p_value"] == pytest.approx(stats.binomtest(5, 5).pvalue) == 0.0625
    assert not verdict["significant"] and verdict["ci_excludes_zero"]
    assert verdict["leader"] == "TF-IDF + LR · a.jsonl" and verdict["verdict"] == "TF-IDF + LR · a.jsonl leads"
    lines = [verdict_line(v) for v in summary.verdicts.to_dict("records")]  # as Compare and the CLI say them
    assert lines[0] == ("10%: TF-IDF + LR · a.jsonl leads BERT fine-tuning (learning rate default) · a.jsonl by 0.100 "
                        "(on every one of the 5 seeds); exact sign test p = 0.0625, "
                        "n = 5 seeds; not at the same labels: the first read 10, the second 20 (validation "
                        "included), so the second saw labels the first never did")  # each name once
    assert "50%: only BERT fine-tuning (learning rate default) · a.jsonl measured (0.700)" in lines
    # JSON: one list of groups, one of pairs
    out = summary.to_json()
    assert json.loads(json.dumps(out)) == out and {len(out["groups"]), len(out["pairs"])} == {5, 9}


def test_a_verdict_in_words_says_what_its_seeds_show():
    nan = float("nan")
    row = {"amount": "5/class", "best_series": "A", "best_mean": 0.5, "runner_up": "B @ 5/class",
           "runner_up_series": "B", "runner_up_mean": 0.48, "difference": 0.02, "low": -0.01, "high": 0.05,
           "ci_excludes_zero": False, "leader": None, "test": "exact sign test", "p_value": 0.625, "n": 5}
    # no winner where the interval includes 0: that is said first, before any number
    assert verdict_line(row) == ("5/class: no difference can be told between A (0.500) and B (0.480): the first − "
                                 "the second = +0.020 on the 5 seeds both ran, 95% CI [-0.010, +0.050], which "
                                 "includes 0; exact sign test p = 0.625, n = 5 seeds")
    settled = row | {"low": 0.01, "high": 0.03, "ci_excludes_zero": True, "leader": "A", "p_value": 0.0625}
    assert verdict_line(settled).startswith("5/class: A leads B by 0.020 (95% CI [+0.010, +0.030], which excludes "
                                            "0)")
    one = row | {"low": nan, "high": nan, "n": 1, "p_value": 1.0}
    assert verdict_line(one) == ("5/class: no difference can be told from one shared seed: A (0.500) and B (0.480); "
                                 "on the seed both ran, the first − the second = +0.020")
    apart = row | {"n": 0, "low": nan, "high": nan, "test": "no shared seeds: not paired", "p_value": nan}
    assert verdict_line(apart) == ("5/class: no difference can be told: A (0.500) and B (0.480) share no seed, so "
                                   "they are not paired")
    # ahead over all its seeds, behind on the two both ran, and the interval excludes 0: B leads where they pair
    behind = row | {"difference": -0.02, "low": -0.03, "high": -0.01, "n": 2, "p_value": 0.5,
                    "ci_excludes_zero": True, "leader": "B"}
    assert verdict_line(behind).startswith("5/class: B leads A by 0.020 (95% CI [+0.010, +0.030]")  # the lead's CI
    level = row | {"difference": 0.0, "low": 0.0, "high": 0.0, "test": "no test: no seed differs", "p_value": 1.0}
    assert verdict_line(level).endswith("every one of the 5 seeds differs by exactly that, which includes 0; no test: "
                                        "no seed differs, n = 5 seeds")


def test_cli_compare_prints_groups_pairs_and_verdicts(m4_dir, tiny_backbone, capsys):
    for method in ("finetune", "features-lr"):
        for seed in ("0", "1"):
            assert main(["train", *data_args(m4_dir), "--method", method, "--per-class", "5", "--frozen",
                         "--steps", "5", "--seed", seed, "--backbone", str(tiny_backbone), "--tag", "cmp"]) == 0
    capsys.readouterr()
    assert main(["compare", "--tag", "cmp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["n"] for g in out["groups"]] == [2, 2]
    pair = next(p for p in out["pairs"] if p["metric"] == "accuracy")
    assert pair["seeds"] == [0, 1] and pair["test"] in ("exact sign test", "no test: no seed differs")
    assert len(out["verdicts"]) == 1
    assert main(["compare", "--tag", "cmp"]) == 0
    text = capsys.readouterr().out
    assert "95% CI" in text and "verdicts" in text and "seeds" in text
    rows = [line for line in text.splitlines() if " n=2 " in line]  # issue 61: columns after the longest name
    assert len(rows) == 2 and len({line.index(" n=2 ") for line in rows}) == 1
    assert main(["compare", "--tag", "nothing"]) == 0
    assert "no finished runs" in capsys.readouterr().out


# ---------------------------------------------------------------- SetFit

@pytest.mark.parametrize("features", ["layers", "sentence"])
def test_setfit_trains_saves_without_pickle_and_reloads_identically(m4_dir, tiny_backbone, tmp_path, features,
                                                                    studio_home):
    events = []
    cfg = resolve(m4(m4_dir, method="setfit", frozen=True, steps=3, setfit_features=features,
                      backbone=str(tiny_backbone)), studio_home)
    assert not cfg.frozen  # SetFit always tunes its body, so a frozen sweep runs it unfrozen
    result = train_into(cfg, RunFolder(tmp_path), studio_home, events.append, lambda: False)
    assert result["steps"] == 3 and result["selection"] == "last" and result["classes_left_out"] == ["bloomz"]
    assert [e["step"] for e in events if e["type"] == "progress"] == [1, 2, 3]
    checkpoint = tmp_path / RunFolder.CHECKPOINT
    written = [p for p in checkpoint.rglob("*") if p.is_file()]
    assert all(p.suffix in (".safetensors", ".json", ".txt", ".md") for p in written), written
    assert (checkpoint / "body" / "model.safetensors").exists()
    saved = pd.read_parquet(tmp_path / RunFolder.PREDICTIONS)
    model = RunFolder(tmp_path).load_model(studio_home)
    again = classify(model, load_data(cfg, studio_home).test["text"].tolist())
    probs = np.array([[p.probabilities[n] for n in model.labels] for p in again])
    assert probs == pytest.approx(saved[[f"p_{n}" for n in model.labels]].to_numpy(), abs=1e-5)


def test_setfit_stops_when_cancelled(m4_dir, tiny_backbone, tmp_path, studio_home):
    from core.train import Cancelled
    asked = iter([False, True])
    with pytest.raises(Cancelled):
        train_into(resolve(m4(m4_dir, method="setfit", steps=20, backbone=str(tiny_backbone)), studio_home),
                   RunFolder(tmp_path),
                   studio_home, lambda e: None, lambda: next(asked, True))


def test_setfit_default_budget_is_its_pairs_capped_on_a_cpu():
    setfit = METHODS["setfit"]
    cfg = TrainConfig(method="setfit")
    assert setfit.budget(cfg, 25, gpu=False)[0] == 63  # 20 pairs per text × 25 texts / 16 per step
    assert setfit.budget(cfg, 100, gpu=False)[0] == 100  # 250 steps capped on a CPU
    assert setfit.budget(cfg, 100, gpu=True)[0] == 250
    assert setfit.budget(cfg.with_(steps=7), 100, gpu=False)[0] == 7


def test_a_selection_follows_its_runs_to_their_new_rows():
    assert follow_rows(["a", "b", "c"], [1, 2], ["c", "b"]) == [0, 1]
    assert follow_rows(["a", "b"], [0], ["b", "c"]) == []  # a run gone is no longer selected
    assert follow_rows(["a"], [3], ["a"]) == []  # a stale row number selects nothing


# ------------------------------------------------------------ names that tell runs apart

def test_runs_alike_but_for_a_setting_outside_their_name_say_which(capsys, studio_home):
    """The issue's pair: GAN-BERT at max length 128 and 256 read the same on every page and in the diff."""
    from core.compare import distinct_names, settings_diff
    from core.runs import Registry

    reg = Registry(studio_home)
    base = TrainConfig(data=DATA, method="ganbert", frozen=True, per_class=5, fraction=None, max_len=128)
    short, long_, other = (reg.create(base), reg.create(base.with_(max_len=256)),
                           reg.create(base.with_(method="features-lr")))
    twice = reg.create(base.with_(seed=3)), reg.create(base.with_(seed=3, max_len=256))
    runs = reg.list()
    names = distinct_names(runs)
    # what tells them apart follows the method, where a table cut at its column's width still shows it
    assert names[short] == reg.get(short).name.replace(" @ ", " (max length 128) @ ")
    assert names[long_] == reg.get(long_).name.replace(" @ ", " (max length 256) @ ")
    assert names[other] == reg.get(other).name  # alone with its name: nothing added
    assert len(set(names.values())) == len(runs)
    differs = runs_frame(runs).set_index("run_id")["differs in"]  # Compare's runs table says it too
    assert (differs[short], differs[long_], differs[other]) == ("max length 128", "max length 256", "")
    again = reg.create(base)  # queued twice with the same settings: the run id tells them apart
    names = distinct_names(reg.list())
    assert f"run {again[-6:]}) @ " in names[again] and f"run {short[-6:]}) @ " in names[short]

    two = settings_diff([reg.get(short), reg.get(long_)], names)
    assert list(two.columns) == ["run", "max length"]  # a row a run, its name whole; short setting headers
    assert two["run"].tolist() == [names[short], names[long_]] and two["max length"].tolist() == ["128", "256"]
    three = settings_diff([reg.get(i) for i in (short, long_, twice[1])])
    assert len(three) == 3 and set(three.columns) == {"run", "max length", "seed"}
    methods = settings_diff([reg.get(short), reg.get(other)])["method"].tolist()
    # by the names every page uses: the ids "ganbert" and "features-lr", or "BERT fine-tuning" for a head, had shown
    assert methods == ["GAN-BERT G1 (noise) on frozen features", "Frozen features + LR"]
    for run_id, took in ((short, 100), (long_, 90)):  # the budget each ran, where "epochs: default | 30" had shown
        reg.claim(run_id)
        reg.mark_running(run_id, 1, "cpu")
        reg.finish(run_id, "done", "finished", {"steps": took})
    assert settings_diff([reg.get(short), reg.get(long_)], names)["steps run"].tolist() == ["100 steps", "90 steps"]

    assert main(["runs"]) == 0  # the CLI lists the registry with the same names
    out = capsys.readouterr().out
    assert "(max length 256" in out and "(max length 128" in out


def test_a_setting_a_runs_method_does_not_read_shows_as_not_applying(studio_home):
    """LR beside GAN-BERT's control: the control's adversarial part is off, LR has none ('–', not 'on'); the
    control trains no generator; LR's C keeps its capitals."""
    from core.compare import settings_diff
    from core.compare.names import setting_label
    from core.runs import Registry

    reg = Registry(studio_home)
    base = TrainConfig(data=DATA, method="ganbert", frozen=True, per_class=5, fraction=None, max_len=128)
    control, lr = reg.create(base.with_(adversarial=False)), reg.create(base.with_(method="features-lr", lr_c=10.0))
    diff = settings_diff([reg.get(control), reg.get(lr)])
    assert diff["adversarial part"].tolist() == ["off", "–"]
    assert diff["LR C"].tolist() == ["–", "10"] and setting_label("lr_c") == "LR C"
    assert setting_label("max_len") == "max length"


@pytest.mark.parametrize("n, says", [(0, None), (1, "nor is there an interval"), (5, "0.0625"), (6, None)])
def test_the_verdicts_say_what_their_seeds_can_show(n, says):
    from core.compare import what_seeds_allow

    note = what_seeds_allow(n)
    assert (note == "") if says is None else (says in note and f"With {n} shared seed" in note)


def test_mcnemar_says_which_run_kept_no_predictions(studio_home):
    """A run restored from a record of its metrics has no predictions file: Compare had shown a traceback."""
    registry = Registry(studio_home)
    runs = [registry.create(TrainConfig(method="tfidf-lr", seed=s)) for s in (0, 1)]
    with pytest.raises(ValueError, match=f"runs {runs[0]} and {runs[1]} kept no per-text test predictions"):
        paired_test(registry, *runs)


def test_mcnemar_tells_another_labeling_of_the_same_texts_from_other_texts(studio_home):
    """A TREC walk selected a coarse run and a fine one: the same 500 questions, other labels. McNemar said they
    were tested on different texts."""
    import pandas as pd

    registry = Registry(studio_home)
    runs = [registry.create(TrainConfig(method="tfidf-lr", seed=s)) for s in (0, 1, 2)]
    frames = [pd.DataFrame({"id": ["a", "b", "c"], "label": labels, "pred": ["x", "x", "y"]})
              for labels in (["x", "y", "y"], ["X:1", "Y:2", "y"], ["x", "y", "y"])]
    for run_id, frame in zip(runs, frames):
        registry.folder(run_id).write_predictions(frame)
    with pytest.raises(ValueError, match="the same texts with other labels \\(2 of 3 differ"):
        paired_test(registry, runs[0], runs[1])
    registry.folder(runs[2]).write_predictions(frames[2].iloc[:2])
    with pytest.raises(ValueError, match="tested on different texts"):
        paired_test(registry, runs[0], runs[2])
    assert paired_test(registry, runs[0], runs[0]).only_a == 0


def test_two_datasets_of_one_name_stay_apart_and_are_named_by_their_folders():
    """An upload and the same file loaded by path are two datasets named "train.jsonl": one verdict had ranked
    the groups of both against each other, and their series were named by every path in full."""
    specs = [DataSpec(train=f"/home/me/{folder}/train.jsonl", test=f"/home/me/{folder}/dev.jsonl")
             for folder in ("old/m4-sample", "new/m4-sample")]
    frame = hand_runs_frame([(TrainConfig(data=spec, method=m, fraction=0.1, seed=s, frozen=m == "features-lr"),
                              0.5 + s / 10) for spec in specs for m in ("tfidf-lr", "features-lr") for s in (0, 1)])
    summary = summarize(frame, "accuracy", METRICS)
    assert sorted(summary.verdicts["dataset"]) == ["m4-sample (new)", "m4-sample (old)"]
    assert "TF-IDF + LR · m4-sample (old)" in set(summary.groups["series"])
    uploads = [DataSpec(train=f"/home/studio/uploads/{h}/train.jsonl")
               for h in ("e9ab398fa194bef5", "0123456789abcdef")]
    assert sorted(dataset_names(uploads).values()) == ["train.jsonl (0123456789abcdef)",
                                                       "train.jsonl (e9ab398fa194bef5)"]
    assert all(p.a.split(" · ")[-1].split(" @ ")[0] == p.b.split(" · ")[-1].split(" @ ")[0]
               for p in summary.pairs["accuracy"])  # a pair never spans the two
    # what tells their runs apart, named by a file's folder and name, not its whole path
    from core.compare.names import setting_label, setting_value
    assert f"{setting_label('data.train')} {setting_value(specs[1].train, 'data.train')}" == (
        "train file m4-sample/train.jsonl")
    two_corpora = dataset_names([DataSpec(builtin=CorpusConfig(train_per_class=n)) for n in (20, 30)])
    assert sorted(two_corpora.values()) == ["built-in (synthetic), 20/class", "built-in (synthetic), 30/class"]
    # one folder tested on two files (L2R's dev, then its test): named by the file, not "l2r (l2r) #664cf9"
    l2r = [DataSpec(train="/d/l2r/train.jsonl", test="/d/l2r/dev.jsonl"),
           DataSpec(train="/d/l2r/train.jsonl", val="/d/l2r/dev.jsonl", test="/d/l2r/test.jsonl")]
    assert sorted(dataset_names(l2r).values()) == ["l2r (tested on dev.jsonl)", "l2r (tested on test.jsonl)"]


def test_an_unset_setting_reads_as_its_own_word():
    """The walk's pool sweep named the whole pool "unlabeled rows default" though the field said "all"."""
    from core.compare.names import setting_value

    assert setting_value(None, "unlabeled_limit") == "all" and setting_value(None, "max_len") == "auto"
    assert setting_value(None, "lr") == "default" and setting_value(1000, "unlabeled_limit") == "1000"


def test_a_run_is_named_as_its_group_on_every_page(studio_home):
    """The walk's run read "… (unlabeled rows 1000) @ 20/class" in Compare's groups, plain "… @ 20/class" in
    Classify and nothing in "differs in": its only twin of another pool was at another amount."""
    from core.compare import distinct_names
    from core.compare.seeds import groups
    from core.runs import Registry

    reg = Registry(studio_home)
    base = TrainConfig(data=DATA, method="ganbert", frozen=True, per_class=20, fraction=None, unlabeled_limit=1000)
    small, whole = reg.create(base), reg.create(base.with_(per_class=5, unlabeled_limit=None))
    for run_id, accuracy in ((small, 0.4), (whole, 0.3)):
        reg.claim(run_id)
        reg.mark_running(run_id, 1, "cpu")
        reg.finish(run_id, "done", "finished", {"labeled": 100, "test": {m: accuracy for m in METRICS}})
    runs = reg.list()
    names = distinct_names(runs)
    assert names[small].startswith("GAN-BERT G1 (noise) on frozen features (unlabeled rows 1000) @ 20/class")
    assert names[whole].startswith("GAN-BERT G1 (noise) on frozen features (unlabeled rows all) @ 5/class")
    frame = runs_frame(runs).set_index("run_id")
    assert frame.loc[small, "differs in"] == "unlabeled rows 1000"
    group = groups(frame.reset_index(), METRICS).set_index("amount")["group"]
    # the group is the run's name less its seed and dataset
    assert names[small].startswith(group["20/class"]) and names[whole].startswith(group["5/class"])


def test_tfidf_runs_are_never_told_apart_by_a_backbone_they_do_not_read(studio_home):
    """A walk's TF-IDF + LR runs read "(backbone …)" beside a grid's adapted backbone: TF-IDF reads none."""
    from core.compare import distinct_names
    from core.compare.seeds import group_key

    reg = Registry(studio_home)
    base = TrainConfig(data=DATA, method="tfidf-lr", per_class=5, fraction=None)
    plain, adapted = reg.create(base), reg.create(base.with_(backbone="/somewhere/adapted", seed=1))
    gan = reg.create(TrainConfig(data=DATA, method="ganbert", frozen=True, per_class=5, fraction=None,
                                 backbone="/somewhere/adapted"))
    gan_base = reg.create(TrainConfig(data=DATA, method="ganbert", frozen=True, per_class=5, fraction=None))
    names = distinct_names(reg.list())
    assert "backbone" not in names[plain] and "backbone" not in names[adapted]
    assert group_key(reg.get(plain).config) == group_key(reg.get(adapted).config)  # one series over both seeds
    # GAN-BERT reads it: said once, in the name's tag, never again as a setting that differs (issue 84, item 10)
    assert " · adapted @ 5/class" in names[gan] and "backbone" not in names[gan]
    assert "backbone" not in names[gan_base] and " · " not in names[gan_base].split(" @ ")[0]


def test_a_backbone_is_named_once_and_a_group_says_every_label_it_read(tiny_backbone, tmp_path, studio_home):
    """Issue 84, item 10: TF-IDF + LR runs were named '· SmolLM2' though they read no encoder; a run on another
    backbone said it twice ('… · SmolLM2 hidden (backbone SmolLM2-135M …)'); a MiniLM run was renamed '(backbone
    MiniLM (bundled))' once a run on another backbone existed; a group that read 160 labels was titled
    '(80 labeled)'."""
    import shutil

    from core.compare import distinct_names
    from core.compare.seeds import groups

    other = tmp_path / "other-bert"
    shutil.copytree(tiny_backbone, other)
    reg = Registry(studio_home)
    base = TrainConfig(data=DATA, method="finetune", per_class=20, fraction=None)
    def finished(config: TrainConfig) -> str:
        run_id = reg.create(config)
        reg.claim(run_id)
        reg.mark_running(run_id, 1, "cpu")
        reg.finish(run_id, "done", "finished", {"labeled": 120, "val_rows": 0 if config.method == "tfidf-lr" else 120,
                                                "test": dict.fromkeys(METRICS, 0.5)})
        return run_id
    minilm = finished(base)
    before = distinct_names(reg.list())[minilm]
    tfidf = finished(base.with_(method="tfidf-lr", backbone=str(other)))
    on_other = [finished(base.with_(backbone=str(other), seed=s)) for s in (0, 1)]
    names = distinct_names(reg.list())
    assert names[minilm] == before and "backbone" not in before  # not renamed by a run on another backbone
    assert " · " not in names[tfidf].split(" @ ")[0]  # no backbone read, none named
    assert names[on_other[0]].startswith("BERT fine-tuning · other-bert @ 20/class (120 labeled)")
    assert all("(backbone" not in n for n in names.values())
    table = groups(runs_frame(reg.list()), METRICS).set_index("series")
    assert table.loc["BERT fine-tuning · other-bert", "group"] == (
        "BERT fine-tuning · other-bert @ 20/class (120 labeled + 120 validation)")
    assert table.loc["BERT fine-tuning", "n"] == 1 and table.loc["BERT fine-tuning · other-bert", "n"] == 2
    assert table.loc["TF-IDF + LR", "group"] == "TF-IDF + LR @ 20/class (120 labeled)"
