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
from pathlib import Path

from core.backbone import resolve_backbone
from core.backbone.families import FAMILIES
from core.backbone.locate import ADAPTED_DIR, Backbone, found_store
from core.backbone.packaged import MINILM, entry_of, named
from core.data import CleaningConfig, ColumnMapping, CorpusConfig, DataSpec, load_dataset, with_cleaning
from core.errors import InputError

SPLITS = ("train", "val", "test")  # the dataset's splits whose texts an adaptation may read; train's by default
RECORD = "adapted.json"  # the adapted backbone's record, beside its weights


@dataclass(frozen=True)
class AdaptConfig:
    """One masked-LM adaptation of a backbone to a dataset's texts. Defaults: bench/studies/defaults.py's TAPT sweep on
    L2R's dev split (frozen features + LR at 20/class over 3 seeds), within a laptop's half hour on its 11k pool."""

    data: DataSpec = field(default_factory=lambda: DataSpec(builtin=CorpusConfig()))
    cleaning: CleaningConfig = field(default_factory=CleaningConfig)
    # the base: a folder, a cached hub id, or None for MiniLM (its name is kept as None: the hash its adapted folders
    # are named by holds this field, and those folders are found by it)
    backbone: str | None = None
    revision: str | None = None  # a hub id's snapshot, pinned at launch
    # the dataset's splits whose texts are read (labels never are); validation or test texts only when named,
    # and the record then says so. Any --unlabeled file is read as well.
    splits: tuple[str, ...] = ("train",)
    epochs: int = 1  # bench/studies/tapt.py on L2R dev: as good as 3 epochs at 1e-4 in a quarter of the CPU time
    max_steps: int | None = None  # stop earlier, for a quick try
    lr: float = 3e-4
    max_len: int = 128
    batch_size: int = 32
    mask: float = 0.15  # share of tokens masked, whole words as BERT masks them
    warmup: float = 0.06  # share of steps with linear warm-up, then linear decay (RoBERTa's and TAPT's schedule)
    seed: int = 0
    precision: str = "auto"
    device: str = "auto"
    texts: str | None = None  # the SHA-1 of the texts it reads, pinned at launch (`pinned`): its folder's name says it

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
        if (refused := not_adaptable(self.backbone)) is not None:
            raise InputError(refused)
        if named(self.backbone) == MINILM:
            object.__setattr__(self, "backbone", None)

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
        base = self.base.name
        read = "" if self.splits == ("train",) else f" (+ {' and '.join(s for s in self.splits if s != 'train')} texts)"
        budget = f"{self.max_steps} steps" if self.max_steps else f"{self.epochs} epoch{'s' * (self.epochs != 1)}"
        return f"Adapt {base} to {self.data.short_name}{read} · masked LM, {budget}"

    @property
    def base(self) -> Backbone:
        """The encoder it adapts: never a GGUF one (refused above), so found without a studio home."""
        return resolve_backbone(self.backbone or MINILM, self.revision, home=None)

    @property
    def folder_name(self) -> str:
        """The adapted backbone's folder under the studio home: its base, its data's name, and a hash of its base,
        settings and the texts it reads (not of where they came from): the same adaptation asked twice, from the
        Train page or the CLI, is found, not made twice."""
        base = self.base
        return self._named(base, base.identity)

    @property
    def past_folder_names(self) -> list[str]:
        """`folder_name` as earlier studios named it, by the base's `past_identities` (`found_store`)."""
        base = self.base
        return [self._named(base, identity) for identity in base.past_identities]

    def _named(self, base: Backbone, identity: str) -> str:
        stem = "minilm" if base.packaged == MINILM else (base.hub_id or base.folder.name)  # as folders were named
        what = {k: v for k, v in json.loads(self.to_json()).items() if k not in ("data", "cleaning", "splits")}
        if self.texts is None:  # not pinned: the data as named
            what |= {"data": json.loads(self.to_json())["data"], "cleaning": asdict(self.cleaning)}
        digest = hashlib.sha1(json.dumps(what | {"base": identity}, sort_keys=True).encode()).hexdigest()[:8]
        name, label = self.data.short_name, self.data.mapping.label
        if label not in (None, ColumnMapping().label) and not name.endswith(f" · {label}"):
            name = f"{name} · {label}"  # as named before an upload's name dropped its label column: folders stay
        return f"{slug(stem)}-tapt-{slug(name)}-{digest}"


def texts_for(config: AdaptConfig, home: Path) -> tuple[list[str], dict[str, int]]:
    """The texts the adaptation reads and how many from each place: train's always, an unlabeled file's when
    the data has one, the validation and test splits' only when the config names them. Labels are never read."""
    ds = with_cleaning(load_dataset(config.data, home), config.cleaning)
    frames = {"train": ds.train, "unlabeled": ds.unlabeled, "val": ds.val if "val" in config.splits else None,
              "test": ds.test if "test" in config.splits else None}
    texts = {name: frame["text"].tolist() for name, frame in frames.items() if frame is not None}
    return [t for part in texts.values() for t in part], {name: len(part) for name, part in texts.items()}


def not_adaptable(backbone: str | None) -> str | None:
    """Why a backbone cannot be adapted by masked-LM pretraining (a causal LM the studio names, known without
    converting it); None for any other (an encoder, or a folder whose kind its adaptation will find)."""
    entry = entry_of(backbone)
    if entry is None or not FAMILIES[entry.family].causal:
        return None
    return (f"{entry.title} is a causal LM: masked-LM adaptation takes an encoder (MiniLM, a BERT-like folder or hub "
            "id)")


def texts_hash(texts: list[str]) -> str:
    h = hashlib.sha1()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\x1e")
    return h.hexdigest()


def pinned(config: AdaptConfig, home: Path) -> AdaptConfig:
    """As launched: the data's paths from the root, the base's snapshot, and the SHA-1 of the texts it will read."""
    config = config.with_(data=config.data.absolute(),
                          revision=config.base.revision)
    return config.with_(texts=texts_hash(texts_for(config, home)[0]))


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "x"


def adapted_folder(config: AdaptConfig, home: Path) -> Path:
    """Where the adapted backbone goes (`core.backbone.locate.ADAPTED_DIR` under the studio `home`)."""
    folder = home / ADAPTED_DIR
    return found_store(folder / config.folder_name, [folder / name for name in config.past_folder_names],
                       config.base)



# texts/s through the masked LM at 128 tokens, MiniLM on a 2-core CPU in bf16 (measured 2026-11-28 on L2R): the speed
# an estimate starts from before an adaptation has finished here
FALLBACK_MLM_SPEED = 25.0


def adapt_seconds(config: AdaptConfig, texts: int, made: list[dict]) -> float:
    """Wall seconds an adaptation of `texts` texts will take, at the median speed of the adaptations `made` here
    (from their records: steps of a batch each, scaled to 128 tokens), else at the laptop figure."""
    speeds = sorted(r["steps"] * r["batch_size"] / r["seconds"] * r["max_len"] / 128
                    for r in made if r.get("seconds") and r.get("steps") and r.get("batch_size") and r.get("max_len"))
    speed = speeds[len(speeds) // 2] if speeds else FALLBACK_MLM_SPEED
    passes = texts * config.epochs
    if config.max_steps:
        passes = min(passes, config.max_steps * config.batch_size)
    return passes / (speed * 128 / config.max_len)
