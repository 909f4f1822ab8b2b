"""Explore: counts, lengths, words, 2-D maps and train/test shift of the current dataset."""

import threading

import streamlit as st

from core.backbone.encode import load_tokenizer
from core.data import with_cleaning
from core.explore import KL_EXPLANATION, charts, umap_map
from core.explore import stats as explore
from core.plotting import class_colors
from core.train.maxlen import STEPS, choose
from pages.explore_views import show_embeddings, show_export
from pages.markdown import plain
from pages.widgets import kept_tabs


@st.cache_resource(show_spinner=False, max_entries=4)
def cleaned(fingerprint: str, cleaning, _ds):
    return with_cleaning(_ds, cleaning)


@st.cache_data(show_spinner=False, max_entries=8)
def lengths(fingerprint: str, _ds):
    return explore.lengths(_ds, load_tokenizer(), cache=CACHE)


@st.cache_data(show_spinner=False, max_entries=32)
def ngrams(fingerprint: str, n: int, stop_words: bool, k: int, _ds):
    return explore.top_ngrams(_ds, n, stop_words, k, cache=CACHE)


@st.cache_data(show_spinner=False, max_entries=16)
def word_cloud(fingerprint: str, name: str, color: str, _freqs):
    return charts.word_cloud_png(_freqs, color)


@st.cache_data(show_spinner=False, max_entries=8)
def kl(fingerprint: str, _ds):
    return explore.kl_shift(_ds, cache=CACHE)


if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
CACHE = st.session_state.registry.home / "explore"  # the views' results, under the studio home
ds = cleaned(st.session_state.dataset.fingerprint, st.session_state.cleaning, st.session_state.dataset)
key, labels = ds.fingerprint, explore.chart_classes(ds)  # every class, or the 40 largest of thousands
st.title("Explore")
st.caption("Data: the built-in **synthetic** corpus." if ds.synthetic else f"Data: **{plain(ds.name)}**.")
if note := explore.chart_classes_note(ds):
    st.info(note + ".")


def show_overview() -> None:
    st.altair_chart(charts.class_counts(ds.class_counts(), labels))
    if note := ds.absent_note():
        st.warning(note + ".")
    sources = explore.source_breakdown(ds)
    if not sources.empty:
        st.subheader("Per source")
        st.altair_chart(charts.source_breakdown(sources, labels))
    st.subheader("Export")
    show_export(ds, CACHE)


def show_lengths() -> None:
    with st.status("Counting characters, words and tokens…", expanded=False) as status:
        lens = lengths(key, ds)
        status.update(label="Lengths ready", state="complete")
    c1, c2, c3 = st.columns([1, 1, 2])
    measure = c1.radio("Measure", ["tokens", "words", "chars"], horizontal=True, key="ex_measure",
                       persist_state="session")
    auto = choose(lens.loc[lens["split"] == "train", "tokens"].to_numpy(), max(STEPS))  # as the Data page's `auto`
    max_len = c2.number_input("Max length (tokens)", 16, 512, auto.tokens, step=16, key="ex_maxlen",
                              persist_state="session",
                              help=f"Tokens of the default backbone's tokenizer (MiniLM's); opens at what {auto.why}.")
    trunc = explore.truncation_share(lens, int(max_len), labels).set_index("class")["share"]
    c3.metric("Train texts truncated at this max length", f"{trunc['all']:.1%}")
    hist = explore.length_histogram(lens, measure)
    st.altair_chart(charts.length_histogram(hist, labels, measure, int(max_len)))
    if measure == "tokens" and (where := charts.max_len_off_bars(hist, int(max_len))):
        st.caption(f"Max length {int(max_len)} lies {where}, so no line marks it.")
    st.dataframe(trunc.drop("all").rename("share truncated").to_frame().style.format("{:.1%}"), width="content",
                 placeholder="–")


def show_words() -> None:
    c1, c2 = st.columns(2)
    n = c1.radio("n-gram size", [1, 2, 3], horizontal=True, key="ex_n", persist_state="session")
    stop = c2.toggle("Remove English stop words", True, key="ex_stop", persist_state="session")
    with st.spinner("Counting n-grams…"):
        st.altair_chart(charts.top_ngrams(ngrams(key, n, stop, 15, ds), labels))
        freqs = ngrams(key, 1, True, 150, ds)
    st.subheader("Word clouds")
    st.caption("Single words, stop words left out, whatever the settings above.")
    colors = class_colors(labels)
    cols = st.columns(3)
    for i, name in enumerate(n for n in labels if n in set(freqs["class"])):  # in class order
        cols[i % 3].image(word_cloud(key, name, colors[name], freqs[freqs["class"] == name]), caption=name)


@st.cache_resource(show_spinner=False)
def umap_warmed() -> threading.Thread:
    """UMAP's numba code compiled in the background, once per server, while the user looks at the PCA map."""
    thread = threading.Thread(target=umap_map.warm, name="warm-umap", daemon=True)
    thread.start()
    return thread


def show_maps() -> None:
    umap_warmed()
    # one choice per dataset: UMAP, chosen on a small one, had started minutes of fitting on the next
    method = st.radio("TF-IDF map", ["pca", "umap"], horizontal=True, key=f"ex_map_{ds.fingerprint}",
                      persist_state="session",
                      format_func=lambda m: {"pca": "PCA (all texts)", "umap": "UMAP (sampled, slower)"}[m])
    epochs_slot = st.empty()  # UMAP's epoch bar, above the status: inside it, it sat hidden when the box was closed
    with st.status(f"Mapping TF-IDF vectors with {method.upper()}…") as status:

        def stage(label: str) -> None:  # each step named in the status as it starts, and listed in it
            status.update(label=f"{method.upper()}: {label}…")
            st.write(f"{label[0].upper()}{label[1:]}…")

        def epochs(done: int, total: int) -> None:  # UMAP's long step
            epochs_slot.progress(done / total, text=f"Laying out the map: epoch {done} of {total}")

        # not st.cache_data: it would replay these updates into a status a later run no longer has; core caches
        # the map on disk, so a repeat call only reads it
        points = explore.tfidf_map(ds, method, cache=CACHE, on_stage=stage, on_progress=epochs)
        status.update(label="Map ready", state="complete", expanded=False)
    epochs_slot.empty()
    sample = explore.scatter_sample(points)
    st.caption(explore.map_note(ds, points, sample))
    if not points.empty:
        st.altair_chart(charts.scatter_map(sample, labels, f"TF-IDF {method.upper()}"))
    st.subheader("Density per class and split")
    bins = explore.hexbin(points, explore.hexbin_grid(points))
    if explore.shows_density(bins):
        st.altair_chart(charts.hexbin_map(bins, labels))
    else:
        st.caption("Too few texts per class and split for a density map (a typical hexagon would hold one or two): "
                   "the points above show them all.")
    show_embeddings(ds, labels, CACHE)

def show_shift() -> None:
    st.caption(KL_EXPLANATION)
    matrix = kl(key, ds)
    if matrix.empty:
        st.info("No test split is loaded, so there is no shift to measure. Add a test file on the Data page.")
    else:
        overall = float(matrix.loc[matrix["train"] == "all", "kl"].iloc[0])
        st.metric("KL(train‖test), all classes", f"{overall:.3f} nats")
        st.caption(explore.kl_pooled_note(matrix))
        c1, c2 = st.columns([1, 2])
        c1.dataframe(explore.kl_per_class(matrix, labels).set_index("class").style.format("{:.3f}"), width="content",
                     placeholder="–", column_config={"kl": st.column_config.NumberColumn(
                         "KL(train‖test), nats", help="Each class's train words against its own test words: the "
                         "matrix's diagonal")})
        c2.altair_chart(charts.kl_matrix(matrix, labels), width="content")  # square cells, not bands


# only the open tab runs: a first visit no longer computes every map, n-gram table and word cloud up front
tabs = kept_tabs(["Overview", "Lengths", "Words", "Maps", "Train/test shift"], "ex_tab")
for tab, show in zip(tabs, (show_overview, show_lengths, show_words, show_maps, show_shift)):
    if tab.open:
        with tab:
            show()
