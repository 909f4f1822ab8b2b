"""Docs that cannot rot: docs/results.md is what `python -m bench.report` writes from the committed records, every
relative link in the README and docs/ resolves, and every `python -m core` flag they name exists in that
command's --help."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from core.cli import build_parser
from core.paths import REPO_ROOT
from tests.helpers import need

PAGES = [p for p in (REPO_ROOT / "README.md", REPO_ROOT / "CHANGELOG.md", *sorted((REPO_ROOT / "docs").glob("*.md")))
         if p.exists()]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
COMMAND = re.compile(r"python -m core ((?:data (?:check|clean-uploads))|[a-z]+)\b([^`\n]*)")


@pytest.mark.slow
def test_results_are_what_the_records_say(tmp_path):
    """Regenerated from bench/records in a scratch home: the committed page and the README's results table must
    match, figure for figure."""
    out, readme = tmp_path / "results.md", tmp_path / "README.md"
    readme.write_text((REPO_ROOT / "README.md").read_text())
    subprocess.run([sys.executable, "-m", "bench.report", "--out", str(out), "--readme",
                    str(readme)], check=True, cwd=REPO_ROOT, capture_output=True)
    stale = "is stale: run .venv/bin/python -m bench.report"
    assert out.read_text() == (REPO_ROOT / "docs" / "results.md").read_text(), f"docs/results.md {stale}"
    assert readme.read_text() == (REPO_ROOT / "README.md").read_text(), f"README.md's results table {stale}"


@pytest.mark.slow
def test_the_train_forms_smollm2_gain_is_what_the_records_say(tmp_path, monkeypatch):
    """The Train page tells a frozen MiniLM grid what SmolLM2's hidden states gained (issue 78's decision): the
    figures it shows are bench/studies/default_backbone.py's, paired by seed from the committed records."""
    sys.path.insert(0, str(REPO_ROOT))
    from bench.report.restore import restored
    from bench.sample_runs import recorded
    from bench.studies.default_backbone import LENGTHS, accuracies, paired
    from core.compare.advice import MEASURED
    from core.runs import Registry

    monkeypatch.setenv("STUDIO_HOME", str(tmp_path))
    measured = {e["corpus"]: e for e in recorded(LENGTHS)}
    for gain in MEASURED:
        entry = measured[gain.records]
        by = accuracies(restored(gain.records, Registry(tmp_path / gain.records)), entry["lengths"], entry["precision"])
        diffs = paired(by, "SmolLM2 hidden", gain.per_class)
        assert (round(sum(diffs) / len(diffs), 3), sum(d > 0 for d in diffs), len(diffs)) == \
            (round(gain.difference, 3), gain.ahead, gain.seeds), gain


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a web address or an anchor of the page itself
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert broken == [], f"{page.name} links to what is not there: {broken}"


def flags_of(command: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    words = command.split()
    found = sub.choices[words[0]]
    if len(words) > 1:
        found = next(a for a in found._actions if a.dest == "data_command").choices[words[1]]
    return {flag for action in found._actions for flag in action.option_strings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_flag_the_docs_name_exists(page):
    unknown = []
    for command, rest in COMMAND.findall(page.read_text()):
        known = flags_of(command)
        unknown += [f"{command} {flag}" for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest)
                    if flag not in known]
    assert unknown == [], f"{page.name} names flags its commands do not have: {unknown}"


def test_the_headline_reads_each_method_at_its_defaults_on_the_default_engine():
    """bench/speed/encode.py's runs share every setting with the defaults but the engine: its int8 runs, 0.03 lower on
    the M4 sample, had taken the headline's cells."""
    sys.path.insert(0, str(REPO_ROOT))
    from bench.sample_runs import at_defaults
    from core.data import DataSpec
    from core.train import TrainConfig, method_for

    asked = TrainConfig(data=DataSpec(train="/data/train.jsonl"), method="features-lr", frozen=True, fraction=None,
                        per_class=5)
    default = method_for(asked).settle(asked).with_(encoder_engine="torch")  # as a run records it
    assert at_defaults(default, 5, {"method": "features-lr", "frozen": True})
    assert not at_defaults(default, 20, {"method": "features-lr", "frozen": True})
    assert not at_defaults(default.with_(encoder_engine="onnx-int8"), 5, {"method": "features-lr", "frozen": True})
    assert not at_defaults(default.with_(tags=("encode",)), 5, {"method": "features-lr", "frozen": True})


def test_the_attention_dropout_sweep_pairs_zero_with_the_backbones_rate_by_seed(tmp_path):
    """bench/studies/defaults.py's sweep in docs/results.md: a run that left attention dropout to the backbone (stored
    None, or MiniLM's 0.1 written in) is paired with the same config at 0 on each seed; a run alike in nothing else is
    not."""
    sys.path.insert(0, str(REPO_ROOT))
    from bench import sample_runs
    from bench.report.sweeps import attention_section
    from core.runs import Registry

    entry = next(json.loads(line) for line in sample_runs.CORPORA["m4-sample"].records.read_text().splitlines()
                 if '"tfidf-lr"' not in line and '"frozen": false' in line and '"method": "finetune"' in line)
    base = {**entry["config"], "tags": ["defaults"], "per_class": 5, "fraction": None, "validation": "auto",
            "adversarial": True, "gan_preset": "studio"}
    registry, runs = Registry(tmp_path), []
    for seed, (shipped, zero) in enumerate(((0.40, 0.42), (0.30, 0.33), (0.50, 0.50))):
        for rate, accuracy in ((None if seed else 0.1, shipped), (0.0, zero)):
            config = {**base, "seed": seed, "attention_dropout": rate}
            metrics = {**entry["metrics"], "cpu_seconds": 100.0 if rate is None or rate else 40.0,
                       "test": {**entry["metrics"]["test"], "accuracy": accuracy}}
            runs.append(sample_runs.restore(registry, {**entry, "config": config, "metrics": metrics},
                                            sample_runs.CORPORA["m4-sample"].folder))
    other = {**base, "seed": 0, "attention_dropout": 0.0, "lr": 3e-5}  # another rate: nothing to pair it with
    runs.append(sample_runs.restore(registry, {**entry, "config": other}, sample_runs.CORPORA["m4-sample"].folder))
    table = attention_section({"m4-sample": runs})
    row, = [line for line in table.splitlines() if line.startswith("| m4-sample")]
    assert "| fine-tuning | 5/class | 0.400 | 0.417 | +0.017 [" in row and "(n=3) | 2 / 0 |" in row
    assert row.endswith("| 100 → 40 |")
    assert attention_section({"m4-sample": runs[-1:]}) == ""


def test_the_budget_sweep_pairs_g1_with_its_control_and_with_the_default_cap_by_seed(tmp_path):
    """bench/studies/defaults.py's trained-encoder budget in docs/results.md: at each step cap, G1 − control on the
    same seeds, and G1 − G1 at the default cap; runs at another attention dropout (the attention sweep's) stay out,
    and runs with the floor on batches without labels make rows of their own, and are paired in a table of their own
    with their twins that had the authors' copies alone."""
    sys.path.insert(0, str(REPO_ROOT))
    from bench import sample_runs
    from bench.report.sweeps import budget_section
    from core.runs import Registry

    corpus = sample_runs.CORPORA["m4-sample"]
    entry = next(json.loads(line) for line in corpus.records.read_text().splitlines()
                 if '"frozen": false' in line and '"method": "finetune"' in line)
    base = {**entry["config"], "method": "ganbert", "generator": "noise", "gan_preset": "studio", "tags": ["defaults"],
            "per_class": 20, "fraction": None, "validation": "auto", "attention_dropout": 0.0, "unlabeled_limit": None}
    registry, runs = Registry(tmp_path), []
    scores = {(500, True): (0.30, 0.28, 0.26), (500, False): (0.29, 0.29, 0.25), (250, True): (0.31, 0.30, 0.26),
              (250, False): (0.28, 0.27, 0.27)}
    for (cap, game), by_seed in scores.items():
        for seed, accuracy in enumerate(by_seed):
            config = {**base, "seed": seed, "max_steps": cap, "adversarial": game}
            metrics = {**entry["metrics"], "cpu_seconds": 4.0 * cap if game else 3.0 * cap, "steps": cap,
                       "test": {**entry["metrics"]["test"], "accuracy": accuracy}}
            runs.append(sample_runs.restore(registry, {**entry, "config": config, "metrics": metrics}, corpus.folder))
    shipped = {**base, "seed": 0, "max_steps": 500, "attention_dropout": 0.1}  # the attention sweep's: not here
    runs.append(sample_runs.restore(registry, {**entry, "config": shipped}, corpus.folder))
    assert budget_section({"l2r-dev": runs[-1:]}) == ""
    for seed, accuracy in enumerate((0.33, 0.31, 0.30)):  # the floor on batches without labels: a row of its own
        config = {**base, "seed": seed, "max_steps": 500, "batches_without_labels": 0.05}
        metrics = {**entry["metrics"], "test": {**entry["metrics"]["test"], "accuracy": accuracy}}
        runs.append(sample_runs.restore(registry, {**entry, "config": config, "metrics": metrics}, corpus.folder))
    budget, floor_table = budget_section({"l2r-dev": runs}).split("**The floor on batches without labels**")
    rows = [line for line in budget.splitlines() if line.startswith("| l2r-dev")]
    assert len(rows) == 3
    floor, low, default = rows
    assert floor.startswith(f"| l2r-dev | 20/class | all | at most 5% | {base['precision']} | 500 |")
    assert "| 0.313 [" in floor and "| not run |" in floor  # no control at the floor here
    assert low.startswith(f"| l2r-dev | 20/class | all | the authors' copies alone | {base['precision']} | 250 | 250 "
                          "| 0.290 [")
    assert "| +0.017 [" in low and "(n=3) | 2 / 1 |" in low  # G1 − control at 250: +0.03, +0.03, −0.01
    assert "| +0.010 [" in low and low.endswith("| 1,000, 750 |")  # G1 at 250 − G1 at 500: +0.01, +0.02, 0
    assert "| 0.280 [" in default and "| +0.003 [" in default and "(n=3) | 2 / 1 | – |" in default
    floor_rows = [line for line in floor_table.splitlines() if line.startswith("| l2r-dev")]  # G1 alone has both twins
    assert floor_rows == [f"| l2r-dev | 20/class | all | {base['precision']} | 500 | G1 | 0.313 (n=3) | 0.280 (n=3) | "
                          "+0.033 [+0.019, +0.048] (n=3) | 3 / 0 |"]  # +0.03, +0.03, +0.04


FIGURE = re.compile(r"(?<![\w.\-/])[+−]?\d*\.\d+(?![\w.])|(?<![\w.])\d+(?:\.\d+)?%|(?<![\w.])\d+(?:\.\d+)?×")
# figures typed beside the tables' own, each worked out here from what it rests on
DERIVED = {
    # L2R dev's pool at 20/class: 100 labeled rows × 6 copies beside 11,221 unlabeled; a batch of 16 misses them all
    "43%": f"{(1 - 600 / (600 + 11_221)) ** 16:.0%}",
}
# ratios of two figures of the table the sentence cites, said in words ("about 1.6 times the encoding seconds")
RATIOS = {"1.6", "1.5"}
# bullets that quote single runs (a seed's score, a seed's paired difference): checked against every run recorded
PER_RUN = ("With the encoder trained, as the paper ran GAN-BERT",)


def sections(page: str) -> dict[str, str]:
    """A page's `##` and `###` sections by title, each with its subsections."""
    heads = [(m.start(), len(m.group(1)), m.group(2).strip()) for m in re.finditer(r"^(#{2,3}) (.+)$", page, re.M)]
    out: dict[str, str] = {}
    for i, (start, level, title) in enumerate(heads):
        end = next((s for s, lv, _ in heads[i + 1:] if lv <= level), len(page))
        out[title] = out.get(title, "") + page[start:end]
    return out


def recorded_scores() -> set[str]:
    """Every run's test accuracy and macro-F1 in the committed records, as the docs write them."""
    scores: set[str] = set()
    for path in (REPO_ROOT / "bench" / "records").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            test = (json.loads(line).get("metrics") or {}).get("test") or {}
            scores |= {f"{test[k]:.3f}" for k in ("accuracy", "macro_f1") if isinstance(test.get(k), (int, float))}
    return scores


def test_every_figure_of_the_conclusions_is_in_the_table_it_cites():
    """bench/conclusions.md is typed by hand: each bullet's figures must stand in the generated tables it cites
    (in italics), which `test_results_are_what_the_records_say` holds to the records; a figure worked out from
    them is worked out here. A stale figure (a table regenerated with more seeds) fails here."""
    results = (REPO_ROOT / "docs" / "results.md").read_text()
    tables = sections(results)
    runs = recorded_scores()
    text = (REPO_ROOT / "bench" / "conclusions.md").read_text()
    assert all(figure in text for figure in [*DERIVED, *RATIOS]), "an exception no longer in the conclusions"
    wrong = []
    for bullet in re.split(r"\n(?=- )", text)[1:]:
        said = re.sub(r"\*\*[^*]+\*\*", "", bullet)  # its bold title is no citation
        cited = [re.sub(r"\s+", " ", name).strip() for name in re.findall(r"\*([^*]+)\*", said)]
        rests_on = "".join(body for title, body in tables.items() if any(title.startswith(c) for c in cited))
        assert rests_on or not FIGURE.search(said), f"a bullet with figures cites no table: {bullet[:80]}"
        per_run = bullet.startswith(tuple(f"- **{title}" for title in PER_RUN))
        for figure in FIGURE.findall(said):
            bare = figure.lstrip("+−")
            if bare in rests_on or figure in RATIOS or DERIVED.get(figure) == figure or (per_run and bare in runs):
                continue
            wrong.append(f"{figure} in: {bullet[:60]}…")
    assert not wrong, "figures the cited tables do not hold:\n" + "\n".join(wrong)


def test_every_measured_figure_of_the_methods_page_is_in_the_results():
    """docs/methods.md quotes measurements (+0.108 for SmolLM2 at 512 tokens, 43% of batches without labels): each
    stands in docs/results.md's generated tables, or is worked out here; recipe constants (10% warm-up, the 90%
    quantile) and bench/speed/encode.py's 4.5× are said as such."""
    results = (REPO_ROOT / "docs" / "results.md").read_text()
    start = results.index("## What the numbers say")
    tables = results[:start] + results[results.index("\n## ", start + 1):]
    constants = {"10%", "90%", "4.5"}
    page = (REPO_ROOT / "docs" / "methods.md").read_text()
    wrong = [f for f in FIGURE.findall(page)
             if f.lstrip("+−") not in tables and f not in constants and DERIVED.get(f) != f]
    assert not wrong, f"figures of docs/methods.md no generated table holds: {wrong}"


@pytest.mark.slow
def test_the_testing_guide_counts_the_suites_tests():
    """Issue 95 item 18: docs/testing.md said 702 tests, 613 fast, where the suite had 722. Its counts are the
    suite's, collected as `make test` and `make test-fast` select them, with the optional installs whose modules a
    plain `make test` leaves uncollected (a fresh clone without them had counted 810 of 837)."""
    for module, what in (("ray", "RAY"), ("mlflow", "MLFLOW")):
        need(importlib.util.find_spec(module) is not None, what, f"{module} is not installed: its tests go uncounted")

    def collected(*marker: str) -> int:
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              *marker], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600).stdout
        return int(re.search(r"(\d+)(?:/\d+)? tests? collected", out).group(1))

    fast = re.search(r'^FAST := (.+)$', (REPO_ROOT / "Makefile").read_text(), re.M).group(1)
    guide = (REPO_ROOT / "docs" / "testing.md").read_text()
    said = re.search(r"The whole suite has (\d+) tests .* `make test-fast` runs (\d+) of them", guide, re.S)
    assert said and (int(said.group(1)), int(said.group(2))) == (collected(), collected("-m", fast))
