"""The workspace: the dataset (where it comes from) and the cleaning a studio home is working on, kept in the
registry's settings, so a new session (a reload, another tab, an app restart) opens on them instead of
falling back to the built-in corpus, and the next Launch trains on the data the user chose."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from core.data import CleaningConfig, DataSpec
from core.runs.registry import Registry

KEY = "workspace"


@dataclass(frozen=True)
class Workspace:
    data: DataSpec
    cleaning: CleaningConfig


def remember(registry: Registry, workspace: Workspace) -> None:
    registry.set_setting(KEY, json.dumps(asdict(workspace), sort_keys=True))


def recall(registry: Registry) -> Workspace | None:
    """The workspace last remembered, or None when there is none (or it was written by a later version)."""
    stored = registry.setting(KEY)
    if stored is None:
        return None
    try:
        raw = json.loads(stored)
        return Workspace(DataSpec.from_dict(raw["data"]), CleaningConfig(**raw["cleaning"]))
    except (ValueError, KeyError, TypeError):
        return None


FORM = "train_form"


def remember_form(registry: Registry, values: dict) -> None:
    """The Train form as the user last left it (widget key → value), so a new session (a reload) opens on it
    rather than on the defaults' 60-run grid. Values that JSON cannot hold are left out."""
    kept = {k: v for k, v in values.items() if isinstance(v, (str, int, float, bool, list, tuple, type(None)))}
    stored = json.dumps(kept, sort_keys=True)
    if registry.setting(FORM) != stored:  # every rerun of the page calls this: write only what changed
        registry.set_setting(FORM, stored)


def recall_form(registry: Registry) -> dict:
    """The Train form last remembered ({} when none, or unreadable)."""
    try:
        stored = json.loads(registry.setting(FORM) or "{}")
    except ValueError:
        return {}
    return stored if isinstance(stored, dict) else {}
