"""Data: pick the built-in corpus, upload files, or point at local files; the last good dataset stays loaded."""

import streamlit as st

from core.backbone import DEFAULT_TITLE
from core.data import MAX_FILE_BYTES, CleaningConfig, CorpusConfig, DataSpec, load_dataset, store_upload
from core.errors import InputError
from core.explore.checks import check_loaded
from core.runs import Workspace, as_runs_read_it, remember
from core.train.maxlen import MAX_TRUNCATED
from pages.backbone_views import truncation
from pages.data_views import reading_inputs, stored_uploads_section
from pages.markdown import code, plain
from pages.widgets import kept_tabs


@st.cache_data(show_spinner="Checking the data…", max_entries=8)
def loaded_check(fingerprint: str, val_in_test: int, _ds):
    """The check, once per data: a validation file the test split holds is set aside, the rest the same, so the
    fingerprint alone had shown one dataset's note for the other."""
    return check_loaded(_ds)


def try_load(spec: DataSpec) -> None:
    """Swap in the new dataset only when it loads cleanly (otherwise say why and keep the old one). One with
    no test rows, replacing one that has them, waits for the user to confirm (`confirm_replace`)."""
    try:
        with st.spinner("Loading and checking…"):
            spec, same = as_runs_read_it(st.session_state.registry, spec)
            ds = load_dataset(spec, st.session_state.registry.home)
    except InputError as e:
        not_loaded(e, "correct it and load again")
    st.session_state.pop("load_error", None)
    st.session_state.same_files = same  # said with the loaded message
    if ds.test is None and st.session_state.dataset.test is not None:
        st.session_state.pending_dataset = ds  # asked at the top of the page
    else:
        use(ds)
    st.rerun()


def not_loaded(e: InputError, then: str) -> None:
    """Why a load failed, in the one banner at the top (beside the Current line), kept until the next load: it
    replaces the last failure's, so two never stand on the page at once."""
    st.session_state.load_error = (f"Not loaded: {plain(str(e).rstrip('.'))}. **{plain(st.session_state.dataset.name)}"
                                   f"** is still the loaded dataset (the Current line below); {then}.")
    st.rerun()


def use(ds) -> None:
    """The dataset becomes the session's and the studio's workspace; the next run of the page shows it."""
    st.session_state.pop("pending_dataset", None)
    st.session_state.dataset = ds
    remember(st.session_state.registry, Workspace(ds.spec, st.session_state.cleaning))
    st.session_state.loaded_message = f"Loaded {plain(ds.name)}: {ds.split_line()}"


def confirm_replace() -> None:
    pending, current = st.session_state.pending_dataset, st.session_state.dataset
    with st.container(border=True):
        st.warning(f"**{plain(pending.name)}** has no test rows, so runs on it cannot be scored. "
                   f"Replace **{plain(current.name)}** ({len(current.test):,} test rows) with it?")
        c1, c2 = st.columns(2)
        c1.button(f"Replace with {plain(pending.name)}", key="dt_replace", on_click=use, args=(pending,))
        c2.button(f"Keep {plain(current.name)}", key="dt_keep",
                  on_click=lambda: st.session_state.pop("pending_dataset"))


if "dataset" not in st.session_state:  # a deep link opened before app.py ever ran: start from the app
    st.switch_page("app.py")
st.title("Data")
notice = st.container()  # always here, so the fields below keep their place when the message goes
if error := st.session_state.get("load_error"):  # until the next load: the fields may still hold what failed
    notice.error(error)
if "loaded_message" in st.session_state:
    notice.success(st.session_state.loaded_message)
    for line in st.session_state.pop("same_files", []):
        notice.info(line)
spec = st.session_state.dataset.spec
st.caption(f"Current: **{plain(st.session_state.dataset.name)}**"
           + "".join(f" · {role}: {code(path)}" for role, path in spec.paths.items()))
with st.expander("Check of the current dataset", expanded=st.session_state.pop("loaded_message", None) is not None):
    check = loaded_check(st.session_state.dataset.fingerprint, st.session_state.dataset.val_in_test,
                         st.session_state.dataset)
    for warning in check.warnings:
        st.warning(plain(warning))
    c1, c2 = st.columns([3, 1])
    c1.markdown("**First train rows**")
    c1.dataframe(check.preview, hide_index=True, placeholder="–",  # class names whole: not "gpt-3.5-turb"
                 column_config={"text": st.column_config.TextColumn(width="large"),
                                "label": st.column_config.TextColumn(width=140)})
    c2.markdown("**Label ids**")
    c2.dataframe(check.labels, hide_index=True, placeholder="–")
    st.markdown("**Texts per class and split**")
    counts = check.counts.reset_index()  # class names whole: sized to the longest, as "gpt-3.5-tu" was cut at 10
    st.dataframe(counts, width="content", hide_index=True, placeholder="–", column_config={counts.columns[0]: (
        st.column_config.TextColumn(width=max(80, 9 * max(map(len, counts.iloc[:, 0].astype(str)), default=0))))})
    st.caption(check.validation_note)
    st.caption(plain(check.unlabeled_note))
    # the Train page's figure, and cache
    cut = truncation(st.session_state.dataset, repr(spec), None, None, st.session_state.registry.home)
    (st.warning if cut.truncated > MAX_TRUNCATED else st.caption)(
        f"Max length for {DEFAULT_TITLE}, the default backbone — {cut.why}. The Train page says it "
        "for the backbone you pick; Explore › Lengths counts every train text at any length.")

if "pending_dataset" in st.session_state:
    confirm_replace()
# tracked and kept: a rerun (Enter in a text field) or a visit to another page keeps the tab the user is on
built_in, upload, local = kept_tabs(["Built-in corpus", "Upload files", "Local path"], "dt_source")

with built_in:
    st.markdown("A deterministic **synthetic** corpus: six invented writers named after the Subtask B classes, "
                "over shared topics. A TF-IDF + logistic-regression baseline scores about 76% on its test split.")
    c1, c2, c3 = st.columns(3)
    train_n = c1.number_input("Train texts per class", 50, 20000, 2000, step=250, key="bi_train",
                              persist_state="session",
                              help="The train pool: runs draw their labeled and validation texts from it.")
    test_n = c2.number_input("Test texts per class", 20, 5000, 500, step=100, key="bi_test", persist_state="session")
    seed = c3.number_input("Seed", 0, 10_000, 13, key="bi_seed", persist_state="session")
    if st.button("Use the built-in corpus", key="bi_load"):
        try_load(DataSpec(builtin=CorpusConfig(int(train_n), int(test_n), int(seed))))

with upload:
    st.markdown("Subtask B JSONL (`id`, `text`, `model`, `source`, `label`), or any JSONL, CSV or Parquet file "
                "with a text and a label column. Test labels are optional.")
    kinds, limit = ["jsonl", "json", "csv", "parquet"], MAX_FILE_BYTES // 2**20  # MB, as the readers check it
    train_file = st.file_uploader("Train file", type=kinds, key="up_train", max_upload_size=limit)
    test_file = st.file_uploader("Test file (optional)", type=kinds, key="up_test", max_upload_size=limit)
    unlabeled_file = st.file_uploader("Unlabeled texts (optional: GAN-BERT learns from them)", type=kinds,
                                      key="up_unlabeled", max_upload_size=limit)
    up = reading_inputs("up")
    if st.button("Load uploaded files", key="up_load", disabled=train_file is None):
        try:
            folder = st.session_state.registry.home / "uploads"
            paths = {k: str(store_upload(f.getvalue(), f.name, folder)) if f else None
                     for k, f in (("train", train_file), ("test", test_file), ("unlabeled", unlabeled_file))}
        except InputError as e:
            not_loaded(e, "choose another file and load again")
        else:
            try_load(DataSpec(**paths, mapping=up.mapping, labels=up.labels, unlabeled_rows=up.unlabeled_rows))
    stored_uploads_section(st.session_state.registry)

with local:
    st.markdown("A file on this machine, or a directory holding the official `subtaskB_train.jsonl`, "
                "`subtaskB_dev.jsonl` and `subtaskB_test.jsonl`, or files named `train`, `dev` (or `val`), `test` and "
                "`unlabeled` (`.jsonl`, `.csv` or `.parquet`; the unlabeled file's texts need no label).")
    # the files loaded now (an upload's stored copy too, as "Current" names it): a new session (a reload) shows
    # where its dataset came from, and loads it again as it is
    own = spec.paths
    with st.form("lp_form", border=False):  # Enter in a field loads, as the button does
        train_path = st.text_input("Train file or directory", own.get("train", ""), key="lp_train",
                                   persist_state="session")
        test_path = st.text_input("Test file (optional)", own.get("test", ""), key="lp_test", persist_state="session")
        unlabeled_path = st.text_input("Unlabeled texts (optional; default: a directory's unlabeled file)",
                                       own.get("unlabeled", ""), key="lp_unlabeled", persist_state="session")
        lp = reading_inputs("lp")
        if st.form_submit_button("Load from path", key="lp_load"):
            if not train_path.strip():
                st.error("Give a train file or directory to load.")
            else:
                # named from the root, as runs store it: a relative path depends on where the server started
                try_load(DataSpec(train=train_path.strip(), test=test_path.strip() or None,
                                  unlabeled=unlabeled_path.strip() or None, mapping=lp.mapping, labels=lp.labels,
                                  unlabeled_rows=lp.unlabeled_rows).absolute())

st.subheader("Cleaning")
st.caption("Optional text preprocessing. Off by default: punctuation, digits and case are part of a writer's "
           "style. Applied the same way in Explore, training and Classify.")
current = st.session_state.cleaning
c1, c2, c3 = st.columns(3)
chosen = CleaningConfig(
    expand_contractions=c1.toggle("Expand contractions", current.expand_contractions, key="cl_contr"),
    strip_special=c2.toggle("Strip special characters and digits", current.strip_special, key="cl_special"),
    lowercase=c3.toggle("Lowercase", current.lowercase, key="cl_lower"),
)
if chosen != current:  # kept with the dataset, and shown in the sidebar at once
    st.session_state.cleaning = chosen
    remember(st.session_state.registry, Workspace(st.session_state.dataset.spec, chosen))
    st.rerun()
