"""`TrainConfig`: the one description of a training run, and of its options.

The CLI and the dashboard both build it, and both read their flags and widgets from its fields' metadata
(help text, choices, bounds), so a default or a choice is written once, here. Its `asdict()` goes into
the run registry and into every checkpoint, so a saved model says how it was made.

Which methods exist is the method table's business (`core.train.methods`): it imports this module, so
this one checks only what holds for every method.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, Field, asdict, dataclass, field, fields, replace

from core.backbone import Backbone, depth, resolve_backbone
from core.backbone.packaged import PACKAGED
from core.backbone.poolings import PROBABILITIES, pooled_layer
from core.data import Amount, CleaningConfig, CorpusConfig, DataSpec, Validation
from core.errors import InputError

ADAPTER_KINDS = {"houlsby": "double_seq_bn", "pfeiffer": "seq_bn"}


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


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run needs; defaults suit a CPU laptop."""

    data: DataSpec = option(None, "where the data comes from (the data flags: --train, --test, …)",
                            factory=lambda: DataSpec(builtin=CorpusConfig()))
    cleaning: CleaningConfig = option(None, "text cleaning (the cleaning flags)", factory=CleaningConfig)
    method: str = option("finetune", "training method", label="Method")
    generator: str = option("noise", "GAN-BERT's generator: G1 noise into an MLP, or G2 conditioned on a bag of words",
                            choices={"noise": "G1: noise", "bow": "G2: bag of words"}, label="GAN-BERT generator")
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
    backbone: str | None = option(None, "the encoder: a local model folder, or a hub id (bert-base-cased, "
                                        "FacebookAI/roberta-base…) from the local Hugging Face cache (default: the "
                                        "bundled MiniLM)", label="Backbone")
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
                                            + "; ".join(f"{p.title.split(' (')[0]} {p.train_layers} of the {p.layer} "
                                                        f"layers its features read (of its {p.layers})"
                                                        for p in PACKAGED.values() if p.train_layers)
                                            + "; every layer on any other backbone", low=0,
                                      label="Top layers trained", unset="backbone's; 0: all", stored="every layer")
    warmup: float = option(0.1, "share of steps with linear learning-rate warm-up (encoder training)", low=0.0,
                           high=1.0, label="Warm-up share")
    patience: int = option(4, "early stopping with best selection: evaluations without a better validation "
                              "macro-F1", low=1, label="Patience (evaluations)")
    adapter_kind: str = option("houlsby", "adapter architecture: Houlsby (double_seq_bn) or Pfeiffer (seq_bn)",
                               choices=tuple(ADAPTER_KINDS), flag="--adapter", label="Adapter")
    reduction_factor: int = option(16, "adapter bottleneck: hidden size / this", low=1, label="Reduction factor")
    lora_rank: int = option(8, "LoRA's rank r: the low-rank update of each attention query and value matrix (Hu et al. "
                               "2021 trained RoBERTa-base on GLUE at 8)", low=1, high=1024, label="LoRA rank")
    lora_alpha: float = option(8.0, "LoRA's alpha: the update is scaled by alpha / rank (Hu et al. 2021: alpha = rank, "
                                    "so a scale of 1)", low=0.0, high=4096.0, label="LoRA alpha")
    gan_preset: str = option("studio", "how GAN-BERT runs: studio (defaults measured by bench/studies/defaults.py); tf "
                                       "(crux82/ganbert ganbert.py and run_experiment.sh: dropout 0.1, AdamW 2e-5 "
                                       "with eps 1e-6 and weight decay 0.01 off LayerNorm and biases, 10% warm-up "
                                       "then linear decay, D's and G's gradients apart and clipped at 1.0, batch "
                                       "64, 3 epochs, pooled CLS); notebook (crux82/ganbert-pytorch "
                                       "GANBERT_pytorch.ipynb: dropout 0.2, AdamW 5e-5 for D and G at a constant "
                                       "rate, batch 64, 10 epochs, the summed gradients that code applies, no "
                                       "clipping, pooled CLS); seed-report (D 512-256-256, G1 100→256, Gaussian "
                                       "noise whatever the noise setting says). Both codes ran 64 tokens on short "
                                       "sentences; a preset leaves the max length to the studio's. Both counted "
                                       "epochs over thousands of texts: on the 141-text M4 sample tf's 3 epochs are "
                                       "9 steps, too few to learn. Pooled CLS vectors are other features than the "
                                       "studio's, so a frozen run with tf or notebook encodes its texts anew. A "
                                       "setting given explicitly (lr, batch size, steps or epochs, pooling) "
                                       "overrides the preset's",
                             choices={"studio": "studio (measured)", "tf": "tf (crux82/ganbert)",
                                      "notebook": "notebook (ganbert-pytorch)", "seed-report": "seed report"},
                             label="GAN-BERT preset")
    finetune_preset: str = option("studio", "how fine-tuning runs: studio (defaults measured by "
                                            "bench/studies/defaults.py); paper, the BERT baseline of the GAN-BERT "
                                            "paper as crux82/ganbert's bert.py and run_experiment.sh train it: the "
                                            "encoder trained with AdamW 2e-5 (eps 1e-6, weight decay 0.01 off "
                                            "LayerNorm and biases), 10% warm-up then linear decay, gradients clipped "
                                            "at 1.0, batch 64, 3 epochs counted as bert.py counts steps "
                                            "(int(labeled / 64 x 3): 5 on the authors' 109 questions), the pooled CLS "
                                            "with dropout 0.1 under a head drawn from N(0, 0.02), the labeled rows "
                                            "alone (no validation). A setting given explicitly overrides the preset's",
                                  choices={"studio": "studio (measured)", "paper": "paper (crux82/ganbert bert.py)"},
                                  label="Fine-tuning preset")
    adversarial: bool = option(True, "GAN-BERT's adversarial game; off is its control: the same discriminator on the "
                                     "same rows and budget, trained by the supervised term alone (no generator, no "
                                     "real/fake terms)", choices={True: "on", False: "off: the control"},
                               label="Adversarial part (off: the control)", sweep=(True,),
                               sweep_label="GAN-BERT's adversarial part")
    noise_dim: int = option(100, "size of G's noise vector", low=1, label="Noise size")
    noise: str = option("uniform", "G's noise: uniform (official code) or gaussian (seed report)",
                        choices=("uniform", "gaussian"), label="Noise")
    collapse_evals: int = option(3, "diverged when a model that had beaten chance falls onto one class for this many "
                                    "evaluations running, counted after the first epoch", low=1,
                                 label="Collapse guard (evaluations)")
    unlabeled_limit: int | None = option(None, "at most this many unlabeled rows for methods that learn from them "
                                               "(GAN-BERT), drawn by the seed; 0 reads none; each is encoded once "
                                               "when frozen (default: all)", low=0, label="Unlabeled rows (at most)",
                                         unset="all", sweep=(None,), sweep_label="Unlabeled pool sizes")
    batches_without_labels: float | None = option(
        None, "GAN-BERT: the largest share of batches that may hold no labeled text (0.05: one batch in 20). Each "
              "epoch repeats the labeled texts until that holds. The authors' rule repeats them int(log2(1/labeled "
              "share)) times, enough for their batches of 64, not for batches of 16 over a large unlabeled pool, "
              "where GAN-BERT with the encoder training fell to chance. 1: the authors' rule alone, as the tf and "
              "notebook presets run; empty: the preset's (0.05 for studio and seed-report). The control reads the "
              "same rows", low=0.001, high=1.0, label="Label-free batches, at most", unset="preset's",
        stored="the authors' rule alone")
    validation: str = option("auto", "the labeled texts a run validates on (checkpoint selection, early stopping, its "
                                     "curves), each one counted in the labels the run reads: auto (as many per class "
                                     "as it labels, drawn from the validation split, else from the unlabeled train "
                                     "pool), N/class, a share such as 0.1, split (the whole validation split) or none "
                                     "(the last checkpoint). The logistic-regression references and SetFit select "
                                     "nothing and read none", label="Validation")
    lr_c: float | None = option(None, "inverse L2 strength of the logistic-regression baselines and SetFit's head "
                                      "(scikit-learn's C; default: the method's, measured by "
                                      "bench/studies/defaults.py)",
                                low=1e-6, high=1e6, flag="--lr-c", label="LR C")
    setfit_features: str = option("layers", "what SetFit's logistic-regression head reads after the contrastive "
                                            "step: every layer's mean and CLS (standardized; on a causal LM, its "
                                            "pooled layer's mean), or the body's own sentence embedding, as "
                                            "published",
                                  choices={"layers": "all layers", "sentence": "sentence embedding (as published)"},
                                  label="SetFit head features")
    setfit_iterations: int = option(20, "SetFit: sentence pairs drawn per labeled text (its num_iterations); the "
                                        "default budget is these pairs over the batch, capped on a CPU", low=1,
                                    label="SetFit pairs per text")
    tags: tuple[str, ...] = option((), "tags to filter runs by", flag="--tag", label="Tags")

    def __post_init__(self) -> None:
        check(self)

    def resolved_backbone(self) -> Backbone:
        """Where the backbone's files are: the bundled MiniLM, a folder, or a cached hub snapshot."""
        return resolve_backbone(self.backbone, self.revision)

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
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        """Read a stored config; fields added since it was written take their defaults."""
        raw = json.loads(text)
        spec = DataSpec.from_dict(raw.pop("data"))
        known = {f.name for f in fields(cls)} - {"data"}
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
        return cls(data=spec, **kwargs)

    def with_(self, **changes) -> TrainConfig:
        return replace(self, **changes)


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


def options() -> dict[str, Option]:
    """Every field a user sets directly (the data and cleaning have their own flags and page)."""
    return {f.name: option_of(f) for f in fields(TrainConfig) if f.name not in ("data", "cleaning")}


def check(c: TrainConfig) -> None:
    """Reject impossible settings with a message naming what is allowed (like run_glue's checks): the
    bounds and choices in the fields' metadata, then the rules between fields."""
    c.labeled  # noqa: B018  (the labeled amount checks itself: core.data.Amount)
    for f in fields(c):
        value, meta = getattr(c, f.name), f.metadata
        if value is None or isinstance(value, (bool, tuple)) and not meta["choices"]:
            continue
        choices = meta["choices"]
        if choices and value not in choices:
            raise InputError(f"{f.name} must be one of {', '.join(choices)}, got {value!r}")
        if meta["low"] is not None and value < meta["low"]:
            raise InputError(f"{f.name} must be at least {meta['low']:g}, got {value}")
        if meta["high"] is not None and value > meta["high"]:
            raise InputError(f"{f.name} must be at most {meta['high']:g}, got {value}")
    if c.lr is not None and not 0 < c.lr < 1:
        raise InputError(f"learning rate must be in (0, 1), got {c.lr}")
    if c.steps is not None and c.epochs is not None:
        raise InputError("give steps or epochs, not both")
    if Validation.parse(c.validation).rule == "none" and c.selection == "best":
        raise InputError("selection best needs validation texts to rank checkpoints on; with validation none the "
                         "run keeps its last checkpoint (selection last or auto)")
    if c.pooling == "layers" and not c.frozen:
        raise InputError("layers pooling needs frozen-feature mode (it is standardized over the cached features)")
