"""A labeling session, kept in the studio home as it goes: `labeling/<key>/session.json` (what is labeled, with
which classes, backbone, strategy and seed) and `labels.jsonl`, one line appended and synced per label or undo.
A reload, a second tab or a crash loses nothing: every reader replays the log. The log is untrusted: a line cut by
a crash, a line too long, a class or an id the session does not know are skipped, and replaying it holds one
entry per text of the corpus at most."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from core.data import DataSpec
from core.errors import InputError
from core.paths import atomic_write_text

FOLDER = "labeling"
MAX_LINE = 64 * 1024  # a label event is a few hundred bytes; a longer line is not one
MAX_SESSION_BYTES = 1 << 20
# where a session starts (`core.label.strategies`): breaking ties, on L2R never behind random where an interval
# excludes 0 and ahead at 500 labels, where entropy and TypiClust were behind (bench/studies/active.py)
DEFAULT_STRATEGY = "margin"


@dataclass(frozen=True)
class Session:
    """What a session labels and how it picks; its key is the corpus and the classes, so the same corpus opens the
    same labels whatever strategy or backbone picks next."""

    data: DataSpec
    classes: tuple[str, ...]
    strategy: str = DEFAULT_STRATEGY
    backbone: str | None = None
    seed: int = 0

    @property
    def key(self) -> str:
        blob = json.dumps({"data": asdict(self.data), "classes": list(self.classes)}, sort_keys=True)
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    def folder(self, home: Path) -> Path:
        return home / FOLDER / self.key

    def to_dict(self) -> dict:
        return {**asdict(self), "classes": list(self.classes)}

    @classmethod
    def from_dict(cls, raw: dict) -> Session:
        return cls(DataSpec.from_dict(raw["data"]), tuple(str(c) for c in raw["classes"]), str(raw["strategy"]),
                   raw.get("backbone"), int(raw.get("seed", 0)))


def check_classes(classes: tuple[str, ...]) -> None:
    if len(classes) < 2 or len(set(classes)) != len(classes) or not all(c.strip() for c in classes):
        raise InputError(f"a labeling session needs at least two distinct, named classes; got {list(classes)}")


def save(home: Path, session: Session) -> Session:
    """Open (or reopen) the session's folder and keep its settings; its labels stay as they are."""
    check_classes(session.classes)
    atomic_write_text(session.folder(home) / "session.json", json.dumps(session.to_dict(), sort_keys=True))
    return session


def origin(home: Path, spec: DataSpec) -> DataSpec:
    """The corpus a session's export was labeled from, for the export itself (`labeling/<key>/labels-*/train.jsonl`):
    loaded as the dataset, it goes on labeling there rather than opening a session on the few texts labeled; any
    other spec as it is."""
    if spec.train is None:
        return spec
    folder = Path(spec.train).parent.parent
    if folder.parent != home / FOLDER:
        return spec
    return next((s.data for s in sessions(home) if s.key == folder.name), spec)


def opened(home: Path, session: Session) -> Session:
    """The session as last saved, where it was (a simulation keeps the strategy the user labels with), else saved
    as given."""
    return next((s for s in sessions(home) if s.key == session.key), None) or save(home, session)


def sessions(home: Path) -> list[Session]:
    """The sessions under a home, last touched first; a folder whose settings do not read is left out."""
    found = []
    for path in (home / FOLDER).glob("*/session.json") if (home / FOLDER).is_dir() else []:
        try:
            if path.stat().st_size > MAX_SESSION_BYTES:
                continue
            found.append((path.parent.stat().st_mtime, Session.from_dict(json.loads(path.read_text()))))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return [s for _, s in sorted(found, key=lambda pair: -pair[0])]


def named_files(home: Path) -> tuple[str, ...]:
    """The files the sessions under a home label, so cleaning the uploads keeps them."""
    return tuple(path for s in sessions(home) for path in s.data.paths.values())


def events(path: Path) -> Iterator[dict]:
    """The log's events in order, streamed: lines that do not read as one are skipped."""
    if not path.is_file():
        return
    with path.open("rb") as f:
        while line := f.readline(MAX_LINE + 1):
            if len(line) > MAX_LINE:  # the rest of an overlong line is skipped too
                while line and not line.endswith(b"\n"):
                    line = f.readline(MAX_LINE + 1)
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("id"), str):
                yield event


def given(home: Path, session: Session, ids: set[str] | None = None) -> dict[str, str]:
    """Each labeled text's class, in the order given (a text labeled again takes its last label, an undone one has
    none); `ids` keeps the texts of the corpus alone."""
    labels: dict[str, str] = {}
    for event in events(session.folder(home) / "labels.jsonl"):
        text_id = event["id"]
        if ids is not None and text_id not in ids:
            continue
        if event.get("undo") is True:
            labels.pop(text_id, None)
        elif event.get("label") in session.classes:
            labels.pop(text_id, None)  # relabeled: it moves to the end
            labels[text_id] = event["label"]
    return labels


def append_line(path: Path, record: dict) -> None:
    """One JSON line, appended under a lock and synced before returning: two tabs never interleave a line, and a
    crash after the call keeps it. A line a crash cut is ended first, so the next one reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True).encode() + b"\n"
    with path.open("ab+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            end = f.seek(0, os.SEEK_END)
            if end:
                f.seek(end - 1)
                if f.read(1) != b"\n":
                    line = b"\n" + line
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def append(home: Path, session: Session, event: dict) -> None:
    append_line(session.folder(home) / "labels.jsonl", {**event, "at": round(time.time(), 3)})


def label(home: Path, session: Session, text_id: str, name: str) -> None:
    if name not in session.classes:
        raise InputError(f"'{name}' is not one of this session's classes: {', '.join(session.classes)}")
    append(home, session, {"id": text_id, "label": name})


def undo(home: Path, session: Session, ids: set[str] | None = None) -> str | None:
    """Take back the last label given (in any tab); the text it named, or None when there was none."""
    labels = given(home, session, ids)
    if not labels:
        return None
    last = next(reversed(labels))
    append(home, session, {"id": last, "undo": True})
    return last
