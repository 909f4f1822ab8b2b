"""Exploration statistics on tiny hand-made inputs with known answers, and the disk cache."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.data import SEMEVAL_LABELS, Dataset
from core.explore import stats as explore


def tiny(train_texts: dict[int, list[str]], test_texts: dict[int, list[str]] | None = None,
         labels=("a", "b")) -> Dataset:
    def frame(texts):
        rows = [(t, lab) for lab, ts in texts.items() for t in ts]
        return pd.DataFrame({"id": [str(i) for i in range(len(rows))], "text": [r[0] for r in rows],
                             "label": [r[1] for r in rows], "source": ""})
    return Dataset(name="tiny", labels=labels, train=frame(train_texts),
                   test=frame(test_texts) if test_texts else None)


def test_kl_of_identical_distributions_is_zero():
    counts = np.array([3.0, 1.0, 0.0, 6.0])
    assert explore.kl_divergence(counts, counts) == pytest.approx(0.0, abs=1e-12)
    assert explore.kl_divergence(counts, 2 * counts, alpha=0.0) == pytest.approx(0.0, abs=1e-12)


def test_kl_matches_the_formula():
    p, q = np.array([1.0, 1.0]), np.array([3.0, 1.0])
    expected = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    assert explore.kl_divergence(p, q, alpha=0.0) == pytest.approx(expected)


@pytest.mark.parametrize("overall, says", [(0.149, "below every class's own (0.210–0.240): it pools the classes. "
                                                   "When test mixes the classes as train does"),
                                           (0.300, "above every class's own (0.210–0.240): test mixes the classes"),
                                           (0.220, "lies within the classes' own (0.210–0.240)")])
def test_the_pooled_kl_is_explained_where_it_falls_against_the_classes(overall, says):
    """Issue 61: on L2R the pooled figure (0.149) sat below every class's (0.21-0.24), and the caption explained
    only how it can exceed them."""
    shift = pd.DataFrame({"train": ["a", "b", "all"], "test": ["a", "b", "all"], "kl": [0.21, 0.24, overall]})
    assert says in explore.kl_pooled_note(shift)


def test_kl_shift_diagonal_zero_when_test_repeats_train():
    texts = {0: ["red red blue", "blue green"], 1: ["cat dog", "dog dog fish"]}
    shift = explore.kl_shift(tiny(texts, texts))
    per_class = explore.kl_per_class(shift).set_index("class")["kl"]
    assert per_class.tolist() == pytest.approx([0.0, 0.0], abs=1e-12)
    off = shift[(shift["train"] == "a") & (shift["test"] == "b")]["kl"].item()
    assert off > 0.5
    assert shift[shift["train"] == "all"]["kl"].item() == pytest.approx(0.0, abs=1e-12)


def test_kl_shift_empty_without_test_split():
    assert explore.kl_shift(tiny({0: ["x y"], 1: ["z w"]})).empty


def test_top_ngrams_counts_and_stop_words():
    ds = tiny({0: ["the cat sat", "the cat ran"], 1: ["a dog barked at the dog"]})
    uni = explore.top_ngrams(ds, 1, stop_words=False, k=2)
    a = uni[uni["class"] == "a"]
    assert a["ngram"].tolist() == ["cat", "the"] and a["count"].tolist() == [2, 2]
    b = explore.top_ngrams(ds, 1, stop_words=True, k=5)
    assert "the" not in set(b["ngram"]) and b[b["class"] == "b"]["ngram"].iloc[0] == "dog"
    bi = explore.top_ngrams(ds, 2, stop_words=False, k=1)
    assert bi[bi["class"] == "a"]["ngram"].item() == "the cat"


def test_words_keep_contractions_whole_and_read_html_tags_as_spaces():
    """scikit-learn's default pattern made "ve", "don", "ll" and "br" top words of l2r with stop words removed: it
    cut I've, don't and we'll in two and read web text's <br /> line breaks as a word."""
    ds = tiny({0: ["I've seen it.<br /><br />We'll go, don\u2019t worry &amp; rock'n'roll",
                   "I don't know.<br>We've <b>seen</b> it all, haven't we? Students' notes"], 1: ["dog days"]})
    with_stop = set(explore.top_ngrams(ds, 1, stop_words=False, k=50)["ngram"])
    assert {"i've", "don't", "we'll", "we've", "haven't", "rock'n'roll", "students", "seen"} <= with_stop
    assert with_stop.isdisjoint({"ve", "don", "ll", "br", "b", "amp", "t", "students'"})
    without = set(explore.top_ngrams(ds, 1, stop_words=True, k=50)["ngram"])
    assert without.isdisjoint({"i've", "don't", "we'll", "we've", "haven't", "it", "we"})  # stop words, contracted
    assert {"seen", "worry", "rock'n'roll", "know", "notes"} <= without
    bigrams = set(explore.top_ngrams(ds, 2, stop_words=False, k=50)["ngram"])
    assert {"i've seen", "don't worry", "don't know", "we've seen"} <= bigrams  # n-grams of the same words
    assert not any(part in {"ve", "don", "ll", "br"} for gram in bigrams for part in gram.split())


def test_ngrams_without_stop_words_join_only_words_that_stood_together_and_skip_links():
    """Stop words removed before n-gramming made "state art" of "state of the art", and links top trigrams."""
    ds = tiny({0: ["The state of the art model, see https://github.com/org/repo and www.example.com/page.",
                   "A state of the art result on the new test set."], 1: ["dog days"]})
    bigrams = set(explore.top_ngrams(ds, 2, stop_words=True, k=50)["ngram"])
    assert "state art" not in bigrams and {"art model", "art result", "test set"} <= bigrams
    assert not any(w in gram for gram in bigrams for w in ("https", "github", "www", "com"))
    trigrams = set(explore.top_ngrams(ds, 3, stop_words=True, k=50)["ngram"])
    assert trigrams.isdisjoint({"state of the", "of the art"}) and "new test set" in trigrams


def test_maps_place_every_split_and_say_what_they_draw():
    """PCA's "all texts" had left the 1,242 validation texts of l2r out without a word, and the caption's "3,001 of
    13,288 texts" contradicted the 7,868 the status said were mapped."""
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(60)]

    def texts(n: int) -> list[str]:
        return [" ".join(rng.choice(vocab, 12)) for _ in range(n)]
    ds = tiny({0: texts(40), 1: texts(40)}, {0: texts(10), 1: texts(10)})
    ds = Dataset(name="tiny", labels=ds.labels, train=ds.train, val=ds.test.iloc[:8].reset_index(drop=True),
                 test=ds.test)
    points = explore.tfidf_map(ds)
    assert points.groupby("split").size().to_dict() == {"train": 80, "val": 8, "test": 20}
    assert explore.map_note(ds, points, points) == ("The map places all 108 texts: train 80, val 8, test 20. All 108 "
                                                    "are drawn as points.")
    drawn = explore.scatter_sample(points, per_split=10)
    note = explore.map_note(ds, points.iloc[:60], drawn)  # as a sampled map: 60 of the 108 texts
    assert note.startswith("The map places 60 of the 108 texts, a sample stratified by class")
    assert f"train 60 of 80. {len(drawn)} of them are drawn as points" in note and note.endswith("count all 60.")


@pytest.mark.integration  # numba compiles UMAP on its first fit in a process: 9-14 s
def test_umap_lays_out_the_texts_it_shows_and_reports_its_epochs(small_builtin):
    """UMAP was fitted on train and then placed every text, 46 s and 70 s on l2r, with no progress shown."""
    stages, epochs = [], []
    points = explore.tfidf_map(small_builtin, "umap", on_stage=stages.append,
                               on_progress=lambda done, total: epochs.append((done, total)))
    assert len(points) == len(small_builtin.train) + len(small_builtin.test)
    assert np.isfinite(points[["x", "y"]].to_numpy()).all() and points["x"].std() > 0
    assert any(s.startswith("laying out") for s in stages)
    assert epochs[-1] == (200, 200) and [d for d, _ in epochs] == sorted(d for d, _ in epochs)


def test_hexbins_fill_readable_panels_with_a_legend_in_texts_per_hexagon():
    """Panels of 105 px drew hexagons as specks, and the log legend read only "1" and "10"."""
    from core.explore import charts

    rng = np.random.default_rng(0)
    pts = pd.DataFrame({"split": rng.choice(["train", "val", "test"], 5000), "class": rng.choice(["a", "b"], 5000),
                        "x": rng.normal(size=5000), "y": rng.normal(size=5000) * 2})
    spec = charts.hexbin_map(explore.hexbin(pts, 20), ("a", "b")).to_dict()
    inner, legend = spec["spec"], spec["spec"]["encoding"]["color"]["legend"]
    assert inner["width"] == charts.HEX_PANEL >= 180 and inner["height"] > inner["width"]  # the map's own shape
    assert spec["spec"]["encoding"]["color"]["title"] == "texts per hexagon"
    assert legend["values"][:4] == [1, 2, 5, 10]
    assert spec["facet"]["column"]["field"] == "split" and spec["facet"]["row"]["field"] == "class"


def test_lengths_histogram_and_truncation(small_builtin):
    from core.backbone.encode import load_tokenizer

    lens = explore.lengths(small_builtin, load_tokenizer())
    assert len(lens) == len(small_builtin.train) + len(small_builtin.test)
    assert (lens["tokens"] >= 3).all() and (lens["chars"] >= lens["words"]).all()
    hist = explore.length_histogram(lens, "tokens", bins=10)
    totals = hist.groupby("class")["count"].sum()
    assert totals["all"] == len(lens) and totals.drop("all").sum() == len(lens)
    assert (hist["share"] * hist["class"].map(lens["class"].value_counts().to_dict() | {"all": len(lens)})
            ).round().astype(int).tolist() == hist["count"].tolist()
    share = explore.truncation_share(lens, max_len=0).set_index("class")["share"]
    assert share["all"] == 1.0
    train = lens[lens["split"] == "train"]
    med = int(train["tokens"].median())
    assert explore.truncation_share(lens, med).set_index("class")["share"]["all"] <= 0.5
    # train texts only, as the Data page's check and max length `auto` count them (Data said 95%, Explore 93.9%)
    assert explore.truncation_share(lens, 128).set_index("class")["share"]["all"] == pytest.approx(
        float((train["tokens"] > 128).mean()))


def test_truncation_share_on_known_values():
    lens = pd.DataFrame({"split": ["train"] * 4 + ["test"], "class": ["a", "a", "b", "b", "a"],
                         "tokens": [10, 300, 100, 600, 900]})
    share = explore.truncation_share(lens, 256).set_index("class")["share"]
    assert share.to_dict() == {"a": 0.5, "b": 0.5, "all": 0.5}  # the test text is not counted


def test_class_tables_follow_the_class_order_not_the_alphabet():
    labels = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")
    lens = pd.DataFrame({"split": "train", "class": list(reversed(labels)) * 2, "tokens": range(12), "chars": 1,
                         "words": 1})
    assert list(explore.truncation_share(lens, 5, labels)["class"]) == [*labels, "all"]
    assert list(dict.fromkeys(explore.length_quantiles(lens, labels)["class"])) == list(labels)
    shift = pd.DataFrame({"train": [*reversed(labels), "all"], "test": [*reversed(labels), "all"], "kl": 0.1})
    assert list(explore.kl_per_class(shift, labels)["class"]) == list(labels)  # as the heatmap, not alphabetical


def test_hexbin_counts_every_point_once():
    rng = np.random.default_rng(0)
    pts = pd.DataFrame({"split": ["train"] * 500 + ["test"] * 200, "class": rng.choice(["a", "b"], 700),
                        "x": rng.normal(size=700), "y": rng.normal(size=700)})
    bins = explore.hexbin(pts, gridsize=10)
    assert bins["count"].sum() == 700
    assert bins.groupby("split")["count"].sum().to_dict() == {"test": 200, "train": 500}
    assert len(bins[["x", "y"]].drop_duplicates()) < 150


def test_tfidf_map_keeps_every_row_and_caches(small_builtin, studio_home, monkeypatch):
    cache, stages = studio_home / "explore", []
    points = explore.tfidf_map(small_builtin, cache=cache, on_stage=stages.append)
    assert stages == [f"TF-IDF vectors of {len(points):,} texts"]  # each step is told as it starts
    assert len(points) == len(small_builtin.train) + len(small_builtin.test)
    assert set(points["class"]) == set(SEMEVAL_LABELS)
    # A warm call reads the cache: it must not fit PCA again.
    monkeypatch.setattr(explore, "PCA", None)
    again = explore.tfidf_map(small_builtin, cache=cache, on_stage=stages.append)
    pd.testing.assert_frame_equal(points, again)
    assert len(stages) == 1


def test_source_breakdown():
    ds = tiny({0: ["x", "y"], 1: ["z"]})
    assert explore.source_breakdown(ds).empty
    ds.train["source"] = ["wiki", "reddit", "wiki"]
    table = explore.source_breakdown(ds)
    assert table["count"].sum() == 3 and set(table["source"]) == {"wiki", "reddit"}


def test_the_check_after_loading_warns_of_what_would_spoil_a_run(m4_dir, studio_home):
    from dataclasses import replace

    from core.data import DataSpec, load_dataset
    from core.explore.checks import check_loaded

    ds = load_dataset(DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl")), studio_home)
    check = check_loaded(ds)
    assert list(check.counts.columns) == ["train", "test"] and list(check.counts.index) == list(ds.labels)
    assert check.validation_note.startswith("No validation split: nothing is set aside")  # and no warning
    assert list(check.labels["label"]) == list(ds.labels) and len(check.preview) == 5
    assert not any("tokens" in w for w in check.warnings)  # what a max length cuts: `maxlen`, one figure
    assert any(w.startswith("Declared but absent from every split: bloomz") for w in check.warnings)
    bloomz = ds.test.iloc[:1].assign(label=ds.labels.index("bloomz"))  # a test text of it: only train lacks it
    assert replace(ds, test=pd.concat([ds.test, bloomz]), fingerprint="y").absent_note() == (
        "1 class has no labeled example in train (bloomz): no model can learn it; its 1 test text counts as errors, so "
        "the best possible test accuracy is 0.98")
    assert check.unlabeled_note.startswith("Unlabeled texts: the train texts a run leaves unlabeled (128 train texts")
    empty = check_loaded(replace(ds, val=ds.test.iloc[:0], fingerprint="x"))
    assert empty.warnings[0].startswith("0 validation rows: the validation file is empty")


def test_hexbins_are_sized_to_the_texts_and_maps_name_only_classes_that_have_some():
    """The M4 sample's 181 texts drew one to three texts a hexagon (dots, not density), and its maps' legends
    listed bloomz, which has no text."""
    import numpy as np
    import pandas as pd

    from core.explore import charts, stats

    rng = np.random.default_rng(0)

    def points(n: int) -> pd.DataFrame:
        return pd.DataFrame({"split": rng.choice(["train", "test"], n), "class": rng.choice(["human", "dolly"], n),
                             "x": rng.normal(size=n), "y": rng.normal(size=n)})
    small, large = points(181), points(14_000)
    assert stats.hexbin_grid(small) < stats.hexbin_grid(large) == 30
    assert stats.shows_density(stats.hexbin(large, stats.hexbin_grid(large)))
    assert not stats.shows_density(stats.hexbin(small, 25))  # the old grid: one or two texts a cell
    labels = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")
    scale = charts.scatter_map(small, labels, "").to_dict()["encoding"]["color"]["scale"]
    assert scale["domain"] == ["human", "dolly"] and scale["range"] == ["#4e79a7", "#edc948"]  # their own colours


def test_the_embedding_map_reads_the_features_runs_cached_and_encodes_only_the_rest(tiny_backbone, studio_home):
    """A walk waited 28 s for 1,500 texts encoded apart from the runs' features: the map now draws the vectors a
    default frozen run reads, from the same store, and reports only the texts it still has to encode."""
    import torch

    from core.data import CorpusConfig, DataSpec, load_dataset
    from core.train import TrainConfig, resolve
    from core.train.inputs import frozen_features
    from core.train.view_features import view_features

    spec = DataSpec(builtin=CorpusConfig(train_per_class=10, test_per_class=4))
    ds = load_dataset(spec, studio_home)
    progress: list[tuple[int, int]] = []
    embed, features = view_features(spec, studio_home, str(tiny_backbone),
                                    lambda done, total: progress.append((done, total)))
    first = explore.embedding_map(ds, embed, features, per_split=12, cache=studio_home / "explore")
    assert progress[0] == (0, 24) and progress[-1] == (24, 24)  # 2 a class and split: 12 train, 12 test, counted
    assert len(first) == 24 and {"x", "y", "split", "class"} <= set(first.columns)
    # a default frozen run on this data encodes every text into the same store ...
    config = resolve(TrainConfig(data=spec, frozen=True, backbone=str(tiny_backbone)), studio_home)
    texts = ds.train["text"].tolist() + ds.test["text"].tolist()
    run_vectors = frozen_features(config, {"all": texts}, torch.device("cpu"), studio_home)["all"]
    progress.clear()
    # ... so a larger map encodes nothing, and draws the run's own vectors
    wider = explore.embedding_map(ds, embed, features, per_split=24, cache=studio_home / "explore")
    assert progress == [] and len(wider) == 48
    assert np.allclose(embed(texts[:5]), run_vectors[:5])
