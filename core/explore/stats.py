"""Exploration statistics as tidy data frames, ready for charts, the HTML report and summary.json.

Each heavy view takes `cache` (a folder, or None) and is stored there keyed by the data's
fingerprint and the view's options. Views that cannot scale to 71k texts (UMAP, embeddings,
scatter points) subsample, and say how many rows they used in a `sampled_from` column or field.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import rel_entr
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from core.data import Dataset, sample_per_group
from core.explore import umap_map, words
from core.explore.diskcache import cache_key, load_or_compute

SPLITS = ("train", "test")  # lengths and the shift compare these two
MAP_SPLITS = ("train", "val", "test")  # a map draws each split in its own panel: validation texts are texts too


def _labeled_splits(ds: Dataset, splits: tuple[str, ...] = SPLITS) -> pd.DataFrame:
    """Rows of the named splits with `split` and `class` columns; unlabeled rows are class '(none)'."""
    parts = []
    for split in splits:
        frame = ds.splits.get(split)
        if frame is not None:
            names = np.array(ds.labels + ("(none)",), dtype=object)
            parts.append(pd.DataFrame({"split": split, "class": names[frame["label"].to_numpy()],
                                       "text": frame["text"].to_numpy()}))
    return pd.concat(parts, ignore_index=True)


# ---------------------------------------------------------------- lengths

def lengths(ds: Dataset, tokenizer, cache: Path | None = None) -> pd.DataFrame:
    """Characters, words and backbone tokens (with special tokens) of every train and test text."""
    def compute() -> pd.DataFrame:
        rows = _labeled_splits(ds)
        texts = rows["text"].tolist()
        return pd.DataFrame({"split": rows["split"], "class": rows["class"], "chars": rows["text"].str.len(),
                             "words": [len(t.split()) for t in texts], "tokens": token_counts(tokenizer, texts)})
    key = cache_key("lengths", data=ds.fingerprint, tokenizer=tokenizer.name_or_path, vocab=len(tokenizer))
    return load_or_compute(cache, key, compute)


def token_counts(tokenizer, texts: list[str]) -> list[int]:
    """Tokens per text with special tokens and no truncation, through the fast (Rust) tokenizer.

    A copy of the backend is used because the model folder's tokenizer.json may switch truncation on,
    and the fast batch call skips offsets: twice the speed of the plain tokenizer call on 71k texts.
    """
    backend = copy.deepcopy(tokenizer.backend_tokenizer)
    backend.no_truncation()
    backend.no_padding()
    return [len(e.ids) for e in backend.encode_batch_fast(texts, add_special_tokens=True)]


NICE_WIDTHS = {"tokens": (1, 2, 4, 8, 16, 32, 64, 128, 256), "words": (1, 2, 5, 10, 20, 25, 50, 100, 200, 500),
               "chars": (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000)}


def length_histogram(lens: pd.DataFrame, measure: str, bins: int = 40, clip_quantile: float = 0.99) -> pd.DataFrame:
    """Binned counts of one length measure per class and overall ('all'), on shared bin edges, with each bin's
    share of its class's texts (so a small class's shape reads as clearly as a large one's). About √n bins for
    n texts (10 to `bins`), of a round width on edges that are its multiples: in tokens a power of two, so 128, 256
    and 512 (what each max length cuts) fall on edges, where bins of ~150 tokens put the 128 cut inside the first.
    The long tail past the 99th percentile is the last bin, marked `tail` (the chart labels it "≥ start")."""
    values = lens[measure].to_numpy()
    low, top = int(values.min()), int(np.ceil(np.quantile(values, clip_quantile)))
    wanted = (top - low + 1) / min(max(math.ceil(math.sqrt(len(values))), 10), bins)
    width = next((w for w in NICE_WIDTHS.get(measure, ()) if w >= wanted), max(1, math.ceil(wanted)))
    first = low // width * width
    edges = first + width * np.arange(math.ceil((top + 1 - first) / width) + 1, dtype=float)
    tail = bool(values.max() >= edges[-1])  # lengths past the last edge are counted in the last bin
    out = []
    for name, group in [*lens.groupby("class"), ("all", lens)]:
        counts, _ = np.histogram(np.clip(group[measure].to_numpy(), edges[0], edges[-1] - 1), bins=edges)
        out.append(pd.DataFrame({"class": name, "start": edges[:-1], "end": edges[1:], "count": counts,
                                 "share": counts / max(len(group), 1),
                                 "tail": [tail and i == len(counts) - 1 for i in range(len(counts))]}))
    return pd.concat(out, ignore_index=True)


def truncation_share(lens: pd.DataFrame, max_len: int, labels: tuple[str, ...] = ()) -> pd.DataFrame:
    """Share of train texts per class (in class order) and overall with more tokens than `max_len`, i.e. cut
    by truncation: the texts a model learns from, as the Data page's check and max length `auto` count."""
    lens = lens[lens["split"] == "train"]
    over = lens["tokens"] > max_len
    per_class = in_class_order(over.groupby(lens["class"]).mean().rename("share").reset_index(), labels)
    overall = pd.DataFrame({"class": ["all"], "share": [float(over.mean())]})
    return pd.concat([per_class, overall], ignore_index=True)


def in_class_order(frame: pd.DataFrame, labels: tuple[str, ...]) -> pd.DataFrame:
    """Rows in the dataset's class order (human, chatGPT, … for Subtask B), not alphabetical; other
    values ('all', '(none)') after the classes."""
    rank = {name: i for i, name in enumerate(labels)}
    return frame.sort_values("class", key=lambda c: c.map(rank).fillna(len(rank)), kind="stable")


def length_quantiles(lens: pd.DataFrame, labels: tuple[str, ...] = (),
                     quantiles: tuple[float, ...] = (0.1, 0.5, 0.9, 0.99)) -> pd.DataFrame:
    table = lens.groupby("class")[["chars", "words", "tokens"]].quantile(list(quantiles))
    table.index = table.index.set_names(["class", "quantile"])
    return in_class_order(table.reset_index(), labels).reset_index(drop=True)


# ---------------------------------------------------------------- words and n-grams

NGRAM_KEEP = 200  # n-grams kept per class in the cache; charts and word clouds slice from them


def top_ngrams(ds: Dataset, n: int, stop_words: bool, k: int = 20, split: str = "train",
               cache: Path | None = None) -> pd.DataFrame:
    """The k most frequent n-grams per class, with counts and ranks (1 is the most frequent).

    One counting pass serves every k up to NGRAM_KEEP, so the bar chart and the word cloud share it.
    """
    def compute() -> pd.DataFrame:
        rows = _labeled_splits(ds, (split,))
        vec = CountVectorizer(dtype=np.int32, **words.vectorizer_options(stop_words, n))
        empty = pd.DataFrame(columns=["class", "ngram", "count", "rank"])
        try:
            counts = vec.fit_transform(rows["text"])
        except ValueError:  # no n-gram at all (a few short texts): sklearn's "empty vocabulary"
            return empty
        vocab = vec.get_feature_names_out()
        out = []
        for name in ds.labels:
            mask = (rows["class"] == name).to_numpy()
            if not mask.any():
                continue
            totals = np.asarray(counts[mask].sum(axis=0)).ravel()
            top = np.argsort(-totals, kind="stable")[:max(k, NGRAM_KEEP)]
            top = top[totals[top] > 0]
            out.append(pd.DataFrame({"class": name, "ngram": vocab[top], "count": totals[top],
                                     "rank": np.arange(1, len(top) + 1)}))
        return pd.concat(out, ignore_index=True) if out else empty
    key = cache_key("ngrams", data=ds.fingerprint, n=n, stop=stop_words, keep=max(k, NGRAM_KEEP), split=split,
                    words=words.VERSION)
    table = load_or_compute(cache, key, compute)
    return table[table["rank"] <= k].reset_index(drop=True)


# ---------------------------------------------------------------- maps

def tfidf_map(ds: Dataset, method: str = "pca", max_points: int = 6000, seed: int = 0,
              cache: Path | None = None, on_stage: Callable[[str], None] = lambda stage: None,
              on_progress: Callable[[int, int], None] = lambda done, total: None) -> pd.DataFrame:
    """2-D coordinates of the texts of every split from TF-IDF vectors fitted on train.

    PCA, fitted on train, maps every text (hexbins use them all). UMAP cannot scale to 71k texts on a CPU, so it
    maps a class-stratified sample of at most `max_points` texts per split, after a 50-d SVD, and is fitted on
    the texts it shows (`umap_map` says why). `on_stage` hears each step as it starts, `on_progress` UMAP's epochs.
    """
    if method not in ("pca", "umap"):
        raise ValueError(f"method must be pca or umap, got {method!r}")

    def compute() -> pd.DataFrame:
        rows = _labeled_splits(ds, MAP_SPLITS)
        total = len(rows)
        if method == "umap":
            rows = sample_per_group(rows, "split", "class", max_points, seed)
        on_stage(f"TF-IDF vectors of {len(rows):,} texts")
        vec = TfidfVectorizer(max_features=20000, sublinear_tf=True, min_df=2, dtype=np.float32,
                              **words.vectorizer_options())
        train_mask = (rows["split"] == "train").to_numpy()
        try:
            vec.fit(rows.loc[train_mask, "text"])
        except ValueError:  # no word in two train texts (a few short ones): nothing to map
            return pd.DataFrame(columns=["split", "class", "x", "y", "sampled_from"])
        x = vec.transform(rows["text"])
        if min(x[train_mask].shape) < 3:  # PCA's two axes (arpack) need three words in three train texts
            return pd.DataFrame(columns=["split", "class", "x", "y", "sampled_from"])
        if method == "pca":
            pca = PCA(n_components=2, svd_solver="arpack", random_state=seed).fit(x[train_mask])
            xy = pca.transform(x)
        else:
            on_stage("reducing them to 50 dimensions (SVD)")
            reduced = TruncatedSVD(n_components=50, random_state=seed).fit_transform(x)
            xy = umap_map.umap_xy(reduced, seed, on_stage, on_progress)
        return pd.DataFrame({"split": rows["split"], "class": rows["class"], "x": xy[:, 0], "y": xy[:, 1],
                             "sampled_from": total})
    key = cache_key("tfidf_map", data=ds.fingerprint, method=method, n=max_points, seed=seed, splits=MAP_SPLITS,
                    words=words.VERSION, umap=umap_map.VERSION if method == "umap" else None)
    return load_or_compute(cache, key, compute)


def embedding_map(ds: Dataset, embed: Callable[[list[str]], np.ndarray], features: str, per_split: int = 500,
                  seed: int = 0, cache: Path | None = None) -> pd.DataFrame:
    """PCA of backbone vectors for a stratified sample of each split, fitted on the train texts: `embed` gives the
    vectors (`core.train.view_features`: the runs' frozen features, through their store), `features` names them
    for the cache. Only `per_split` texts a split: a CPU encodes some 100 texts/s."""
    def compute() -> pd.DataFrame:
        rows = _labeled_splits(ds, MAP_SPLITS)
        sample = sample_per_group(rows, "split", "class", per_split, seed)
        emb = embed(sample["text"].tolist())
        train_mask = (sample["split"] == "train").to_numpy()
        pca = PCA(n_components=2, random_state=seed).fit(emb[train_mask])
        xy = pca.transform(emb)
        return pd.DataFrame({"split": sample["split"], "class": sample["class"], "x": xy[:, 0], "y": xy[:, 1],
                             "sampled_from": len(rows)})
    key = cache_key("embedding_map", data=ds.fingerprint, features=features, n=per_split, seed=seed,
                    splits=MAP_SPLITS)
    return load_or_compute(cache, key, compute)


DRAWN_PER_SPLIT = 1500  # points a scatter draws per split: thousands more slow the browser and hide nothing


def scatter_sample(points: pd.DataFrame, per_split: int = DRAWN_PER_SPLIT, seed: int = 0) -> pd.DataFrame:
    """A browser-sized, class-stratified sample of map points; hexbins show the density of all of them."""
    return sample_per_group(points, "split", "class", per_split, seed)


def map_note(ds: Dataset, points: pd.DataFrame, drawn: pd.DataFrame) -> str:
    """What a map shows, in words: the texts of each split it places and how many of them are drawn as points.
    UMAP's status had said 7,868 texts were placed where the caption said 3,001 of 13,288 were shown."""
    if points.empty:  # a few short texts: fewer than two words in two train texts
        return "No map: the train texts share too few words (a word counts once it is in two texts) to place them."
    mapped, total = points.groupby("split").size(), int(points["sampled_from"].iloc[0])
    parts = [f"{split} {mapped[split]:,}" + ("" if mapped[split] == len(ds.splits[split])
                                             else f" of {len(ds.splits[split]):,}")
             for split in MAP_SPLITS if split in mapped]
    every = (f"all {total:,} texts" if len(points) == total else
             f"{len(points):,} of the {total:,} texts, a sample stratified by class (UMAP's time grows with the texts)")
    drawn_note = (f"All {len(drawn):,} are drawn as points." if len(drawn) == len(points) else
                  f"{len(drawn):,} of them are drawn as points (at most about {DRAWN_PER_SPLIT:,} per split, "
                  f"stratified by class, so the browser stays quick); the hexbins below count all {len(points):,}.")
    return f"The map places {every}: {', '.join(parts)}. {drawn_note}"


def hexbin_grid(points: pd.DataFrame, per_cell: int = 8, lowest: int = 5, highest: int = 30) -> int:
    """Hexagons across a panel for about `per_cell` texts in an occupied cell of a split and class's panel: 25
    across for the M4 sample's 181 texts drew one to three texts a cell, dots rather than density."""
    panel = points.groupby(["split", "class"]).size().median() if len(points) else 0
    return int(np.clip(round(math.sqrt(panel / per_cell) * 2), lowest, highest))


def shows_density(bins: pd.DataFrame, least: float = 3.0) -> bool:
    """Whether hexbins say more than the points do: the typical occupied cell holds a few texts or more."""
    return bool(len(bins)) and float(bins["count"].median()) >= least


def hexbin(points: pd.DataFrame, gridsize: int = 30) -> pd.DataFrame:
    """Hexagonal bin counts per split and class on one shared grid (matplotlib's lattice scheme).

    Points are snapped to the nearer of two offset rectangular lattices; with the y step scaled by
    sqrt(3) the cells are regular hexagons. Returns centres in data units and counts.
    """
    if points.empty:  # no map (`tfidf_map` on a few short texts): no bins
        return pd.DataFrame(columns=["split", "class", "x", "y", "count", "cell"])
    x, y = points["x"].to_numpy(dtype=float), points["y"].to_numpy(dtype=float)
    xmin, xmax, ymin = x.min(), x.max(), y.min()
    sx = (xmax - xmin) / gridsize or 1.0
    sy = sx * np.sqrt(3)
    ix, iy = (x - xmin) / sx, (y - ymin) / sy
    a_x, a_y = np.round(ix), np.round(iy)
    b_x, b_y = np.floor(ix) + 0.5, np.floor(iy) + 0.5
    use_a = (ix - a_x) ** 2 + 3 * (iy - a_y) ** 2 < (ix - b_x) ** 2 + 3 * (iy - b_y) ** 2
    cx = np.where(use_a, a_x, b_x) * sx + xmin
    cy = np.where(use_a, a_y, b_y) * sy + ymin
    binned = pd.DataFrame({"split": points["split"], "class": points["class"], "x": cx, "y": cy})
    out = binned.groupby(["split", "class", "x", "y"]).size().rename("count").reset_index()
    out["cell"] = sx
    return out


# ---------------------------------------------------------------- shift between train and test

# Classes a per-class chart or the train/test matrix shows at most: the largest in train. 5,000 classes had made 25 M
# class pairs, 10,000 bars (past Altair's 5,000-row limit) and 5,000 word clouds; summary.json keeps every class.
CHART_CLASSES = 40


def _class_word_counts(ds: Dataset, max_features: int = 50000, classes: set[str] | None = None
                       ) -> tuple[dict[tuple[str, str], np.ndarray], int]:
    """Word counts per (split, class) over one vocabulary shared by train and test, for `classes` (None: every one),
    and per split over every class under the class "all"."""
    rows = _labeled_splits(ds)
    vec = CountVectorizer(max_features=max_features, dtype=np.int32, **words.vectorizer_options())
    try:
        counts = vec.fit_transform(rows["text"])
    except ValueError:  # no word at all (a few short texts): nothing to count
        return {}, 0
    out = {}
    for (split, name), idx in rows.groupby(["split", "class"]).indices.items():
        if classes is None or name in classes:
            out[(split, name)] = np.asarray(counts[idx].sum(axis=0)).ravel().astype(np.float64)
    for split, idx in rows.groupby("split").indices.items():
        out[(split, "all")] = np.asarray(counts[idx].sum(axis=0)).ravel().astype(np.float64)
    return out, counts.shape[1]


def chart_classes(ds: Dataset) -> tuple[str, ...]:
    """The classes the charts show, in class order: every one up to `CHART_CLASSES`, else the largest in train."""
    if len(ds.labels) <= CHART_CLASSES:
        return ds.labels
    sizes = ds.class_counts()["train"].sort_values(ascending=False, kind="stable")
    largest = set(map(str, sizes.index[:CHART_CLASSES]))
    return tuple(c for c in ds.labels if c in largest)


def chart_classes_note(ds: Dataset) -> str | None:
    """Said where the charts leave classes out (`chart_classes`); None when they show every one."""
    if len(ds.labels) <= CHART_CLASSES:
        return None
    return (f"{len(ds.labels):,} classes: each per-class chart shows the {CHART_CLASSES} with the most train texts; "
            "a figure over all classes counts every one")


def kl_divergence(p_counts: np.ndarray, q_counts: np.ndarray, alpha: float = 0.5) -> float:
    """KL(P‖Q) in nats of two word-count vectors after additive (Jeffreys, alpha=0.5) smoothing."""
    p = (p_counts + alpha) / (p_counts.sum() + alpha * len(p_counts))
    q = (q_counts + alpha) / (q_counts.sum() + alpha * len(q_counts))
    return float(np.sum(rel_entr(p, q)))  # 0 log 0 = 0


def kl_shift(ds: Dataset, alpha: float = 0.5, cache: Path | None = None) -> pd.DataFrame:
    """KL(train_i ‖ test_j) for every pair of classes present in both; the diagonal is per-class shift.

    Rows with `train == test == "all"` hold the whole-split divergence. Empty when there is no test split.
    """
    def compute() -> pd.DataFrame:
        if ds.test is None:
            return pd.DataFrame(columns=["train", "test", "kl"])
        counts, _ = _class_word_counts(ds, classes=set(chart_classes(ds)))
        if ("train", "all") not in counts or ("test", "all") not in counts:
            return pd.DataFrame(columns=["train", "test", "kl"])
        train = {c: v for (s, c), v in counts.items() if s == "train" and c not in ("(none)", "all")}
        test = {c: v for (s, c), v in counts.items() if s == "test" and c not in ("(none)", "all")}
        rows = [{"train": a, "test": b, "kl": kl_divergence(pa, qb, alpha)}
                for a, pa in train.items() for b, qb in test.items()]
        rows.append({"train": "all", "test": "all",
                     "kl": kl_divergence(counts[("train", "all")], counts[("test", "all")], alpha)})
        return pd.DataFrame(rows)
    return load_or_compute(cache, cache_key("kl", data=ds.fingerprint, alpha=alpha, words=words.VERSION), compute)


def kl_pooled_note(shift: pd.DataFrame) -> str:
    """Why the all-classes figure sits where it does against the classes' own: it pools every class, so it can
    fall below them all (KL is jointly convex: pooled in the same class shares it is at most their weighted mean,
    and its counts, holding more words, are inflated less by smoothing) or rise above them all (test mixes the
    classes otherwise than train)."""
    overall = float(shift.loc[shift["train"] == "all", "kl"].iloc[0])
    own = kl_per_class(shift)["kl"]
    if own.empty:
        return ""
    span = f"{own.min():.3f}–{own.max():.3f}"
    if overall < own.min():
        return (f"The all-classes figure ({overall:.3f}) is below every class's own ({span}): it pools the classes. "
                "When test mixes the classes as train does, pooled KL is at most the classes' weighted mean (KL is "
                "jointly convex), and the pooled counts hold more words, which smoothing inflates less.")
    if overall > own.max():
        return (f"The all-classes figure ({overall:.3f}) is above every class's own ({span}): test mixes the "
                "classes in other shares than train, and the pooled word distributions shift with the mix.")
    return (f"The all-classes figure ({overall:.3f}) lies within the classes' own ({span}): pooling averages their "
            "shifts, and a test mix unlike train's adds to it.")


def kl_per_class(shift: pd.DataFrame, labels: tuple[str, ...] = ()) -> pd.DataFrame:
    """The diagonal, KL(train_c ‖ test_c) per class, in the class order the heatmap uses."""
    diag = shift[(shift["train"] == shift["test"]) & (shift["train"] != "all")]
    return in_class_order(diag.rename(columns={"train": "class"})[["class", "kl"]], labels).reset_index(drop=True)


# ---------------------------------------------------------------- sources

def source_breakdown(ds: Dataset) -> pd.DataFrame:
    """Rows per split, source and class; empty when the data has no source field."""
    parts = []
    for split, frame in ds.splits.items():
        if split == "unlabeled" or (frame["source"] == "").all():
            continue
        names = np.array(ds.labels + ("(none)",), dtype=object)
        parts.append(pd.DataFrame({"split": split, "source": frame["source"].replace("", "(none)"),
                                   "class": names[frame["label"].to_numpy()]}))
    if not parts:
        return pd.DataFrame(columns=["split", "source", "class", "count"])
    rows = pd.concat(parts, ignore_index=True)
    return rows.groupby(["split", "source", "class"]).size().rename("count").reset_index()
