"""The Data page's shared inputs: which columns hold what, which classes there are, and whether train rows without
a label are unlabeled texts; and the stored uploads."""

from dataclasses import dataclass

import streamlit as st

from core.data import ColumnMapping, declared_labels
from core.label.session import named_files
from core.runs import clean_uploads, stored_uploads


@dataclass(frozen=True)
class Reading:
    """How the files are read: their column mapping, the classes declared (None: every class a split names), and
    whether train rows without a label are unlabeled texts."""

    mapping: ColumnMapping
    labels: tuple[str, ...] | None
    unlabeled_rows: bool


def reading_inputs(key: str) -> Reading:
    with st.expander("Columns, classes and unlabeled rows (for CSV, Parquet or non-standard JSONL)"):
        c1, c2, c3 = st.columns(3)
        mapping = ColumnMapping(
            text=c1.text_input("Text column", "text", key=f"{key}_text", persist_state="session"),
            label=c2.text_input("Label column", "label", key=f"{key}_label", persist_state="session"),
            source=c3.text_input("Source column (optional)", "source", key=f"{key}_source", persist_state="session"))
        c1, c2 = st.columns([2, 1])
        labels = c1.text_input("Classes (optional, comma-separated)", key=f"{key}_classes", persist_state="session",
                               help="Default: every class the train, validation and test labels name. A test class "
                                    "no train row shows is kept, and its texts are scored as errors.")
        rows = c2.checkbox("Rows without a label are unlabeled texts", key=f"{key}_unlabeled_rows",
                           persist_state="session", help="Else a train row without a label is an error.")
    return Reading(mapping, declared_labels(labels), rows)


def stored_uploads_section(registry) -> None:
    """How much the stored uploads hold, and removing those nothing names past an age (`clean_uploads`)."""
    files, size = stored_uploads(registry)
    with st.expander(f"Stored uploads: {files} file(s), {size / 2**20:.1f} MB"):
        st.caption("Uploaded files are kept under the studio home so background runs can read them again. Those "
                   "no run, saved workspace or labeling session names can go once they are old.")
        days = st.number_input("Older than (days)", 0, 3650, 30, key="up_clean_days")
        if st.button("Remove unused uploads", key="up_clean", disabled=not files):
            said = clean_uploads(registry, float(days), named_elsewhere=named_files(registry.home)).words()
            st.success(said[0].upper() + said[1:] + ".")  # str.capitalize had written "MB" as "mb"
