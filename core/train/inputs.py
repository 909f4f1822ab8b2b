"""What a run trains on: the data split into labeled and unlabeled rows, and each split's inputs, either
cached frozen features or token ids, with the batching that turns row indices into representations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from core.backbone import load_tokenizer
from core.data import UNLABELED, Dataset, load_dataset, sample_labeled, with_cleaning
from core.errors import InputError
from core.paths import studio_home
from core.train.config import TrainConfig
from core.train.features import cached_features
from core.train.model import StudioModel

Event = Callable[[dict], None]
VAL_SEED = 0  # the validation carve is the same for every run seed, so runs compare on one split


@dataclass
class Prepared:
    """Everything the loop needs, built once: data split into labeled and unlabeled, inputs per split."""

    dataset: Dataset
    labeled: np.ndarray  # indices into the pool that keep their labels
    unlabeled: np.ndarray  # indices into the pool used without labels
    pool_labels: np.ndarray  # -1 for every unlabeled row
    pool_texts: list[str]  # the train split, then the extra unlabeled texts
    inputs: dict[str, object]  # per split (pool, val, test): feature matrix (frozen) or token id lists
    fraction: float  # labeled share of the train split (also when given per class)


# ---------------------------------------------------------------- data

def load_data(config: TrainConfig) -> Dataset:
    ds = with_cleaning(load_dataset(config.data, config.val_fraction, VAL_SEED), config.cleaning)
    if ds.test is None:
        raise InputError("a training run needs a test split; add a test file")
    return ds


def prepare(config: TrainConfig, ds: Dataset, model: StudioModel, on_event: Event) -> Prepared:
    """Split the train pool into labeled and unlabeled rows and build each split's inputs.

    Unlabeled rows get label -1 here, so no later step can read a label the run is not meant to have.
    """
    pool_frame = ds.train if ds.unlabeled is None else pd.concat([ds.train, ds.unlabeled], ignore_index=True)
    n_train = len(ds.train)
    train_labels = ds.train["label"].to_numpy()
    mask = sample_labeled(train_labels, config.fraction, config.per_class, config.seed)
    labeled = np.flatnonzero(mask)
    unlabeled = np.concatenate([np.flatnonzero(~mask), np.arange(n_train, len(pool_frame))])
    pool_labels = np.full(len(pool_frame), UNLABELED)
    pool_labels[labeled] = train_labels[labeled]
    texts = {"pool": pool_frame["text"].tolist(), "val": ds.val["text"].tolist(), "test": ds.test["text"].tolist()}

    if config.frozen:
        on_event({"type": "status", "message": "encoding texts with the frozen backbone (cached for later runs)"})
        inputs: dict[str, object] = cached_features(
            texts, config.backbone, ds.fingerprint, config.max_len, config.resolved_pooling,
            studio_home() / "features", config.device, config.bf16,
            on_progress=lambda done, total: on_event({"type": "features", "done": done, "total": total}))
        pool = inputs["pool"]
        model.feature_mean.copy_(torch.from_numpy(pool.mean(0)))
        model.feature_std.copy_(torch.from_numpy(pool.std(0) + 1e-6))
    else:
        tokenizer = load_tokenizer(config.backbone)
        inputs = {k: tokenizer(v, truncation=True, max_length=config.max_len, verbose=False)["input_ids"]
                  for k, v in texts.items()}
    return Prepared(ds, labeled, unlabeled, pool_labels, texts["pool"], inputs, float(mask.mean()))


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
    """Turns row indices of a split into sentence representations (features or an encoder pass)."""

    def __init__(self, model: StudioModel, prepared: Prepared, config: TrainConfig, device: torch.device):
        self.model, self.inputs, self.config, self.device = model, prepared.inputs, config, device
        self.pad_id = load_tokenizer(config.backbone).pad_token_id
        self.features = {k: torch.from_numpy(np.asarray(v)) for k, v in self.inputs.items()} if config.frozen else {}

    def lengths(self, split: str) -> np.ndarray:
        if self.config.frozen:
            return np.zeros(len(self.features[split]))
        return np.array([len(x) for x in self.inputs[split]])

    def __call__(self, split: str, idx: np.ndarray) -> torch.Tensor:
        if self.config.frozen:
            return self.model.standardize(self.features[split][idx].to(self.device))
        ids, mask = pad_batch([self.inputs[split][i] for i in idx], self.pad_id, self.device)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.config.bf16):
            return self.model.encode(ids, mask).float()
