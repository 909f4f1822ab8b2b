"""The method objects of the catalog (`core.train.catalog`, the one table of methods), and resolving a
config as its method will run it.
"""

import importlib
from collections.abc import Mapping, Sequence

from core.backbone.device import pick_device, pinned_precision
from core.errors import InputError
from core.train.config import TrainConfig, options
from core.train.inputs import load_data
from core.train.maxlen import max_length_for
from core.train.catalog import CATALOG
from core.train.methods.base import Cancelled, Diverged, Fitted, Job, Method, Predictor
from core.train.methods.stepwise import StepMethod


def _load(where: str) -> Method:
    module, cls = where.split(":")
    return getattr(importlib.import_module(module), cls)()


METHODS: dict[str, Method] = {name: _load(entry.where) for name, entry in CATALOG.items()}


def method_for(config: TrainConfig) -> Method:
    """The config's method, or an error naming the ones there are."""
    try:
        return METHODS[config.method]
    except KeyError:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {config.method!r}") from None


def resolve(config: TrainConfig) -> TrainConfig:
    """The config as it will run, resolved once at launch (a sweep's grid, the CLI's `train`) and stored so:
    the data's paths from the root, the method's defaults and budget (`settle`), this machine's backbone
    snapshot and precision, and max length `auto` from the training texts. Every later reader (the registry,
    the worker, `train`) takes the stored config as it is."""
    method = method_for(config)
    config = method.settle(config.with_(data=config.data.absolute()))
    if method.encoder == "none":  # no encoder reads tokens: the max length and precision mean nothing to it
        return config.with_(max_len=None, precision="auto")
    return with_max_len(pinned(config))


def is_resolved(config: TrainConfig) -> bool:
    """Whether `resolve` has nothing left to do that can be told without the data or the disk (`train` refuses
    a config that is not)."""
    method = method_for(config)
    if not config.data.is_absolute or method.settle(config) != config:
        return False
    if method.encoder == "none":  # reads no tokens: no precision or max length to pin
        return config.max_len is None
    return config.precision != "auto" and config.max_len is not None


def with_max_len(config: TrainConfig) -> TrainConfig:
    """Max length `auto` resolved from the training texts (`core.train.maxlen`); a number stays."""
    if config.max_len is not None:
        return config
    ds = load_data(config, need_test=False)
    return config.with_(max_len=max_length_for(ds, config.resolved_backbone(), None).tokens)


def pinned(config: TrainConfig) -> TrainConfig:
    """What depends on this machine, fixed at launch so every run of a sweep and every reload agree: the
    cached snapshot a hub id resolves to (an error naming how to get it when it is not cached), and the
    precision `auto` means on the run's device."""
    revision = config.resolved_backbone().revision
    return config.with_(revision=revision, precision=pinned_precision(config.precision, pick_device(config.device)))


def option_sections(methods: list[str], offered: dict) -> list[tuple[list[str], list[str]]]:
    """The methods' own options, each offered once under the names of every chosen method it sets (LR's C
    sets both LR references): (owners, options) in the order the methods were chosen."""
    owners: dict[str, list[str]] = {}
    for m in methods:
        for o in METHODS[m].options:
            if o not in METHODS[m].variants and o not in offered:
                owners.setdefault(o, []).append(m)
    sections: dict[tuple[str, ...], list[str]] = {}
    for o, ms in owners.items():
        sections.setdefault(tuple(ms), []).append(o)
    return [(list(ms), own) for ms, own in sections.items()]


def idle_options(methods: Sequence[str], variants: Mapping[str, Sequence]) -> set[str]:
    """The options no chosen method reads, with these variants chosen (logistic regression takes no steps;
    GAN-BERT's control alone has no generator): the Train page greys them out rather than let them seem to act."""
    owned = {o for m in METHODS.values() for o in (*m.options, *m.variants)}

    def reads(method: Method, o: str) -> bool:
        return o not in method.ignored(variants) and (o in method.options or o in method.variants or o not in owned)

    return {o for o in options() if methods and not any(reads(METHODS[m], o) for m in methods)}


def unread_options(config: TrainConfig) -> set[str]:
    """The options a run with this config does not read (LR's learning rate, the control's generator): a table
    of its settings shows them as not applying rather than as values that acted."""
    return idle_options([config.method], {f: [getattr(config, f)] for f in method_for(config).variants})


def run_label(config: TrainConfig, labeled: int | None = None) -> str:
    """A run's one name, on every page and in the CLI: what it trains, the labeled amount as the user chose
    it with the texts it labeled once known, the seed, and the dataset."""
    used = f" ({labeled:,} labeled)" if labeled is not None else ""
    return (f"{method_for(config).display(config)} @ {config.amount}{used} · seed {config.seed} · "
            f"{config.data.short_name}")


__all__ = ["METHODS", "Cancelled", "Diverged", "Fitted", "Job", "Method", "Predictor", "StepMethod", "method_for",
           "resolve", "is_resolved", "with_max_len", "run_label", "option_sections", "idle_options",
           "unread_options"]
