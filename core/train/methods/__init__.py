"""The methods of the catalog (`core.train.catalog`, the one table of methods) as their specs, and what
the pages and the CLI ask of them: a run's name, and the options a choice of methods reads. Importing this
package imports no torch; a method's training module is imported when it first fits or loads.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path

from core.backbone import backbone_label
from core.backbone.facts import named_causal
from core.backbone.packaged import DEFAULT_BACKBONE, PACKAGED
from core.errors import InputError
from core.train.catalog import CATALOG
from core.train.config import TrainConfig, options
from core.train.methods.base import Cancelled, Diverged, Fitted, Job, Method, Predictor, Trainer, class_at

METHODS: dict[str, Method] = {name: class_at(entry.spec)() for name, entry in CATALOG.items()}


def method_for(config: TrainConfig) -> Method:
    """The config's method, or an error naming the ones there are."""
    try:
        return METHODS[config.method]
    except KeyError:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {config.method!r}") from None


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


def idle_options(methods: Sequence[str], variants: Mapping[str, Sequence], frozen: bool = False) -> set[str]:
    """The options no chosen method reads, with these variants chosen (logistic regression takes no steps;
    GAN-BERT's control alone has no generator; in frozen mode no layer trains but inside adapters and LoRA): the
    Train page greys them out rather than let them seem to act."""
    owned = {o for m in METHODS.values() for o in (*m.options, *m.variants)}

    def reads(method: Method, o: str) -> bool:
        if o == "train_layers" and frozen and method.encoder != "trained":
            return False
        return o not in method.ignored(variants) and (o in method.options or o in method.variants or o not in owned)

    return {o for o in options() if methods and not any(reads(METHODS[m], o) for m in methods)}


def unread_options(config: TrainConfig) -> set[str]:
    """The options a run with this config does not read (LR's learning rate, the control's generator): a table
    of its settings shows them as not applying rather than as values that acted."""
    return idle_options([config.method], {f: [config.value(f)] for f in method_for(config).variants})


def run_label(config: TrainConfig, labeled: int | None = None, differs: str = "") -> str:
    """A run's one name, on every page and in the CLI: what it trains (with `differs`, what tells it apart from
    runs of the same name), the labeled amount as the user chose it with the texts it labeled once known, the
    seed, and the dataset."""
    used = f" ({labeled:,} labeled)" if labeled is not None else ""
    apart = f" ({differs})" if differs else ""
    return (f"{method_for(config).display(config)}{backbone_tag(config)}{apart} @ {config.amount}{used} · seed "
            f"{config.seed} · {config.data.short_name}")


def backbone_tag(config: TrainConfig) -> str:
    """' · SmolLM2 both', ' · SmolLM2, top 4 layers': a backbone other than the default (MiniLM), in every run's name
    whatever its method, with what a causal LM's frozen run reads of it (hidden states, token probabilities or both)
    and how many of its top layers a run trained where not every one. A grid launched on SmolLM2 had been named as
    one on MiniLM, and a top-K run as one that trained every layer. None for a method that reads no encoder (TF-IDF
    + LR had been named '· SmolLM2')."""
    if method_for(config).encoder == "none":
        return ""
    k = 0 if config.frozen else config.train_layers or 0
    top = f"top {k} layer{'s' * (k != 1)}" if k else ""
    if config.backbone == DEFAULT_BACKBONE:
        return f" · {top}" if top else ""
    if config.backbone in PACKAGED:
        name = PACKAGED[config.backbone].title.split("-")[0]
    else:
        label = backbone_label(config.backbone)
        name = label if label != str(config.backbone) else Path(str(config.backbone)).name or str(config.backbone)
    reads = f" {config.features}" if named_causal(config.backbone) and config.frozen else ""
    return f" · {name}{reads}" + (f", {top}" if top else "")


__all__ = ["METHODS", "Cancelled", "Diverged", "Fitted", "Job", "Method", "Predictor", "Trainer", "backbone_tag",
           "method_for",
           "run_label",
           "option_sections", "idle_options", "unread_options"]
