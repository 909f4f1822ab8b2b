"""How a setting is offered and checked, declared once on its dataclass field: help text, choices, bounds and the
flag. `TrainConfig` (the settings every run has) and each method's parameters (`core.train.params`) declare their
fields with `option`; the CLI's flags, the Train page's widgets and the checks are built from them."""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields

from core.errors import InputError


def option(default, help: str, *, choices: dict[str, str] | tuple | None = None, low: float | None = None,
           high: float | None = None, flag: str | None = None, label: str | None = None, factory=None,
           unset: str = "default", stored: str | None = None, sweep: tuple | None = None,
           sweep_label: str | None = None) -> Field:
    """A field with what the CLI and the Train page need to offer it: help text, choices (a dict gives
    each choice a display name), bounds, the flag name when it is not `--field-name`, what a None
    default is called (`auto` for a value resolved from the data at launch) and, where it differs, what a None
    left in a resolved run's config means, and for a field a sweep crosses, the values a new sweep takes
    (default: every choice) and its name there."""
    meta = {"help": help, "choices": choices, "low": low, "high": high, "flag": flag, "label": label,
            "unset": unset, "stored": stored or unset, "sweep": sweep, "sweep_label": sweep_label}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)




def default_of(f: Field) -> object:
    return f.default_factory() if f.default is MISSING else f.default


@dataclass(frozen=True)
class Option:
    """How to offer one field, read from its metadata: what the CLI and the Train page build from."""

    name: str
    kind: str  # bool | int | float | str | tags
    label: str
    help: str
    default: object
    choices: dict[str, str] | None  # value → display name
    low: float | None
    high: float | None
    flag: str
    unset: str  # what a None default is called: "default" (the method's) or "auto" (resolved at launch)
    stored: str  # what a None in a resolved run's config means (attention dropout: the backbone's own rate)
    variant_default: list  # the values a new sweep crosses, for a field a sweep crosses
    variant_label: str


def option_of(f: Field) -> Option:
    meta, kind = f.metadata, str(f.type)
    choices = meta.get("choices")
    if choices is not None and not isinstance(choices, dict):
        choices = {c: c for c in choices}
    kind = next(k for k in ("bool", "int", "float", "str", "tuple") if kind.startswith(k))
    return Option(f.name, "tags" if kind == "tuple" else kind, meta.get("label") or f.name.replace("_", " "),
                  meta.get("help", ""), default_of(f), choices, meta.get("low"), meta.get("high"),
                  meta.get("flag") or "--" + f.name.replace("_", "-"), meta.get("unset", "default"),
                  meta.get("stored") or meta.get("unset", "default"),
                  list(meta.get("sweep") or choices or ()), meta.get("sweep_label") or
                  (meta.get("label") or f.name) + "s")




def check_fields(settings: object) -> None:
    """Reject a value outside its field's choices or bounds, naming what is allowed (like run_glue's checks)."""
    for f in fields(settings):
        value, meta = getattr(settings, f.name), f.metadata
        if not meta or value is None or isinstance(value, (bool, tuple)) and not meta["choices"]:
            continue
        choices = meta["choices"]
        if choices and value not in choices:
            raise InputError(f"{f.name} must be one of {', '.join(map(str, choices))}, got {value!r}")
        if meta["low"] is not None and value < meta["low"]:
            raise InputError(f"{f.name} must be at least {meta['low']:g}, got {value}")
        if meta["high"] is not None and value > meta["high"]:
            raise InputError(f"{f.name} must be at most {meta['high']:g}, got {value}")
