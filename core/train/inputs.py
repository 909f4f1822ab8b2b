"""What a run trains on: the data split into labeled and unlabeled rows, and each split's inputs, either
cached frozen features or token ids, with the batching that turns row indices into representations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from core.backbone.device import use_bf16
from core.backbone.encode import load_tokenizer
from core.backbone.engines import encoder_for, usable_engine
from core.backbone.probabilities import NAMES
from core.backbone.token_count import tokens
from core.data import UNLABELED, Dataset, draw_validation, load_dataset, sample_labeled, split_off, with_cleaning
from core.errors import InputError
from core.train.boundary_states import BoundaryStates
from core.train.config import TrainConfig
from core.train.feature_store import both_store, cached_features, feature_store
from core.train.model import StudioModel
from core.train.state_store import StateStore

Event = Callable[[dict], None]
VAL_SEED = 0  # the carve of runs made before the validation rule: one for every run seed


@dataclass
class Prepared:
    """What every method trains on, the same for every method with the same data, seed and amount: the
    pool split into labeled and unlabeled rows, the validation rows the run reads, and the classes the labeled
    rows hold."""

    dataset: Dataset
    labeled: np.ndarray  # indices into the pool that keep their labels
    unlabeled: np.ndarray  # indices into the pool used without labels
    targets: np.ndarray  # per pool row: its class's position in `classes`, -1 for every unlabeled row
    classes: np.ndarray  # the dataset label ids the run learns: those with labeled rows, ascending
    pool_texts: list[str]  # the train split, then the extra unlabeled texts
    fraction: float  # labeled share of the train split (also when given per class)
    val: pd.DataFrame  # the validation rows the run reads (their labels count toward its labels)
    val_source: str  # where they came from: the validation split, the train pool, or none

    def used_by(self, unlabeled: bool) -> Prepared:
        """The pool cut to the rows a method reads, renumbered: the labeled rows, then the unlabeled ones
        (at most --unlabeled-limit) only for a method that learns from them. A frozen run then encodes
        nothing it does not use."""
        rows = np.concatenate([self.labeled, self.unlabeled if unlabeled else np.zeros(0, dtype=np.int64)])
        if len(rows) == len(self.pool_texts):
            return self
        n = len(self.labeled)
        return replace(self, labeled=np.arange(n), unlabeled=np.arange(n, len(rows)), targets=self.targets[rows],
                       pool_texts=[self.pool_texts[i] for i in rows])

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.dataset.labels[i] for i in self.classes)

    @property
    def labels_read(self) -> int:
        """Every label the run reads: its labeled rows and its validation rows."""
        return int(len(self.labeled) + len(self.val))

    @property
    def left_out(self) -> list[str]:
        """Declared classes with no labeled row: the model cannot learn them, so it never names them."""
        return [name for name in self.dataset.labels if name not in self.labels]

    def texts(self, split: str) -> list[str]:
        if split == "pool":
            return self.pool_texts
        return (self.val if split == "val" else self.dataset.test)["text"].tolist()

    def val_labels(self) -> np.ndarray:
        """The validation rows' dataset label ids."""
        return self.val["label"].to_numpy()

    def val_targets(self) -> np.ndarray:
        """Validation labels as positions in `classes`; -1 for a class the run does not learn."""
        return positions(self.classes, self.val_labels())


def positions(classes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    lookup = np.full(max(int(ids.max(initial=0)), int(classes.max(initial=0))) + 1, UNLABELED)
    lookup[classes] = np.arange(len(classes))
    return np.where(ids >= 0, lookup[ids.clip(min=0)], UNLABELED)


# ---------------------------------------------------------------- data

def load_data(config: TrainConfig, home: Path, need_test: bool = True) -> Dataset:
    ds = with_cleaning(load_dataset(config.data, home), config.cleaning)
    rule = config.validating
    if rule.rule == "carve" and ds.val is None:  # a run made before the validation rule, as it ran
        seed = config.data.builtin.seed if config.data.builtin else VAL_SEED
        train, val = split_off(ds.train, rule.value, seed)
        ds = replace(ds, train=train, val=val, fingerprint="")
    if need_test and ds.test is None:
        raise InputError("a training run needs a test split; add a test file")
    return ds


def split_pool(config: TrainConfig, ds: Dataset) -> Prepared:
    """Split the train pool into labeled and unlabeled rows, and draw the run's validation rows. Both depend
    only on the data, the amount, the validation rule and the seed, never on the method, so runs of different
    methods pair by seed.

    Validation rows drawn from the train pool leave its unlabeled rows; unlabeled rows get target -1 here, so no
    later step can read a label the run is not meant to have.
    """
    pool_frame = ds.train if ds.unlabeled is None else pd.concat([ds.train, ds.unlabeled], ignore_index=True)
    n_train = len(ds.train)
    train_labels = ds.train["label"].to_numpy()
    mask = sample_labeled(train_labels, config.labeled, config.seed)
    labeled = np.flatnonzero(mask)
    source, val_rows = draw_validation(config.validating, train_labels, labeled,
                                       None if ds.val is None else ds.val["label"].to_numpy(), config.seed)
    outside = ~mask
    if source == "pool":
        outside[val_rows] = False
        val = ds.train.iloc[val_rows]
    else:
        val = (ds.val if source == "val" else ds.train).iloc[val_rows]
    unlabeled = np.concatenate([np.flatnonzero(outside), np.arange(n_train, len(pool_frame))])
    if config.unlabeled_limit is not None and len(unlabeled) > config.unlabeled_limit:
        drawn = np.random.default_rng(config.seed).choice(len(unlabeled), config.unlabeled_limit, replace=False)
        unlabeled = unlabeled[np.sort(drawn)]
    classes = np.unique(train_labels[labeled])
    targets = np.full(len(pool_frame), UNLABELED)
    targets[labeled] = positions(classes, train_labels[labeled])
    where = {"val": "the validation split", "pool": "the train pool", "none": "none"}[source]
    return Prepared(ds, labeled, unlabeled, targets, classes, pool_frame["text"].tolist(), float(mask.mean()),
                    val.reset_index(drop=True), where)


def frozen_features(config: TrainConfig, texts: dict[str, list[str]], device: torch.device, home: Path,
                    on_event: Event = lambda event: None, loaded: torch.nn.Module | None = None
                    ) -> dict[str, np.ndarray]:
    """Each split's frozen features as `config`'s runs read them, through its feature store under `home`: only
    texts no run (or view) encoded before are encoded, with `features` events counting them. `loaded`: the run's own
    frozen encoder, when one is in memory (`encoder_for`)."""
    backbone, bf16 = config.resolved_backbone(home), use_bf16(config.precision, device)
    say = lambda message: on_event({"type": "status", "message": message})  # noqa: E731
    engine = usable_engine(config.encoder_engine, backbone, home, device, say)
    on_event({"type": "engine", "engine": engine})
    store = feature_store(home, backbone, config.max_len, config.resolved_pooling, bf16, engine)
    both = both_store(config, home, bf16, engine)  # hidden states or token probabilities alone are read from it
    wider = None if both is None else (both, slice(-len(NAMES), None) if config.features == "probabilities"
                                       else slice(0, -len(NAMES)))

    encoder, work = None, 0.0  # the tokens encoded so far (`token_count`): the pass's speed is kept in them

    def encode(missing: list[str], on_progress: Callable[[int, int], None]) -> np.ndarray:
        nonlocal encoder, work  # loaded once, and only when a text is missing from the store
        encoder = encoder or encoder_for(engine, backbone, home, config.max_len, config.resolved_pooling, device, bf16,
                                         loaded)
        work += tokens(missing, config.max_len)
        return encoder(missing, on_progress)
    return cached_features(texts, store, encode, say, wider, lambda done, total: on_event(
        {"type": "features", "done": done, "total": total, "tokens": work}))


def model_inputs(config: TrainConfig, data: Prepared, device: torch.device, home: Path, on_event: Event
                 ) -> dict[str, object]:
    """Each split's inputs: frozen features (only texts no earlier run encoded are encoded), or token ids
    when the encoder trains."""
    texts = {split: data.texts(split) for split in ("pool", "val", "test")}
    if config.frozen:
        return frozen_features(config, texts, device, home, on_event)
    tokenizer = load_tokenizer(config.resolved_backbone(home))
    # a split without texts (no validation: the paper's setting) has no ids; a tokenizer refuses an empty batch
    return {k: tokenizer(v, truncation=True, max_length=config.max_len, verbose=False)["input_ids"] if v else []
            for k, v in texts.items()}


def bucketed_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator,
                     bucket: int = 50) -> list[np.ndarray]:
    """Shuffle, sort by length inside chunks of `bucket` batches, cut, shuffle the batches: batches of
    similar lengths pad little, and the order still changes every epoch."""
    order = rng.permutation(len(lengths))
    batches = []
    for start in range(0, len(order), batch_size * bucket):
        chunk = order[start:start + batch_size * bucket]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def pad_batch(ids: list[list[int]], pad_id: int, device: torch.device, pad_to: int | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad to the longest row (dynamic padding) or to `pad_to`; the mask comes from the true lengths."""
    width = pad_to or max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, :len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, :len(row)] = 1
    return input_ids.to(device), mask.to(device)


class Representer:
    """Turns row indices of a split into sentence representations: frozen features, an encoder pass, or for a
    top-K run the layers above its boundary on the texts' stored states (`BoundaryStates`)."""

    def __init__(self, model: StudioModel, inputs: dict[str, object], config: TrainConfig, device: torch.device,
                 home: Path):
        self.model, self.inputs, self.config, self.device = model, inputs, config, device
        self.pad_id = load_tokenizer(config.resolved_backbone(home)).pad_token_id
        self.bf16 = use_bf16(config.precision, device)
        self.features = {k: torch.from_numpy(np.asarray(v)) for k, v in self.inputs.items()} if config.frozen else {}
        self.states = None if config.frozen or not model.cut.boundary else BoundaryStates(
            model.cut, StateStore.open(home, config.resolved_backbone(home), model.cut.boundary,
                                       "bf16" if self.bf16 else "fp32", model.hidden_size),
            {k: v for k, v in inputs.items()}, device, self.bf16)

    def prepare(self, rows: dict[str, np.ndarray], on_event: Event) -> None:
        """For a top-K run, the states of these rows of each split stored before the first step (`states`
        events count the texts the store lacked); nothing otherwise."""
        if self.states is not None:
            self.states.prepare(rows, on_event)

    def lengths(self, split: str) -> np.ndarray:
        if self.config.frozen:
            return np.zeros(len(self.features[split]))
        return np.array([len(x) for x in self.inputs[split]])

    def __call__(self, split: str, idx: np.ndarray) -> torch.Tensor:
        if self.config.frozen:
            return self.model.standardize(self.features[split][idx].to(self.device))
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            if self.states is not None:
                return self.model.encode_states(*self.states(split, idx)).float()
            ids, mask = pad_batch([self.inputs[split][i] for i in idx], self.pad_id, self.device)
            return self.model.encode(ids, mask).float()
