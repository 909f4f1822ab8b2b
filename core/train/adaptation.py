"""Task-adaptive pretraining (TAPT; Gururangan et al., ACL 2020, "Don't Stop Pretraining"): a backbone's masked-LM
pretraining continued on a dataset's own texts, labels unused, before any classifier is trained on it. The other
standard way to spend an unlabeled pool, beside GAN-BERT's.

`AdaptConfig` describes one adaptation, the way `TrainConfig` describes a run: the CLI's `adapt`, the Train page
and the registry read it, and its JSON goes into the run registry and into the adapted backbone's record. The
training itself is `core.train.pretrain`, which imports torch; this module does not, so listing jobs stays fast.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace

from core.backbone import resolve_backbone
from core.backbone.locate import ADAPTED_DIR
from core.data import CleaningConfig, CorpusConfig, DataSpec
from core.errors import InputError

SPLITS = ("train", "val", "test")  # the dataset's splits whose texts an adaptation may read; train's by default
RECORD = "adapted.json"  # the adapted backbone's record, beside its weights


@dataclass(frozen=True)
class AdaptConfig:
    """One masked-LM adaptation of a backbone to a dataset's texts. Defaults: bench/defaults.py's TAPT sweep on
    L2R's dev split (frozen features + LR at 20/class over 3 seeds), within a laptop's half hour on its 11k pool."""

    data: DataSpec = field(default_factory=lambda: DataSpec(builtin=CorpusConfig()))
    cleaning: CleaningConfig = field(default_factory=CleaningConfig)
    backbone: str | None = None  # the base: a folder, a cached hub id, or the bundled MiniLM (None)
    revision: str | None = None  # a hub id's snapshot, pinned at launch
    # the dataset's splits whose texts are read (labels never are); validation or test texts only when named,
    # and the record then says so. Any --unlabeled file is read as well.
    splits: tuple[str, ...] = ("train",)
    epochs: int = 3
    max_steps: int | None = None  # stop earlier, for a quick try
    lr: float = 1e-4
    max_len: int = 128
    batch_size: int = 32
    mask: float = 0.15  # share of tokens masked, whole words as BERT masks them
    warmup: float = 0.06  # share of steps with linear warm-up, then linear decay (RoBERTa's and TAPT's schedule)
    seed: int = 0
    precision: str = "auto"
    device: str = "auto"

    def __post_init__(self) -> None:
        unknown = [s for s in self.splits if s not in SPLITS]
        if unknown or "train" not in self.splits:
            raise InputError(f"an adaptation reads train's texts and, when named, val's or test's; got "
                             f"{', '.join(self.splits) or 'none'}")
        for name, value, low, high in (("epochs", self.epochs, 1, 1000), ("batch size", self.batch_size, 1, 4096),
                                       ("max length", self.max_len, 8, 512)):
            if not low <= value <= high:
                raise InputError(f"{name} must be in [{low}, {high}], got {value}")
        if self.max_steps is not None and self.max_steps < 1:
            raise InputError(f"max steps must be at least 1, got {self.max_steps}")
        if not 0 < self.lr < 1 or not 0 < self.mask < 1 or not 0 <= self.warmup < 1:
            raise InputError("the learning rate and the masking rate must be in (0, 1), the warm-up share in [0, 1)")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AdaptConfig:
        raw = json.loads(text)
        raw["data"] = DataSpec.from_dict(raw["data"])
        raw["cleaning"] = CleaningConfig(**raw["cleaning"])
        raw["splits"] = tuple(raw["splits"])
        return cls(**raw)

    def with_(self, **changes) -> AdaptConfig:
        return replace(self, **changes)

    @property
    def label(self) -> str:
        """Its name on every page: what is adapted to what, and how long."""
        base = resolve_backbone(self.backbone, self.revision).name if self.backbone else "MiniLM (bundled)"
        read = "" if self.splits == ("train",) else f" (+ {' and '.join(s for s in self.splits if s != 'train')} texts)"
        budget = f"{self.max_steps} steps" if self.max_steps else f"{self.epochs} epoch{'s' * (self.epochs != 1)}"
        return f"Adapt {base} to {self.data.short_name}{read} · masked LM, {budget}"

    @property
    def folder_name(self) -> str:
        """The adapted backbone's folder under the studio home: its base, its data and a hash of the rest, so the
        same adaptation asked twice is found, not made twice."""
        base = resolve_backbone(self.backbone, self.revision)
        stem = "minilm" if base.bundled else (base.hub_id or base.folder.name)
        digest = hashlib.sha1(self.to_json().encode()).hexdigest()[:8]
        return f"{slug(stem)}-tapt-{slug(self.data.short_name)}-{digest}"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "x"


def adapted_folder(config: AdaptConfig):
    """Where the adapted backbone goes (`core.backbone.locate.ADAPTED_DIR` under the studio home)."""
    from core.paths import studio_home

    return studio_home() / ADAPTED_DIR / config.folder_name
