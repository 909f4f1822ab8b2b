"""Data: the schema, loaders (official files, JSONL, CSV, Parquet, uploads), cleaning, the one stratified
sampler and the built-in synthetic corpus. Imports nothing above it."""

from core.data.cleaning import CleaningConfig, clean_text, clean_texts
from core.data.corpus import SYNTHETIC_NAME, CorpusConfig, generate
from core.data.labels import SEMEVAL_LABELS, declared_labels
from core.data.loading import builtin_dataset, load_dataset, load_texts, official_files, with_cleaning
from core.data.readers import MAX_FILE_BYTES, columns_of, load_file, load_frame, read_bytes, read_table, store_upload
from core.data.sampling import (
    Amount,
    Validation,
    draw_validation,
    labels_read,
    sample_labeled,
    sample_per_group,
    split_off,
    stratified_mask,
)
from core.data.schema import UNLABELED, ColumnMapping, DataError, Dataset, DataSpec, fingerprint

__all__ = [
    "CleaningConfig", "clean_text", "clean_texts", "SYNTHETIC_NAME", "CorpusConfig", "generate", "SEMEVAL_LABELS",
    "declared_labels", "builtin_dataset", "load_dataset", "load_texts", "official_files", "with_cleaning",
    "MAX_FILE_BYTES",
    "columns_of",
    "Validation", "draw_validation", "labels_read", "load_file", "load_frame", "read_bytes", "read_table",
    "store_upload", "Amount", "sample_labeled", "sample_per_group",
    "split_off", "stratified_mask", "UNLABELED", "ColumnMapping", "DataError", "DataSpec", "Dataset", "fingerprint",
]
