"""What the form and the CLI say of a grid's backbone beside its estimate: for a run that trains a causal LM on a CPU
without native bf16, what that costs here (`training_notes`); and the other backbone a frozen grid could run on,
with its measured difference and what it would cost here. MiniLM stays the default (fast, nothing to convert), and
the user weighs SmolLM2's accuracy against its time with the figures in front of them (issue 78's decision,
docs/methods.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.backbone import depth
from core.backbone.packaged import MINILM, PACKAGED, SMOLLM2, entry_of, installed_packaged
from core.runs.estimate import Estimate, grid_seconds, roughly
from core.runs.registry import Registry
from core.train import TrainConfig, method_for


@dataclass(frozen=True)
class Gain:
    """Features + LR on a backbone's features against MiniLM's, paired by seed (bench/studies/default_backbone.py)."""
    corpus: str  # as the form names it
    records: str  # the bench's corpus, whose records hold the runs
    per_class: int
    difference: float  # mean accuracy difference over the seeds
    ahead: int  # seeds it was ahead on
    seeds: int


# bench/studies/default_backbone.py, each backbone at its auto length, 5 seeds; tests/test_docs.py holds these to the
# records
MEASURED = (Gain("L2R dev", "l2r-dev", 20, 0.109, 5, 5), Gain("the M4 sample", "m4-sample", 20, 0.145, 5, 5))


def backbone_advice(registry: Registry, configs: Sequence[TrainConfig], here: float, pool: int, split: int | None,
                    test: int, classes: int, texts: Sequence[str] = (), extra: int = 0,
                    test_texts: Sequence[str] = ()) -> str | None:
    """For a grid whose encoder runs are all frozen on the bundled MiniLM (estimated at `here` seconds), with
    SmolLM2 installed: SmolLM2's hidden states' measured gain, and this grid's estimate on them beside `here`; None
    for any other grid."""
    encodes = [method_for(c).encoder != "none" for c in configs]  # TF-IDF + LR reads no backbone
    if not any(encodes) or any(not c.frozen or c.backbone != MINILM for c, e in zip(configs, encodes) if e) \
            or SMOLLM2 not in installed_packaged():
        return None
    # at the grid's max length, so as not to convert SmolLM2 (some 25 s) to read its tokenizer for an estimate
    other = [c.with_(backbone=SMOLLM2, features="hidden", pooling=None, pool_layer=None) if e else c
             for c, e in zip(configs, encodes)]
    there = grid_seconds(registry, other, pool, split, test, classes, texts, extra, test_texts).seconds
    measured = " and ".join(f"{g.difference:+.3f} on {g.corpus} ({g.per_class} labels a class, ahead on {g.ahead} of "
                            f"{g.seeds} seeds)" for g in MEASURED)
    return (f"On {PACKAGED[SMOLLM2].short}'s hidden states instead of MiniLM's, features + LR scored "
            f"{measured}. This grid on SmolLM2 would take {roughly(there)} here, against {roughly(here)} on "
            "MiniLM.")


def training_notes(configs: Sequence[TrainConfig], estimate: Estimate) -> list[str]:
    """For runs that train a causal LM's layers on a CPU without native bf16, what that means for their time, one
    line per method with its longest run's estimate; none for other runs. Such a CPU trains in fp32, and a CPU with
    AMX runs the same steps in bf16 several times faster (bench/speed/train.py --backbone smollm2-135m on both)."""
    slow: dict[str, float] = {}
    for c in configs:
        if c.frozen or method_for(c).encoder == "none" or not depth(c.backbone)[1] or not fp32_cpu(c):
            continue
        k = method_for(c).settle(c).train_layers  # the backbone's K where the form left it empty (a walk found no 4)
        layers = f"its top {k} layers (on states the layers below give once a text)" if k else "every layer"
        name = f"{method_for(c).display(c)} on {backbone_name(c.backbone)} trains {layers}"
        slow[name] = max(slow.get(name, 0.0), estimate.each.get(c.to_json(), 0.0))
    return [f"{name} in fp32 here, as this CPU has no native bf16 (AVX512-BF16 or AMX): {roughly(seconds)} a run; a "
            "CPU with native bf16, or a GPU, trains it several times faster" for name, seconds in slow.items()]


def backbone_name(backbone: str) -> str:
    """A backbone as the pages name it: a packaged one by its title ('SmolLM2-135M'), a folder by its name."""
    if entry := entry_of(backbone):
        return entry.short
    return Path(backbone).name or backbone


def fp32_cpu(config: TrainConfig) -> bool:
    """Whether the run's device is a CPU without native bf16."""
    from core.backbone.device import native_bf16, pick_device  # torch: asked only of runs that train a causal LM

    device = pick_device(config.device)
    return device.type == "cpu" and not native_bf16(device)
