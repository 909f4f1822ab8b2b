"""A sweep: methods × their variants (GAN-BERT's generators, and its adversarial part on or off) × labeled
amounts × seeds, as resolved configs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

from core.data import Amount, labels_read
from core.errors import InputError
from core.train.config import TrainConfig, split
from core.train.methods import METHODS
from core.train.methods.specs import MIN_VAL_PER_CLASS
from core.train.resolution import resolve, with_max_len


def parse_numbers(text: str, kind: str) -> list[float]:
    """'1%, 0.05 10%' → [0.01, 0.05, 0.1] for fractions; '0 1 2' → [0, 1, 2] for seeds."""
    values = []
    for part in text.replace(",", " ").split():
        try:
            value = float(part.rstrip("%")) / 100 if part.endswith("%") else float(part)
        except ValueError:
            raise InputError(f"{part!r} is not a number (in the {kind} list)") from None
        if kind == "seed" and not value.is_integer():
            raise InputError(f"seeds are whole numbers, got {part!r}")
        values.append(value)
    return values


def parse_limits(text: str, word: str = "all") -> list[int | None]:
    """'0, 1000 all' → [0, 1000, None]: counts of at least 0, `word` for no limit (the unlabeled pool sizes)."""
    values: list[int | None] = []
    for part in text.replace(",", " ").split():
        if part.lower() == word:
            values.append(None)
            continue
        try:
            value = int(part.replace("_", ""))
        except ValueError:
            value = -1
        if value < 0:
            raise InputError(f"{part!r} is not a count of 0 or more, nor {word}")
        values.append(value)
    return list(dict.fromkeys(values))


@dataclass(frozen=True)
class Sweep:
    """What a sweep crosses, as the CLI's `sweep` and the Train page both give it: methods, each method's
    variants (`variants` maps a variant setting, such as `generator`, to the values to run; one not given keeps
    the method's value), labeled amounts and seeds; `own` holds the chosen methods' own settings by name, and each
    method takes those its parameters declare (`core.train.params`)."""

    methods: tuple[str, ...]
    variants: dict[str, tuple]
    amounts: tuple[Amount, ...]
    seeds: tuple[int, ...]
    own: Mapping[str, object] = field(default_factory=dict)

    def configs(self, base: TrainConfig, home: Path) -> list[TrainConfig]:
        """Every run of the grid, resolved once here (`resolve`) against the studio `home`. Runs that settle to the
        same config (GAN-BERT's control under either generator) are one run."""
        if not self.methods:
            raise InputError("choose at least one method")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise InputError(f"unknown method {unknown[0]!r}; the methods are {', '.join(METHODS)}")
        if not self.seeds:
            raise InputError("give at least one seed")
        if not self.amounts:
            raise InputError("give at least one labeled fraction or count per class")
        if any(METHODS[m].encoder != "none" for m in self.methods):
            base = with_max_len(base, home)  # resolved once for the grid: every run shares the data and backbone
        configs = []
        for name in self.methods:
            start = self.start(base, name)
            swept = METHODS[name].variants
            for setting in swept:
                if setting in self.variants and not self.variants[setting]:
                    raise InputError(f"choose at least one {setting} for {METHODS[name].title}")
            values = [self.variants.get(setting, [start.value(setting)]) for setting in swept]
            for chosen in product(*values):
                configs += [resolve(start.with_(**dict(zip(swept, chosen)), seed=int(s), **a.fields()), home)
                            for a in self.amounts for s in self.seeds]
        return list({c.to_json(): c for c in configs}.values())

    def start(self, base: TrainConfig, name: str) -> TrainConfig:
        """The base config as method `name` takes it: its own settings from `own`, the rest its defaults."""
        return base.with_(method=name, **split(name, self.own, foreign=True)[1])


def amounts(fractions: list[float], per_class: list[float]) -> tuple[Amount, ...]:
    """The labeled amounts of a sweep: each fraction, then each count per class."""
    return tuple(Amount(fraction=f) for f in fractions) + tuple(Amount(per_class=n) for n in per_class)


def capped_note(chosen: Iterable[Amount], sizes: Mapping[str, int]) -> str | None:
    """Said before launch, as the sampler caps silently: the counts per class that ask for more texts than a
    class's train pool holds, and those classes (from the largest count) with their sizes."""
    capped = sorted((a for a in chosen if a.short_classes(sizes)), key=lambda a: -a.per_class)
    if not capped:
        return None
    short, present = capped[0].short_classes(sizes), sum(n > 0 for n in sizes.values())
    asked = " and ".join(f"{a.per_class:,}" for a in capped)
    which = "any class holds" if len(short) == present else f"{len(short)} of the {present} classes hold"
    held = ", ".join(f"{name} {n:,}" for name, n in short.items())
    return (f"{asked} per class {'asks' if len(capped) == 1 else 'ask'} for more than {which} in the train pool "
            f"({held}): those classes are labeled whole, and leave GAN-BERT no unlabeled texts of their own")


def grid_counts(config: TrainConfig, train: Mapping[int, int], val: Mapping[int, int] | None
                ) -> tuple[int, int | None]:
    """The labeled rows and validation rows a run of `config` will read, from the class sizes of the train pool and
    of the validation split (None: it has none, and validation is drawn from the pool apart from the labeled
    rows), as the sampler draws them; None for validation where its rule leaves the count to the draw."""
    labeled = {c: config.labeled.rows_of(n) for c, n in train.items() if n}
    rule, source = config.validating, val if val is not None else {c: train[c] - labeled.get(c, 0) for c in train}
    if rule.rule == "auto":
        rows = sum(min(n, source.get(c, 0)) for c, n in labeled.items())
    elif rule.rule == "per_class":
        rows = sum(min(int(rule.value), n) for n in source.values() if n)
    elif rule.rule == "split":
        rows = sum(source.values()) if val is not None else None
    elif rule.rule == "none":
        rows = 0
    else:
        rows = None
    return sum(labeled.values()), rows


def planned_unlabeled(config: TrainConfig, train: Mapping[int, int], val: Mapping[int, int] | None, extra: int) -> int:
    """The unlabeled texts a run of `config` will read (`grid_counts`' class sizes, and `extra`: the dataset's
    unlabeled set): the train pool's rows it neither labels nor validates on, and the unlabeled set, up to its
    limit; 0 for a method that reads none."""
    if not METHODS[config.method].uses_unlabeled:
        return 0
    labeled, rows = grid_counts(config, train, val)
    unlabeled = sum(train.values()) - labeled - ((rows or 0) if val is None else 0) + extra
    return unlabeled if config.unlabeled_limit is None else min(unlabeled, config.unlabeled_limit)


def unlabeled_read(configs: list[TrainConfig], train: Mapping[int, int], val: Mapping[int, int] | None,
                   extra: int) -> str | None:
    """What a grid's runs that learn from unlabeled text read of it, per method, amount and pool, before launch:
    'Unlabeled texts each run reads: GAN-BERT G1 (noise) 5,343 at 100%; SetFit 1,000 at 100%' (SetFit's head
    standardizes on up to 1,000 of them; it had been counted as a GAN-BERT run); None when no run reads any."""
    said: dict[str, dict[str, None]] = {}
    for c in configs:
        method = METHODS[c.method]
        if read := method.unlabeled_read(c, planned_unlabeled(c, train, val, extra)):
            said.setdefault(method.display(c), {})[f"{read:,} at {c.amount}"] = None
    return ("Unlabeled texts each run reads: " + "; ".join(f"{name} {', '.join(at)}" for name, at in said.items())
            + ".") if said else None


def starved_note(configs: list[TrainConfig], train: Mapping[int, int], val: Mapping[int, int] | None,
                 extra: int) -> str | None:
    """Said before launch: the runs of a grid whose method cannot do what it is for with the unlabeled texts it will
    read (GAN-BERT with none, or fewer than it labels: `Method.starved`), each note once, with the amounts it is
    for."""
    said: dict[str, dict[str, None]] = {}
    for c in configs:
        unlabeled, labeled = planned_unlabeled(c, train, val, extra), grid_counts(c, train, val)[0]
        if note := METHODS[c.method].starved(c, unlabeled, labeled):
            said.setdefault(note, {})[c.amount] = None
    return " ".join(f"At {', '.join(at)}: {note}." for note, at in said.items()).removesuffix(".") or None


def grid_labels(configs: list[TrainConfig], train: Mapping[int, int], val: Mapping[int, int] | None,
                names: tuple[str, ...] = ()) -> str:
    """What a grid's runs read, once per amount and rule, with the counts the class sizes give ('5/class + 5/class
    validation = 50 labels', '1% (114) + 114 validation = 228 labels', the references' '5/class, no validation'),
    and where validation texts come from when any run validates: the validation split, or else the train pool."""
    said: dict[str, dict[str, None]] = {}
    for c in configs:
        method = METHODS[c.method]
        labeled, rows = grid_counts(c, train, val)
        said.setdefault(labels_read(c.labeled, c.validating, labeled, rows, reference=method.reference), {})[
            method.display(c)] = None
    validates = any(c.validating.rule != "none" and grid_counts(c, train, val)[1] != 0 for c in configs)
    source = "" if not validates else (" Validation texts come from the validation split." if val is not None else
                                       " This dataset has no validation split, so validation texts are drawn from the "
                                       "train pool, apart from the labeled rows.")
    few = [c for c in configs if METHODS[c.method].selects and c.selection == "auto" and c.validating.rule != "none"
           and grid_counts(c, train, val)[1]  # none at all: said above, and the run trains to its budget anyway
           and (least := smallest_validation(c, train, val)) is not None and least < MIN_VAL_PER_CLASS]
    if few:  # said before launch: a walk's run fell back to its last checkpoint with nothing said on the form
        short = validation_short(few[0], train, val)
        which = ", ".join(f"{names[c] if c < len(names) else c} {n}" for c, n in short.items())
        source += (f" Validation will hold fewer than {MIN_VAL_PER_CLASS} texts of some classes ({which}): too few "
                   "to rank checkpoints on, so " + ("this run keeps" if len(few) == 1 else "these runs keep")
                   + " its last checkpoint.")
    # the methods named where runs read differently: '20/class = 80 labels' twice had named neither
    lines = list(said) if len(said) == 1 else [f"{text} ({', '.join(names)})" for text, names in said.items()]
    return f"Labels each run reads, validation included: {'; '.join(lines)}.{source}"


def validation_of(config: TrainConfig, train: Mapping[int, int], val: Mapping[int, int] | None
                  ) -> dict[int, int] | None:
    """The validation texts of each labeled class, as `grid_counts` draws them (None where the rule leaves it to
    the draw)."""
    labeled = {c: config.labeled.rows_of(n) for c, n in train.items() if n}
    rule, source = config.validating, val if val is not None else {c: train[c] - labeled.get(c, 0) for c in train}
    if rule.rule == "auto":
        return {c: min(n, source.get(c, 0)) for c, n in labeled.items()}
    if rule.rule == "per_class":
        return {c: min(int(rule.value), source.get(c, 0)) for c in labeled}
    if rule.rule == "split" and val is not None:
        return {c: source.get(c, 0) for c in labeled}
    return None


def smallest_validation(config: TrainConfig, train: Mapping[int, int], val: Mapping[int, int] | None) -> int | None:
    """The validation texts of the class with fewest (`validation_of`)."""
    counts = validation_of(config, train, val)
    return min(counts.values(), default=None) if counts is not None else None


def validation_short(config: TrainConfig, train: Mapping[int, int], val: Mapping[int, int] | None) -> dict[int, int]:
    """The classes whose validation texts fall short of ranking checkpoints, with their counts."""
    return {c: n for c, n in (validation_of(config, train, val) or {}).items() if n < MIN_VAL_PER_CLASS}
