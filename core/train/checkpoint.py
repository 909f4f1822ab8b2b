"""Loading any run's checkpoint: its description names the config, whose method (from the table)
rebuilds the model."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from core.train.config import TrainConfig
from core.train.methods import Predictor, method_for
from core.train.store import read_description


def load_predictor(folder: Path, device: torch.device | str = "cpu") -> Predictor:
    description = read_description(folder)
    config = TrainConfig.from_json(json.dumps(description["config"]))
    return method_for(config).load(folder, description, device)
