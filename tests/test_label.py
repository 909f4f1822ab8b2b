"""Which texts to label (issue 96): the strategies, the session's log, the simulation, the export and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import entropy

from core.data import Amount, DataError, DataSpec, load_dataset, load_texts, sample_labeled
from core.errors import InputError
from core.label import session as sessions
from core.label.export import export
from core.label.model import fit, probabilities
from core.label.simulate import even_counts, schedule, simulate
from core.label.simulations import kept
from core.label.strategies import HYBRID_START_PER_CLASS, MISSING, QUERIES, STRATEGIES, Space, pick
from core.paths import REPO_ROOT
from tests.helpers import write_jsonl

CLASSES = 3


def blobs(n_per_class: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three well-separated clusters in 8 dimensions, and their classes."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 6, (CLASSES, 8))
    y = np.repeat(np.arange(CLASSES), n_per_class)
    return (centres[y] + rng.normal(0, 1, (len(y), 8))).astype(np.float32), y


@pytest.mark.parametrize("name", list(QUERIES))
def test_each_strategy_picks_the_same_texts_for_the_same_seed(name):
    x, known = blobs()
    space = Space.of(x)
    for labeled in (0, 4, 20):  # a cold start, a few labels, past the hybrid's switch
        y = np.full(len(known), MISSING)
        y[:labeled] = known[:labeled]
        first = pick(name, space, y, CLASSES, seed=3, batch=5)
        assert len(first) == 5 and len(set(first.tolist())) == 5
        assert (y[first] == MISSING).all()  # never a text already labeled
        assert np.array_equal(first, pick(name, Space.of(x), y, CLASSES, seed=3, batch=5))
    draws = {tuple(pick("random", space, np.full(len(known), MISSING), CLASSES, seed=s, batch=5)) for s in range(4)}
    assert len(draws) > 1  # the seed is read


@pytest.mark.parametrize("name,score", [("entropy", lambda p: entropy(p, axis=1)),
                                        ("margin", lambda p: -np.diff(np.sort(p, axis=1)[:, -2:], axis=1)[:, 0])])
def test_uncertainty_picks_the_text_the_model_is_least_sure_of(name, score):
    x, known = blobs()
    space = Space.of(x)
    y = np.full(len(known), MISSING)
    labeled = np.concatenate([np.flatnonzero(known == c)[:3] for c in range(CLASSES)])
    y[labeled] = known[labeled]
    probs = probabilities(fit(space.x, y, CLASSES), space.x, CLASSES)
    unsure = score(probs)
    unsure[labeled] = -np.inf
    assert pick(name, space, y, CLASSES, seed=0)[0] == int(np.argmax(unsure))
    # and a text placed between two classes' centres is the one picked
    between = (space.x[known == 0].mean(0) + space.x[known == 1].mean(0)) / 2
    mixed = Space(np.vstack([space.x, between]), np.vstack([space.reduced, space.reduced[:1]]))
    assert pick(name, mixed, np.append(y, MISSING), CLASSES, seed=0)[0] == len(known)


def test_uncertainty_starts_at_random_before_two_classes_have_a_label():
    x, known = blobs()
    y = np.full(len(known), MISSING)
    y[0] = known[0]
    assert np.array_equal(pick("entropy", Space.of(x), y, CLASSES, seed=1, batch=3),
                          pick("random", Space.of(x), y, CLASSES, seed=1, batch=3))


def test_typiclust_starts_in_the_clusters_no_label_covers():
    x, known = blobs()
    space = Space.of(x)
    y = np.full(len(known), MISSING)
    cold = pick("typiclust", space, y, CLASSES, seed=0, batch=CLASSES)
    assert sorted(known[cold].tolist()) == list(range(CLASSES))  # one typical text of each cluster
    y[cold[:2]] = known[cold[:2]]
    assert known[pick("typiclust", space, y, CLASSES, seed=0)[0]] == known[cold[2]]


def test_the_hybrid_reads_typicality_then_breaks_ties():
    x, known = blobs()
    space = Space.of(x)
    y = np.full(len(known), MISSING)
    start = HYBRID_START_PER_CLASS * CLASSES
    y[:start - 1] = known[:start - 1]
    assert np.array_equal(pick("hybrid", space, y, CLASSES, 0), pick("typiclust", space, y, CLASSES, 0))
    y[:start] = known[:start]
    assert np.array_equal(pick("hybrid", space, y, CLASSES, 0), pick("margin", space, y, CLASSES, 0))


def test_the_reference_that_knows_the_classes_is_for_simulations_alone():
    x, known = blobs()
    assert STRATEGIES["stratified"].needs_labels
    with pytest.raises(InputError, match="simulations"):
        pick("stratified", Space.of(x), np.full(len(known), MISSING), CLASSES, 0)


def test_a_simulation_scores_each_count_and_its_stratified_draw_is_todays():
    x, known = blobs(40)
    space = Space.of(x)
    test_x, test_y = space.x[::2], known[::2]
    assert schedule(120) == [10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100, 120]
    assert even_counts(known, 60, CLASSES, 0) == {0: 20, 1: 20, 2: 20}
    for name in (*QUERIES, "stratified"):
        points = simulate(space, known, test_x, test_y, CLASSES, name, seed=0, budget=60)
        assert [p.labels for p in points] == schedule(60)
        assert points[-1].accuracy > 0.9  # separable blobs: 60 labels of any strategy learn them
    today = sample_labeled(known, Amount(per_class=20), seed=4)
    drawn = simulate(space, known, test_x, test_y, CLASSES, "stratified", seed=4, budget=60)
    model = fit(space.x, np.where(today, known, MISSING), CLASSES)
    assert drawn[-1].accuracy == pytest.approx((probabilities(model, test_x, CLASSES).argmax(1) == test_y).mean())


def test_texts_the_oracle_cannot_answer_are_never_picked():
    x, known = blobs()
    known = known.copy()
    known[::3] = MISSING
    points = simulate(Space.of(x), known, Space.of(x).x, blobs()[1], CLASSES, "entropy", 0, budget=1000)
    assert points[-1].labels == int((known != MISSING).sum())


# ------------------------------------------------------------------- the session's log

def session_of(tmp_path: Path) -> sessions.Session:
    return sessions.Session(DataSpec(train=str(tmp_path / "texts.jsonl")), ("human", "machine"))


def test_every_label_is_kept_as_it_is_given_and_a_fresh_reader_finds_it(tmp_path, studio_home):
    s = sessions.save(studio_home, session_of(tmp_path))
    sessions.label(studio_home, s, "a", "human")
    sessions.label(studio_home, s, "b", "machine")
    fresh = sessions.sessions(studio_home)[0]  # another tab, a reload: read from the home
    assert fresh.key == s.key and sessions.given(studio_home, fresh) == {"a": "human", "b": "machine"}
    assert sessions.undo(studio_home, fresh) == "b"
    assert sessions.given(studio_home, s) == {"a": "human"}
    sessions.label(studio_home, s, "a", "machine")  # a text labeled again takes its last label
    assert sessions.given(studio_home, s) == {"a": "machine"}
    with pytest.raises(InputError, match="classes"):
        sessions.label(studio_home, s, "c", "robot")
    # another strategy or backbone on the same corpus opens the same labels
    other = sessions.save(studio_home, sessions.Session(s.data, s.classes, "random", "smollm2-135m", 4))
    assert sessions.given(studio_home, other) == {"a": "machine"}


def test_a_damaged_log_loses_only_its_damaged_lines(tmp_path, studio_home):
    s = sessions.save(studio_home, session_of(tmp_path))
    sessions.label(studio_home, s, "a", "human")
    log = s.folder(studio_home) / "labels.jsonl"
    with log.open("ab") as f:  # a crash mid-line, a line too long, an unknown class, not an object
        f.write(b'{"id": "x", "label": "hu')
    sessions.label(studio_home, s, "b", "machine")
    with log.open("ab") as f:
        f.write(b'{"id": "y", "label": "human", "pad": "' + b"z" * (sessions.MAX_LINE * 2) + b'"}\n')
        f.write(b'{"id": "z", "label": "<script>"}\n[1, 2]\n')
    sessions.label(studio_home, s, "c", "human")
    assert sessions.given(studio_home, s) == {"a": "human", "b": "machine", "c": "human"}
    assert sessions.given(studio_home, s, ids={"a", "c"}) == {"a": "human", "c": "human"}


def test_a_session_needs_two_named_classes(tmp_path, studio_home):
    with pytest.raises(InputError, match="two distinct"):
        sessions.save(studio_home, sessions.Session(DataSpec(train="x"), ("only",)))


# ------------------------------------------------------------ a corpus without labels, the export

def test_a_corpus_without_a_label_column_is_labeled_with_the_classes_named(tmp_path, studio_home):
    path = write_jsonl(tmp_path / "texts.jsonl", [{"text": f"text number {i}"} for i in range(6)])
    with pytest.raises(DataError, match="declare them"):
        load_texts(DataSpec(train=str(path)), studio_home)
    ds = load_texts(DataSpec(train=str(path), labels=("human", "machine")), studio_home)
    assert ds.labels == ("human", "machine") and len(ds.train) == 6 and (ds.train["label"] == MISSING).all()


def test_the_exported_labels_load_as_a_dataset(tmp_path, small_builtin, studio_home):
    ds = load_texts(small_builtin.spec, studio_home)
    ids = ds.train["id"].astype(str).tolist()
    labels = {ids[0]: "human", ids[1]: "chatGPT", ids[5]: "human"}
    spec = export(ds, labels, ds.labels, tmp_path / "labels-x")
    loaded = load_dataset(spec, studio_home)
    assert loaded.train["id"].tolist() == list(labels)
    assert [loaded.labels[i] for i in loaded.train["label"]] == list(labels.values())
    assert len(loaded.unlabeled) == len(ds.train) - 3 and len(loaded.test) == len(ds.test)
    assert loaded.labels == ds.labels  # a class without a label yet is still one of the dataset's
    with pytest.raises(InputError, match="at least 2 classes"):
        export(ds, {ids[0]: "human"}, ds.labels, tmp_path / "one")


def test_the_exported_labels_train(tmp_path, small_builtin, studio_home):
    from core.runs.execute import train_into
    from core.runs.folder import RunFolder
    from core.train import TrainConfig, resolve

    ds = load_texts(small_builtin.spec, studio_home)
    truth = dict(zip(ds.train["id"].astype(str), ds.train["label"]))
    labels = {i: ds.labels[c] for i, c in list(truth.items())[::2]}  # the synthetic corpus's style is faint
    spec = export(ds, labels, ds.labels, tmp_path / "labels-x")
    config = resolve(TrainConfig(data=spec, method="tfidf-lr", fraction=1.0), studio_home)
    result = train_into(config, RunFolder(tmp_path / "run"), studio_home, lambda e: None, lambda: False)
    assert result["labels_read"] == len(labels) and result["test"]["accuracy"] > 2 / len(ds.labels)


# ------------------------------------------------------------------------------ the CLI

def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", "label", *args], input=stdin, capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=600)


@pytest.mark.slow  # four processes, each loading torch
def test_the_cli_labels_undoes_exports_and_simulates(tmp_path, studio_home, tiny_backbone):
    rows = [{"id": f"t{i}", "text": f"{'the cat sat' if i % 2 else 'a robot wrote'} line {i} \x1b[2J"}
            for i in range(12)]
    path = write_jsonl(tmp_path / "texts.jsonl", rows)
    base = [str(path), "--labels", "human,machine", "--backbone", str(tiny_backbone), "--strategy", "margin"]
    done = cli(*base, stdin="1\n2\nu\n2\nrobot\n1\nq\n")
    assert done.returncode == 0, done.stderr
    assert "undone:" in done.stderr and "'robot' is not a class number" in done.stderr
    assert "\x1b" not in done.stdout and "\\x1b[2J" in done.stdout  # a text's escapes never reach the terminal
    s = sessions.sessions(studio_home)[0]
    assert list(sessions.given(studio_home, s).values()) == ["human", "machine", "human"]
    exported = cli(*base, "--export", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr
    assert len(load_dataset(DataSpec(**{k: v for k, v in json.loads(exported.stdout).items() if k != "labels"},
                                     labels=("human", "machine")), studio_home).train) == 3
    assert cli(*base, "--strategy", "stratified").returncode == 2  # needs --simulate
    assert "unknown strategy" in cli(*base, "--strategy", "best").stderr
    no_test = cli(*base, "--simulate")
    assert no_test.returncode == 2 and "labeled test split" in no_test.stderr


@pytest.mark.slow
def test_the_cli_simulates_with_the_corpus_labels_as_the_oracle(tmp_path, studio_home, tiny_backbone):
    rows = [{"id": f"t{i}", "text": f"{'the cat sat' if i % 2 else 'a robot wrote'} line {i}", "label": i % 2}
            for i in range(40)]
    train, test = write_jsonl(tmp_path / "train.jsonl", rows[:30]), write_jsonl(tmp_path / "test.jsonl", rows[30:])
    done = cli(str(train), "--test", str(test), "--backbone", str(tiny_backbone), "--simulate", "--budget", "20",
               "--strategy", "stratified", "--json")
    assert done.returncode == 0, done.stderr
    assert [p["labels"] for p in json.loads(done.stdout)] == [10, 15, 20]
    assert "simulate stratified" in done.stderr  # its progress
    kept_points = kept(studio_home)  # kept for Compare's chart
    assert kept_points["labels"].tolist() == [10, 15, 20] and set(kept_points["strategy"]) == {
        STRATEGIES["stratified"].title}
