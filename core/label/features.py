"""The frozen features a labeling session scores texts on: the studio's features + LR reference's, from the
feature store every run shares, so a text encoded once (by a run, a view or an earlier session) is never encoded
again, and the texts labeled here train on the same vectors later."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from core.backbone import prepare_backbone
from core.backbone.device import pick_device
from core.data import Dataset, DataSpec
from core.train.config import TrainConfig
from core.train.inputs import frozen_features
from core.train.maxlen import max_length_for
from core.train.methods import method_for
from core.train.resolution import pinned

METHOD = "features-lr"


def feature_config(ds: Dataset, backbone: str | None, home: Path, max_len: int | None = None) -> TrainConfig:
    """The frozen-feature settings of the features + LR reference on this backbone, at this machine's precision,
    max length `auto` (None) read from the texts to label as a run reads its train split."""
    config = TrainConfig(data=DataSpec(), method=METHOD, backbone=backbone, max_len=max_len)
    config = pinned(method_for(config).settle(config), home)
    if config.max_len is None:
        backbone = prepare_backbone(config.backbone, config.revision, home=home)
        config = config.with_(max_len=max_length_for(ds, backbone, None).tokens)
    return config


def features(config: TrainConfig, ds: Dataset, home: Path,
             on_progress: Callable[[int, int], None] = lambda done, total: None,
             on_status: Callable[[str], None] = lambda message: None) -> tuple[np.ndarray, np.ndarray]:
    """The texts to label's features and the test split's (an empty array without one); only texts no run or
    session encoded before are encoded, `on_progress` counting them."""
    texts = {"pool": ds.train["text"].tolist(), "test": ds.test["text"].tolist() if ds.test is not None else []}

    def event(e: dict) -> None:
        if e["type"] == "features":
            on_progress(e["done"], e["total"])
        elif e["type"] == "status":
            on_status(e["message"])
    out = frozen_features(config, texts, pick_device(config.device), home, event)
    return out["pool"], out["test"]
