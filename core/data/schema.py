"""The dataset schema: where data comes from (`DataSpec`), how columns map, and the loaded `Dataset`.

The schema of every split: `id`, `text`, `label` (int id into `Dataset.labels`, -1 when the row has
none), `source`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from core.data.corpus import CorpusConfig
from core.errors import InputError

# A text is read to its first 100,000 characters (about 20,000 words): ten times the longest text of the M4 sample,
# 25 times the longest of L2R and 40 times what a 512-token model reads (about 2,500 characters).
MAX_TEXT_CHARS = 100_000

UNLABELED = -1
HASH_FOLDER = re.compile(r"[0-9a-f]{16}")  # an upload's folder under the studio home (`store_upload`)


class DataError(InputError):
    """Bad input data; the message names the file and says what to fix."""


def one_line(text: str) -> str:
    """A name as one line of visible text: a path holding a newline had carried it into run names and broken the
    `core runs` table; other control and format characters go too."""
    return " ".join("".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf") or c.isspace()).split())


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns hold what; `None` means the file has no such column."""

    text: str = "text"
    label: str | None = "label"
    source: str | None = "source"
    split: str | None = "split"
    id: str | None = "id"


@dataclass(frozen=True)
class DataSpec:
    """Where a dataset comes from; enough to load it again in another process."""

    train: str | None = None  # a file, or a directory of official subtaskB_*.jsonl files
    test: str | None = None
    val: str | None = None
    unlabeled: str | None = None
    mapping: ColumnMapping = ColumnMapping()
    builtin: CorpusConfig | None = None  # set: the synthetic corpus instead of files
    # the classes, declared (`--labels`); None: every class a split's labels name (train, validation and test), so a
    # test class no labeled row shows is kept and scored as an error, as the GAN-BERT authors' code counts it
    labels: tuple[str, ...] | None = None
    unlabeled_rows: bool = False  # train rows without a label are unlabeled texts (else such a row is an error)

    @property
    def short_name(self) -> str:
        """The dataset's name, as run names and every page show it: a folder of split files by the folder's name
        (`l2r`), a file named for its split (`m4-sample/train.jsonl`) by its folder too, any other file by its own
        name; an upload's folder is its content hash, so an upload goes by its file's name."""
        if self.builtin:
            return "built-in (synthetic)"
        path = Path(self.train or "")
        generic = path.suffix.lower() in (".jsonl", ".json", ".csv", ".parquet", ".pq") and \
            path.stem.lower() in ("train", "subtaskb_train")
        name = path.parent.name if generic and path.parent.name and not HASH_FOLDER.fullmatch(path.parent.name) \
            else path.name
        # one folder read by two label columns is two tasks (TREC's fine and coarse classes): named apart. A file
        # named for itself (an upload) goes by that name alone: "small_train.csv · author" read as two things
        own = self.mapping.label not in (None, ColumnMapping().label) and (generic or not path.suffix)
        return one_line(f"{name} · {self.mapping.label}" if own else name)

    @property
    def paths(self) -> dict[str, str]:
        """The files (or folders) it reads, by role."""
        return {role: path for role in ("train", "test", "val", "unlabeled") if (path := getattr(self, role))}

    def absolute(self) -> DataSpec:
        """The same files named from the root, as a run stores them: a relative path means another file to a
        worker or a server started elsewhere, and the same file spelled twice would read as two datasets."""
        return replace(self, **{role: str(Path(path).expanduser().resolve()) for role, path in self.paths.items()})

    @property
    def is_absolute(self) -> bool:
        return all(Path(path).is_absolute() for path in self.paths.values())

    @classmethod
    def from_dict(cls, raw: dict) -> DataSpec:
        """The inverse of `dataclasses.asdict`, as stored in run configs and the workspace."""
        builtin = raw.get("builtin")
        labels = raw.get("labels")
        return cls(**{**raw, "mapping": ColumnMapping(**raw.get("mapping", {})),
                      "builtin": CorpusConfig(**builtin) if builtin else None,
                      "labels": tuple(labels) if labels is not None else None})


@dataclass
class Dataset:
    """Labeled splits plus the label names; `labels[i]` is the name of label id i."""

    name: str
    labels: tuple[str, ...]
    train: pd.DataFrame
    test: pd.DataFrame | None = None
    val: pd.DataFrame | None = None
    unlabeled: pd.DataFrame | None = None
    synthetic: bool = False
    spec: DataSpec = field(default_factory=DataSpec)
    fingerprint: str = ""
    cut: int = 0  # texts read to their first MAX_TEXT_CHARS characters (`core.data.tables`)
    val_in_test: int = 0  # validation texts set aside because the test split holds them too (`core.data.loading`)

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = fingerprint(self.labels, self.train, self.test, self.val, self.unlabeled)

    @property
    def splits(self) -> dict[str, pd.DataFrame]:
        named = {"train": self.train, "val": self.val, "test": self.test, "unlabeled": self.unlabeled}
        return {k: v for k, v in named.items() if v is not None}

    def texts(self) -> list[str]:
        """Every split's texts, in split order."""
        return [t for frame in self.splits.values() for t in frame["text"]]

    @property
    def absent(self) -> list[str]:
        """The declared classes without a train text (bloomz in the M4 sample): no model can learn them."""
        return [c for c, n in self.class_counts()["train"].items() if n == 0]

    def absent_note(self) -> str | None:
        """The classes without a train text in a sentence: declared and held nowhere (bloomz in the M4 sample), or
        held by the test split alone (TREC's fine classes), whose test texts every model gets wrong."""
        if not (absent := self.absent):
            return None
        counts = self.class_counts()
        them = "it" if len(absent) == 1 else "them"
        if all(counts.loc[c].sum() == 0 for c in absent):
            return f"Declared but absent from every split: {', '.join(absent)}; no model can learn {them}"
        note = (f"{len(absent)} class{'es have' if len(absent) > 1 else ' has'} no labeled example in train "
                f"({', '.join(absent)}): no model can learn {them}")
        if self.test is not None and (held := int(counts.loc[absent, "test"].sum())):
            scored = int((self.test["label"] >= 0).sum())
            note += (f"; {'their' if len(absent) > 1 else 'its'} {held:,} test "
                     f"text{'s count' if held > 1 else ' counts'}"
                     f" as errors, so the best possible test accuracy is {1 - held / scored:.2f}")
        return note

    def cut_note(self) -> str | None:
        """The texts cut as they were read, in a sentence: lengths and word counts see their first part only."""
        if not self.cut:
            return None
        return (f"{self.cut:,} text{'s are' if self.cut > 1 else ' is'} longer than {MAX_TEXT_CHARS:,} characters: "
                f"each is read to its first {MAX_TEXT_CHARS:,} (no model reads past 512 tokens, about 2,500 "
                "characters), so its length and words here are those of that part")

    def unlabeled_note(self) -> str:
        """How many unlabeled texts a run reads (GAN-BERT learns from them; no other method does): the unlabeled set,
        and the train texts the run leaves unlabeled."""
        extra = 0 if self.unlabeled is None else len(self.unlabeled)
        rest = (f"the train texts a run leaves unlabeled ({len(self.train):,} train texts, less its labeled and "
                "validation rows)")
        if not extra:
            return (f"Unlabeled texts: {rest}; no unlabeled set is loaded (a folder's unlabeled file, an unlabeled "
                    "file, or train rows without a label read as unlabeled). A run that labels every train text "
                    "reads none, and GAN-BERT then has nothing to learn from but its labels.")
        return (f"Unlabeled texts: the {extra:,} of the unlabeled set, and {rest}: a run that labels every train text "
                f"reads the {extra:,} alone. GAN-BERT learns from them; no other method reads them.")

    def split_line(self) -> str:
        """The splits loaded and where runs take their validation texts from, in one line (the Data page's banner,
        which had said "nothing is set aside" where a validation file the test split holds was)."""
        counts = ", ".join(f"{len(frame):,} {split}" for split, frame in self.splits.items())
        if self.val is not None:
            return counts
        if self.val_in_test:
            return (f"{counts}; the validation file's {self.val_in_test:,} text(s) that the test split holds too are "
                    "set aside, so each run draws its validation texts from train")
        return f"{counts}; no validation split, so nothing is set aside: each run draws its validation texts from train"

    def validation_note(self) -> str:
        """Where runs on this dataset take their validation texts from, and that each counts as a label read."""
        counted = ("Each validation text is a label the run reads, and counts toward its labels: by default a run "
                   "validates on as many texts per class as it labels (5/class reads 5/class more).")
        shared = (f"The validation file's {self.val_in_test:,} text(s) that the test split holds too are set aside: "
                  "a checkpoint chosen on them would be chosen on test texts. ") if self.val_in_test else ""
        if self.val is None:
            return (shared + ("So no validation split is left" if shared else "No validation split: nothing is set "
                                                                               "aside") + ". Each run draws its "
                    "validation texts from the train pool, apart from its labeled rows, by its own seed. " + counted)
        return (shared + f"Validation split: {len(self.val):,} texts; each run draws its validation texts from it. "
                + counted)

    def class_sizes(self, split: str) -> dict[int, int] | None:
        """Labeled rows per class id in a split (None when the dataset has no such split): what a sampler draws
        from."""
        frame = self.splits.get(split)
        if frame is None:
            return None
        counts = frame.loc[frame["label"] >= 0, "label"].value_counts()
        return {i: int(counts.get(i, 0)) for i in range(len(self.labels))}

    def class_counts(self) -> pd.DataFrame:
        """Rows per class and labeled split, with every declared class present (an absent class counts 0); the
        unlabeled set has no classes to count."""
        out = pd.DataFrame(index=pd.Index(self.labels, name="class"))
        for split, frame in self.splits.items():
            if split == "unlabeled":
                continue
            counts = frame.loc[frame["label"] >= 0, "label"].value_counts()
            out[split] = [int(counts.get(i, 0)) for i in range(len(self.labels))]
        return out


def fingerprint(labels: tuple[str, ...], *frames: pd.DataFrame | None) -> str:
    """Content hash of the data, so caches key on what the data is, not where it came from."""
    h = hashlib.sha1("\x1f".join(labels).encode())
    for frame in frames:
        h.update(b"|")
        if frame is not None:
            h.update(pd.util.hash_pandas_object(frame[["text", "label"]], index=False).values.tobytes())
    return h.hexdigest()[:16]


