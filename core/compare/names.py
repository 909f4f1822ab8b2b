"""Names that tell runs apart: a run's own name (method, amount, seed, dataset) says nothing of the
settings outside it, so two runs at max length 128 and 256 would read the same on every table, chart
and sentence. Each name here adds the settings in which its run differs from the others that share it."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Collection, Hashable, Sequence
from pathlib import Path

import pandas as pd

from core.backbone import backbone_label
from core.data import DataSpec
from core.runs import Run
from core.train import method_for, run_label
from core.train.config import flat_settings, options
from core.train.methods import backbone_tag, unread_options

METRIC_NAMES = {"accuracy": "accuracy", "macro_f1": "macro-F1", "mcc": "MCC"}  # the test metrics, in words
NEVER = ("tags", "device")  # where a run ran, or a label for it, is not a setting that changes its result
RUN_AXES = ("seed", "fraction", "per_class")  # said in every run's own name (`run_label`): not what tells it apart


def setting_label(key: str) -> str:
    """'max_len' → 'max length' (its label without the unit); a data file by its role ('data.train' → 'train
    file'); another nested key ('cleaning.lowercase') reads as itself."""
    if key.startswith("data.") and key.count(".") == 1 and key != "data.builtin":
        return f"{key.removeprefix('data.')} file"
    found = options().get(key)
    if not found:
        return key.replace("_", " ")
    label = found.label.split(" (")[0]
    return label if label[:2].isupper() else label[0].lower() + label[1:]  # 'LR C' stays as it is


def setting_value(value: object, key: str = "") -> str:
    """A value in words; a data file by its folder and name, which tell two copies apart without the whole path
    (an upload's folder is its content hash)."""
    if key == "backbone":
        return backbone_label(value)  # an adapted backbone by its base and the texts it was adapted on
    if value is None:  # unlabeled rows None reads 'all'; attention dropout the backbone's (resolved runs write 0)
        found = options().get(key)
        return found.stored if found else "default"
    if setting_label(key).endswith(" file") and isinstance(value, str):
        return "/".join(Path(value).parts[-2:])
    if isinstance(value, bool):
        return "on" if value else "off"
    if key == "train_layers" and value == 0:  # K = 0 trains every layer
        return "all"
    return f"{value:g}" if isinstance(value, float) else str(value)


def dataset_names(specs: Sequence[DataSpec]) -> dict[DataSpec, str]:
    """Each dataset's name in tables, filters and verdicts: its short name, and where two datasets share one (an
    upload and the same file loaded by path, two built-in corpora), what tells them apart: a file's folder, the
    corpus's size, else a hash. One name for two had put both in one verdict, ranked against each other."""
    by_short: dict[str, set[DataSpec]] = defaultdict(set)
    for spec in specs:
        by_short[spec.short_name].add(spec)
    names = {}
    for short, alike in by_short.items():
        files = [s for s in alike if not s.builtin]
        for spec in alike:
            if len(alike) == 1:
                names[spec] = short
            elif spec.builtin:
                names[spec] = f"{short}, {spec.builtin.train_per_class}/class"
            else:
                names[spec] = (f"{short} "
                               f"({telling_folder(Path(spec.train or ''), [Path(s.train or '') for s in files])})")
    counts = Counter(names.values())
    for spec, name in list(names.items()):  # one folder, two test files (L2R tested on dev, then on test)
        if counts[name] > 1 and not spec.builtin:
            names[spec] = f"{spec.short_name} (tested on {Path(spec.test).name if spec.test else 'none'})"
    counts = Counter(names.values())
    return {spec: name if counts[name] == 1 else f"{name} #{hashlib.sha1(repr(spec).encode()).hexdigest()[:6]}"
            for spec, name in names.items()}


def telling_folder(path: Path, alike: list[Path]) -> str:
    """The nearest folder above `path` whose name tells it apart from the `alike` paths (an upload's hash folder,
    or `a` of `a/m4-sample/train.jsonl` against `b/m4-sample/train.jsonl`); its parent folder's name when none does."""
    for depth in range(1, len(path.parts)):
        names = [p.parts[-1 - depth] if len(p.parts) > depth else "" for p in alike]
        if names.count(path.parts[-1 - depth]) == 1:
            return path.parts[-1 - depth]
    return path.parent.name


def differing(runs: Sequence[Run], drop: tuple[str, ...] = NEVER) -> list[str]:
    """The settings (flattened keys, in the config's order) that are not the same for all of `runs`."""
    flat = [flat_settings(r.config, drop) for r in runs]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    return [k for k in keys if len({repr(f.get(k)) for f in flat}) > 1]


def varying(flats: Sequence[dict], kinds: Sequence[Hashable], leave_out: Collection[str] = ()) -> list[str]:
    """For each of `flats` (a run's or a group's flattened settings), '<setting> <value>' for every setting but
    those in `leave_out` that is not the same over the others of its kind (its method and dataset), joined by ', '.
    The one rule a run's name (`distinct_names`) and its group's name (`seeds.groups`) both follow: a walk found a
    run named "(unlabeled rows 1000)" in Compare's groups, plain in Classify, and with an empty "differs in"."""
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, kind in enumerate(kinds):
        members[kind].append(i)
    words = [""] * len(flats)
    for same in members.values():
        keys = sorted({k for i in same for k in flats[i]} - set(leave_out))
        apart = [k for k in keys if len({json.dumps(flats[i].get(k), default=str) for i in same}) > 1]
        for i in same:
            words[i] = ", ".join(f"{setting_label(k)} {setting_value(flats[i].get(k), k)}" for k in apart)
    return words


def distinguishing(runs: Sequence[Run]) -> dict[str, str]:
    """Run id → what tells it apart from the other runs of its method and dataset (`varying`), its amount and
    seed left to its name ('max length 256'), with its run id for runs alike in every setting (a run queued
    twice); '' for a run whose method and dataset no other run shares in another setting."""
    flats = [flat_settings(r.config, (*NEVER, *unread_options(r.config))) for r in runs]
    extra = dict(zip((r.id for r in runs), varying(  # runs on two backbones differ in their names' tags already
        flats, [(method_for(r.config).display(r.config) + backbone_tag(r.config), r.config.data) for r in runs],
        RUN_AXES)))
    keys = [json.dumps(f, sort_keys=True, default=str) for f in flats]
    taken = Counter(keys)
    return {r.id: ", ".join(filter(None, [extra[r.id], f"run {r.id[-6:]}" if taken[key] > 1 else ""]))
            for r, key in zip(runs, keys)}


def distinct_names(runs: Sequence[Run]) -> dict[str, str]:
    """Run id → its name with what tells it apart from the other runs of the same name (`distinguishing`) right
    after the method, where a table cut at its column's width still shows it."""
    extra = distinguishing(runs)
    return {r.id: r.name if r.kind == "adapt" else run_label(r.config, r.labeled, extra[r.id]) for r in runs}


BUDGET = ("steps", "epochs")  # how a budget was asked for; what a run took is its record's `steps`


def settings_diff(runs: Sequence[Run], names: dict[str, str] | None = None) -> pd.DataFrame:
    """The settings in which the runs differ (the seed included): one row a run, named in `names` (default: names
    that tell these runs apart) and whole in its own column, one column a setting, its label short, for two runs or
    more. A method is named as every page names it ("Trained head on frozen features"); a budget is the steps
    each run took, not "default" beside "30 epochs"; a setting a run's method does not read (LR's learning rate) or
    does not have (fine-tuning's generator) reads '–'."""
    names = names or distinct_names(runs)
    keys = differing(runs, drop=())
    steps = [(r.metrics or {}).get("steps") for r in runs]
    budget = any(k in BUDGET for k in keys) or len(set(steps)) > 1
    rows = []
    for r, took in zip(runs, steps):
        flat, unread = flat_settings(r.config), unread_options(r.config)
        row = {"run": names[r.id]}
        for k in keys:
            if k in BUDGET:
                continue
            row[setting_label(k)] = ("–" if k in unread or k not in flat else method_for(r.config).display(r.config)
                                     if k == "method" else setting_value(flat[k], k))
        if budget:
            row["steps run"] = "–" if "steps" in unread else "not recorded" if took is None else f"{took:,} steps"
        rows.append(row)
    return pd.DataFrame(rows)
