"""The backbone vectors a view (Explore's embedding map) draws: those a default frozen run on the same data
reads, through the same feature store. A walk waited 28 s for 1,500 texts on a first visit, encoded apart from the
runs' features at another pooling and length; now texts a run or an earlier view encoded are read, and the rest
are encoded once, at the runs' engine and precision, and kept for the runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from core.backbone.device import pick_device, use_bf16
from core.data import DataSpec
from core.train.config import TrainConfig
from core.train.feature_store import store_key
from core.train.inputs import frozen_features
from core.train.resolution import resolve


def view_features(data: DataSpec, home: Path, backbone: str | None = None,
                  on_progress: Callable[[int, int], None] = lambda done, total: None
                  ) -> tuple[Callable[[list[str]], np.ndarray], str]:
    """A function giving the frozen vectors of texts as a default frozen run on `data` with `backbone` reads them
    (its max length, pooling, precision and engine), reporting the texts it encodes; and the name of their feature
    store, which tells a view's cached result from one of other vectors."""
    config = resolve(TrainConfig(data=data, frozen=True, backbone=backbone), home)
    device = pick_device(config.device)

    def embed(texts: list[str]) -> np.ndarray:
        def report(event: dict) -> None:
            if event["type"] == "features":
                on_progress(event["done"], event["total"])
        return frozen_features(config, {"texts": texts}, device, home, report)["texts"]

    identity = store_key(config.resolved_backbone(home), config.max_len, config.resolved_pooling,
                         use_bf16(config.precision, device), config.encoder_engine)
    return embed, identity
