"""`TrainConfig`: the one description of a training run: the settings every run has, and its method's own
(`params`, the method's `MethodParams` as the catalog names it).

The CLI and the dashboard both build it, and both read their flags and widgets from its fields' metadata
(help text, choices, bounds), so a default or a choice is written once. Its JSON (flat: the method's fields beside
the shared ones) goes into the run registry and into every checkpoint, so a saved model says how it was made.

What a method does with its settings is the method's business (`core.train.methods`): it imports this module,
so this one checks only what holds for every method, and each method's parameters check their own.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from core.backbone import Backbone, depth, resolve_backbone
from core.backbone.packaged import DEFAULT_BACKBONE, PACKAGED
from core.backbone.poolings import PROBABILITIES, pooled_layer
from core.data import Amount, CleaningConfig, CorpusConfig, DataSpec, Validation
from core.errors import InputError
from core.train.catalog import CATALOG
from core.train.params import MethodParams
from core.train.settings import Option, check_fields, option, option_of


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run needs; defaults suit a CPU laptop."""

    data: DataSpec = option(None, "where the data comes from (the data flags: --train, --test, …)",
                            factory=lambda: DataSpec(builtin=CorpusConfig()))
    cleaning: CleaningConfig = option(None, "text cleaning (the cleaning flags)", factory=CleaningConfig)
    method: str = option("finetune", "training method", label="Method")
    fraction: float | None = option(0.1, "labeled share of the train pool (0.01 is 1%)", low=0.0, high=1.0,
                                    label="Labeled fraction")
    per_class: int | None = option(None, "or: labeled texts per class (then fraction is unused)", low=1,
                                   label="Labeled texts per class")
    seed: int = option(0, "seed for sampling the labeled rows and for initialisation", low=0, label="Seed")
    steps: int | None = option(None, "optimizer steps the run takes; the same number for every method gives an equal "
                                     "budget (default: the method's converged budget, bench/studies/convergence.py)",
                               low=1, label="Steps")
    epochs: int | None = option(None, "or: passes over what the method's epoch iterates, converted to steps", low=1,
                                label="Epochs")
    max_steps: int | None = option(None, "at most this many optimizer steps, whatever the epochs ask for (GAN-BERT's "
                                          "studio preset sets its budget rule here; default: no cap)", low=1,
                                   label="Step cap (when the budget is in epochs)")
    evaluations: int = option(10, "validation evaluations spread over the run (selection and early stopping)",
                              low=1, high=1000, label="Evaluations")
    selection: str = option("auto", "the checkpoint kept: best validation macro-F1, the last, or auto (the last when "
                                    "validation holds fewer than 10 texts of a class: too few to rank checkpoints)",
                            choices=("auto", "best", "last"), label="Checkpoint selection")
    max_len: int | None = option(None, "tokens per text; longer texts are truncated. auto: the smallest of 128, 256 "
                                       "and 512 (within the backbone's positions) that cuts at most a quarter of the "
                                       "training texts, resolved when the run is queued", low=8, high=512,
                                 label="Max length (tokens)", unset="auto")
    batch_size: int | None = option(None, "texts per batch (default: the method's; 16 when the encoder trains)",
                                    low=1, high=4096, label="Batch size")
    lr: float | None = option(None, "learning rate (default: the method's, measured by bench/studies/defaults.py)",
                              low=0.0, high=1.0, label="Learning rate")
    frozen: bool = option(False, "frozen encoder with features cached on disk; only heads (and G) train: fast on a "
                                 "CPU", label="Frozen-feature mode")
    pooling: str | None = option(None, "sentence vector: cls, pooled (the backbone's pooler on CLS, as both official "
                                       "GAN-BERT codes; CLS when the model has none), mean, every layer's mean and "
                                       "CLS (layers; frozen only), or one layer's mean (layer: see Pooled layer). "
                                       "Default: layer for a causal LM (SmolLM2), else layers when frozen and mean "
                                       "when not (GAN-BERT's tf and notebook presets and fine-tuning's paper preset: "
                                       "pooled, or on a sentence-transformers backbone, whose pooler never trained, "
                                       "the pooling it was trained with: mean for MiniLM)",
                                 choices=("cls", "pooled", "mean", "layers", "layer"), label="Pooling")
    pool_layer: int | None = option(None, "the layer `layer` pooling averages over its tokens (the first token left "
                                          "out: a causal LM's start token sees nothing else); default: SmolLM2's "
                                          "measured 20 of 30, another causal LM's middle layer, an encoder's last",
                                    low=1, label="Pooled layer")
    features: str = option("hidden", "what a frozen run reads of a causal LM (SmolLM2): its hidden states as the "
                                     "pooling says, its token probabilities (24 statistics per text: log-probability, "
                                     "entropy and log-rank, the share of first and top-10 choices, Fast-DetectGPT's "
                                     "curvature), or both side by side",
                           choices={"hidden": "hidden states", "probabilities": "token probabilities",
                                    "both": "hidden states and token probabilities"}, label="Features")
    backbone: str = option(DEFAULT_BACKBONE, "the encoder: one the studio names (" + ", ".join(PACKAGED)
                           + "), a local model folder, or a hub id (bert-base-cased, FacebookAI/roberta-base…) from "
                             "the local Hugging Face cache", label="Backbone")
    revision: str | None = option(None, "snapshot (commit hash) of a hub-id backbone; pinned at launch to the one the "
                                        "cache's main ref names, so every run of a sweep and every reload uses the "
                                        "same weights", label="Backbone revision")
    device: str = option("auto", "auto takes a GPU when there is one", choices=("auto", "cpu", "cuda"),
                         label="Device")
    precision: str = option("auto", "the encoder's precision: auto is bf16 autocast where the hardware runs bf16 "
                                    "natively (CUDA GPUs with bf16, CPUs with AVX512-BF16 or AMX) and fp32 elsewhere, "
                                    "where emulated bf16 was measured 7x slower", choices=("auto", "fp32", "bf16"),
                            label="Precision")
    encoder_engine: str = option("auto", "what encodes frozen features: torch (the precision above), or the backbone "
                                         "exported once to ONNX and run by ONNX Runtime in fp32 (onnx) or with int8 "
                                         "weights (onnx-int8); auto is the fastest that keeps accuracy on this machine "
                                         "(bench/speed/encode.py). Features of one engine are never mixed with "
                                         "another's",
                                 choices=("auto", "torch", "onnx", "onnx-int8"), label="Encoding engine")
    attention_dropout: float | None = option(None, "dropout on attention weights while the encoder trains; 0 lets "
                                                   "attention run its fused kernel (1.4x a step at 256 tokens on a "
                                                   "CPU); default: 0 for fine-tuning and the studio's GAN-BERT "
                                                   "(accuracy measured level), the backbone's own rate (MiniLM: 0.1) "
                                                   "for the authors' presets and adapters", low=0.0, high=0.9,
                                             label="Attention dropout", stored="backbone's")
    train_layers: int | None = option(None, "How many of the encoder's top layers train when it trains (K). The layers "
                                            "below stay frozen: their output for each text is computed once, stored "
                                            "on disk in bf16 and read by every step, epoch, seed and method after it, "
                                            "so a run on a deep backbone takes a fraction of the time. 0 trains "
                                            "every layer. Empty: the backbone's K, measured by "
                                            "bench/studies/defaults.py (docs/methods.md): "
                                            + "; ".join(f"{p.short} {p.train_layers} of the {p.layer} "
                                                        f"layers its features read (of its {p.layers})"
                                                        for p in PACKAGED.values() if p.train_layers)
                                            + "; every layer on any other backbone", low=0,
                                      label="Top layers trained", unset="backbone's; 0: all", stored="every layer")
    warmup: float = option(0.1, "share of steps with linear learning-rate warm-up (encoder training)", low=0.0,
                           high=1.0, label="Warm-up share")
    patience: int = option(4, "early stopping with best selection: evaluations without a better validation "
                              "macro-F1", low=1, label="Patience (evaluations)")
    collapse_evals: int = option(3, "diverged when a model that had beaten chance falls onto one class for this many "
                                    "evaluations running, counted after the first epoch", low=1,
                                 label="Collapse guard (evaluations)")
    unlabeled_limit: int | None = option(None, "at most this many unlabeled rows for methods that learn from them "
                                               "(GAN-BERT), drawn by the seed; 0 reads none; each is encoded once "
                                               "when frozen (default: all)", low=0, label="Unlabeled rows (at most)",
                                         unset="all", sweep=(None,), sweep_label="Unlabeled pool sizes")
    validation: str = option("auto", "the labeled texts a run validates on (checkpoint selection, early stopping, its "
                                     "curves), each one counted in the labels the run reads: auto (as many per class "
                                     "as it labels, drawn from the validation split, else from the unlabeled train "
                                     "pool), N/class, a share such as 0.1, split (the whole validation split) or none "
                                     "(the last checkpoint). The logistic-regression references and SetFit select "
                                     "nothing and read none", label="Validation")
    tags: tuple[str, ...] = option((), "tags to filter runs by", flag="--tag", label="Tags")
    params: MethodParams | None = option(None, "the method's own settings (default: its defaults)")

    def __post_init__(self) -> None:
        if self.backbone is None or not str(self.backbone).strip():  # no backbone named: the default, by its name
            object.__setattr__(self, "backbone", DEFAULT_BACKBONE)
        kind = params_of(self.method)
        if self.params is None:
            object.__setattr__(self, "params", kind())
        elif type(self.params) is not kind:
            raise InputError(f"{self.method} takes {kind.__name__}, got {type(self.params).__name__}")
        check(self)

    @classmethod
    def of(cls, method: str = "finetune", *, foreign: bool = False, **settings) -> TrainConfig:
        """A config from settings by name, the method's own among them (`of("ganbert", generator="bow", seed=1)`):
        what the CLI, the Train page and the benches build. A setting neither shared nor the method's is refused, or
        with `foreign` left out (a sweep's settings hold every chosen method's)."""
        shared, own = split(method, settings, foreign)
        return cls(method=method, params=params_of(method)(**own), **shared)

    def with_(self, **changes) -> TrainConfig:
        """The config with these settings changed, the method's own among them; another method starts from its
        own defaults, with any setting of the same name carried over (`lr_c`, between SetFit and LR)."""
        if "params" in changes:
            return replace(self, **changes)
        method = changes.pop("method", self.method)
        shared, own = split(method, changes, foreign=False)
        if method == self.method:
            return replace(self, **shared, params=replace(self.params, **own))
        kept = {k: v for k, v in asdict(self.params).items() if k in params_of(method).names()}
        return replace(self, method=method, **shared, params=params_of(method)(**{**kept, **own}))

    def value(self, name: str) -> object:
        """A setting by name, shared or the method's own; an error for one that this method does not have."""
        if name in SHARED:
            return getattr(self, name)
        if name in self.params.names():
            return getattr(self.params, name)
        raise InputError(f"{self.method} has no setting {name!r}")

    def resolved_backbone(self, home: Path) -> Backbone:
        """Where the backbone's files are: the bundled MiniLM, a folder, a cached hub snapshot, or a packaged
        backbone's folder under the studio `home` (a lookup: `prepare_backbone` makes it)."""
        return resolve_backbone(self.backbone, self.revision, home=home)

    @property
    def resolved_pooling(self) -> str:
        """The pooling as the encoder applies it; one layer's is named with the layer ('layer15'), and token
        probabilities join it as `core.backbone.poolings` says ('layer20+probabilities')."""
        if self.features == "probabilities":
            return PROBABILITIES
        layers, causal = depth(self.backbone) if self.pooling in (None, "layer") else (0, False)
        if self.pooling == "layer" or (self.pooling is None and causal):
            measured = PACKAGED[self.backbone].layer if self.backbone in PACKAGED else None
            hidden = f"layer{self.pool_layer or measured or (layers // 2 if causal else layers)}"
        else:
            hidden = self.pooling or ("layers" if self.frozen else "mean")
        return f"{hidden}+{PROBABILITIES}" if self.features == "both" else hidden

    @property
    def labeled(self) -> Amount:
        """The labeled amount (its rule: `core.data.Amount`)."""
        return Amount(self.fraction, self.per_class)

    @property
    def validating(self) -> Validation:
        """The validation rule (`core.data.Validation`)."""
        return Validation.parse(self.validation)

    @property
    def amount(self) -> str:
        """The labeled amount as the user chose it: '5/class', or a share such as '1%'."""
        return self.labeled.label

    def to_json(self) -> str:
        """Flat: the method's settings beside the shared ones (their names are unique across the house)."""
        raw = asdict(self)
        own = raw.pop("params")
        return json.dumps({**raw, **own}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        """Read a stored config; fields added since it was written take their defaults. A checkpoint written before
        each method had its own settings holds every method's: the others' are left out (the registry's rows lost
        them in migration 5)."""
        raw = json.loads(text)
        spec = DataSpec.from_dict(raw.pop("data"))
        known = SHARED - {"data", "params"}
        if "bf16" in raw and "precision" not in raw:  # written before precision replaced the bf16 switch
            raw["precision"] = "bf16" if raw["bf16"] else "fp32"
        if raw.get("gan_preset") == "official":  # renamed when the official codes got presets of their own
            raw["gan_preset"] = "studio"
        if "encoder_engine" not in raw:  # before engines, every frozen run encoded with torch
            raw["encoder_engine"] = "torch"
        if "train_layers" not in raw:  # before top-K runs, an encoder that trained trained every layer
            raw["train_layers"] = 0
        if "validation" not in raw:  # before the validation rule: a share of train set aside for every seed
            raw["validation"] = str(Validation("carve", raw.get("val_fraction", 0.1)))
        kwargs = {k: v for k, v in raw.items() if k in known}
        kwargs["cleaning"] = CleaningConfig(**raw["cleaning"])
        kwargs["tags"] = tuple(raw.get("tags", ()))
        kind = params_of(raw.get("method", "finetune"))
        return cls(data=spec, params=kind(**{k: raw[k] for k in kind.names() if k in raw}), **kwargs)


SHARED = frozenset(f.name for f in fields(TrainConfig))


def params_of(method: str) -> type[MethodParams]:
    """The method's settings class, or an error naming the methods there are."""
    try:
        return CATALOG[method].params
    except KeyError:
        raise InputError(f"method must be one of {', '.join(CATALOG)}, got {method!r}") from None


def owners(name: str) -> list[str]:
    """The methods whose own settings hold `name`."""
    return [m for m, entry in CATALOG.items() if name in entry.params.names()]


def split(method: str, settings: dict, foreign: bool) -> tuple[dict, dict]:
    """Settings by name into the shared ones and the method's own; one of another method's is refused (naming
    whose it is), or left out with `foreign`."""
    own_names = params_of(method).names()
    shared = {k: v for k, v in settings.items() if k in SHARED and k != "params"}
    own = {k: v for k, v in settings.items() if k in own_names}
    unknown = [k for k in settings if k not in shared and k not in own]
    if unknown and not foreign:
        whose = owners(unknown[0])
        raise InputError(f"{method} has no setting {unknown[0]!r}" +
                         (f"; it is {' and '.join(whose)}'s" if whose else ""))
    return shared, own


def cut_layers(config: TrainConfig) -> tuple[int, int]:
    """The layers a run's encoder runs (up to the one its pooling reads) and how many of them sit below the top K it
    trains (0: none, every layer trains or the encoder is frozen); (0, 0) where the backbone's config is unreadable."""
    layers = depth(config.backbone)[0]
    runs = min(pooled_layer(config.resolved_pooling) or layers, layers)
    top = 0 if config.frozen else config.train_layers or 0
    return runs, runs - top if 0 < top < runs else 0


def flat_settings(config: TrainConfig, drop: tuple[str, ...] = ()) -> dict[str, object]:
    """A config's settings flattened ('data.train', 'lr', …), without the keys in `drop`: what tells runs
    apart, groups them over seeds, and matches a run to earlier ones."""
    flat: dict[str, object] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}{k}.", v)
        else:
            flat[prefix[:-1]] = value
    walk("", json.loads(config.to_json()))
    return {k: v for k, v in flat.items() if k not in drop}


def options() -> dict[str, Option]:
    """Every field a user sets directly: the shared ones, then each method's own, once each (the data and cleaning
    have their own flags and page)."""
    shared = [f for f in fields(TrainConfig) if f.name not in ("data", "cleaning", "params")]
    own = [f for entry in CATALOG.values() for f in fields(entry.params)]
    return {f.name: option_of(f) for f in [*shared, *own]}


def check(c: TrainConfig) -> None:
    """Reject impossible settings with a message naming what is allowed (like run_glue's checks): the
    bounds and choices in the fields' metadata, then the rules between fields."""
    c.labeled  # noqa: B018  (the labeled amount checks itself: core.data.Amount)
    check_fields(c)
    if c.lr is not None and not 0 < c.lr < 1:
        raise InputError(f"learning rate must be in (0, 1), got {c.lr}")
    if c.steps is not None and c.epochs is not None:
        raise InputError("give steps or epochs, not both")
    if Validation.parse(c.validation).rule == "none" and c.selection == "best":
        raise InputError("selection best needs validation texts to rank checkpoints on; with validation none the "
                         "run keeps its last checkpoint (selection last or auto)")
    if c.pooling == "layers" and not c.frozen:
        raise InputError("layers pooling needs frozen-feature mode (it is standardized over the cached features)")
