"""What the studio reads of a backbone from its config file alone (no weights, no conversion of a packaged one):
its depth and width, whether it is a causal LM, its attention dropout, a sentence-transformers pooling, and the
figures measured on a packaged one (its top layers, its budgets). A backbone the studio names reads its entry
(`core.backbone.packaged`), never a file. A backbone that is gone reads as unknown, so its runs are still named; a
config file that is there but cannot be read is said so."""

from __future__ import annotations

import json
from pathlib import Path

from core.backbone.families import FAMILIES, family_of
from core.backbone.locate import BackboneError, resolve_backbone
from core.backbone.packaged import Budget, entry_of
from core.backbone.poolings import last_layer


def depth(spec: str | Path | None) -> tuple[int, bool]:
    """A backbone's layer count and whether it is a causal LM, from its config file alone (no weights, no
    conversion of a packaged one); (0, False) for a backbone that is gone, or a folder still to be given."""
    if entry := entry_of(spec):
        return entry.layers, FAMILIES[entry.family].causal
    config = config_of(str(spec).strip())
    parts = family_of(config)
    return (parts.depth(config), parts.causal) if parts else (int(config.get("num_hidden_layers") or 0), False)


def named_causal(spec: str | Path | None) -> bool:
    """Whether a backbone is a causal LM, for a run's name: a backbone whose config cannot be read names its runs as
    an encoder's, so the lists and Compare still read; the error is said where the backbone is used (a launch, a
    reload)."""
    try:
        return depth(spec)[1]
    except BackboneError:
        return False


def width(spec: str | Path | None) -> int:
    """A backbone's hidden size, read as `depth` reads its layers; 0 for a backbone that is gone."""
    if entry := entry_of(spec):
        return entry.width
    config = config_of(str(spec).strip())
    parts = family_of(config)
    return parts.width(config) if parts else int(config.get("hidden_size") or 0)


def pass_work(spec: str | Path | None, pooling: str) -> float:
    """A pass's matrix work against MiniLM's (6 layers of width 384), the backbone the laptop speeds are kept for:
    the layers it runs (up to the one a `layerN` pooling reads, `last_layer`) × width². SmolLM2's layer 20 is 7.5x
    MiniLM. 1 for a backbone that is gone."""
    layers, hidden = depth(spec)[0], width(spec)
    run = min(layers, last_layer(pooling) or layers)
    return run * hidden ** 2 / (6 * 384 ** 2) if run and hidden else 1.0


def default_train_layers(spec: str | Path | None) -> int:
    """The top layers a run trains on this backbone when it leaves `train_layers`: a packaged backbone's measured K
    (`Packaged.train_layers`), else 0, every layer."""
    return entry.train_layers if (entry := entry_of(spec)) else 0


def measured_budget(spec: str | Path | None, method: str, train_layers: int | None) -> Budget | None:
    """How a method trains a packaged backbone's top layers where that was measured there (`Packaged.budgets`), for
    its measured K alone; None elsewhere (the method's own defaults hold)."""
    entry = entry_of(spec)
    if entry is None or train_layers != entry.train_layers:
        return None
    return next((b for b in entry.budgets if b.method == method), None)


def attention_dropout(spec: str | Path | None) -> float:
    """The dropout a backbone puts on attention weights when a run leaves it (MiniLM's 0.1), read as `depth` reads
    its layers; a packaged one's from its entry (SmolLM2's config: 0.0)."""
    if entry := entry_of(spec):
        return entry.attention_dropout
    config = config_of(str(spec).strip())
    parts = family_of(config)
    return parts.attention_dropout(config) if parts else 0.0


def sentence_pooling(spec: str | Path | None) -> str | None:
    """The pooling a sentence-transformers backbone was trained to give its sentence vector with ('mean' or 'cls',
    from its `1_Pooling/config.json`); None for any other backbone. Such a model never trained BERT's pooler (the
    bundled MiniLM's holds a zero bias and weights at their initial scale), so its `pooled` output is a random
    projection of CLS: read as the authors read bert-base-cased's trained pooler, it left TREC's fine classes at
    one class (bench/studies/trec.py)."""
    if entry := entry_of(spec):
        return entry.sentence_pooling
    try:
        folder = resolve_backbone(spec, home=None).folder
    except BackboneError:  # not there: a run's name still reads
        return None
    path = folder / "1_Pooling" / "config.json"
    try:
        modes = json.loads(path.read_text())
    except FileNotFoundError:  # not a sentence-transformers model
        return None
    except (OSError, ValueError) as e:
        raise BackboneError(f"{path} cannot be read as a sentence-transformers pooling ({type(e).__name__}: {e})") \
            from e
    if not isinstance(modes, dict):
        raise BackboneError(f"{path} holds no pooling config (a JSON object was expected)")
    return "mean" if modes.get("pooling_mode_mean_tokens") else "cls" if modes.get("pooling_mode_cls_token") else None


def config_of(text: str) -> dict:
    """The config file of a folder or hub id (a named backbone's facts are its entry's); {} for a backbone that is not
    there (a folder deleted, a hub id no longer cached), so a run's name and record still read. A config file that
    is there but cannot be read is an error that says so: it had read as a backbone of no layers."""
    try:
        folder = resolve_backbone(text, home=None).folder
    except BackboneError:
        return {}
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise BackboneError(f"{path} cannot be read as a model's config ({type(e).__name__}: {e})") from e
    if not isinstance(config, dict):
        raise BackboneError(f"{path} holds no model config (a JSON object was expected)")
    return config
