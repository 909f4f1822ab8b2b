"""A run's folder: the one place that knows its layout.

    runs/<run id>/config.json               the TrainConfig, as queued
    runs/<run id>/train.log                 the worker's (or Ray dispatcher's) log
    runs/<run id>/checkpoint/               the kept checkpoint (safetensors weights + JSON description)
    runs/<run id>/result.json               final test metrics and what the run used
    runs/<run id>/test_predictions.parquet  per-text test predictions
    runs/<run id>/predictions/<file>.csv     `predict --file` without --out: every row of a file, predicted

Every write is atomic (a temporary file, then a rename), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from core.paths import atomic_write_bytes, atomic_write_parquet, atomic_write_text, remove_write_leftovers
from core.train import Predictor, TrainConfig, has_checkpoint, load_predictor

if TYPE_CHECKING:
    import torch


class RunFolder:
    """A run folder, wherever it is: under the studio home, or a scratch folder on a Ray node. It is also
    what `core.train.train` writes its outputs to."""

    CONFIG, LOG, CHECKPOINT, RESULT, PREDICTIONS = (
        "config.json", "train.log", "checkpoint", "result.json", "test_predictions.parquet")

    def __init__(self, path: Path):
        self.path = Path(path)

    @property
    def log(self) -> Path:
        return self.path / self.LOG

    # ------------------------------------------------------------ writing

    def write_config(self, config: TrainConfig) -> None:
        atomic_write_text(self.path / self.CONFIG, json.dumps(json.loads(config.to_json()), indent=2))

    @property
    def checkpoint(self) -> Path:
        """The folder a method writes its kept checkpoint into."""
        return self.path / self.CHECKPOINT

    def predictions_for(self, file: Path) -> Path:
        """Where `predict --file` writes a file's predictions when no --out is given."""
        return self.path / "predictions" / f"{Path(file).stem}.predictions.csv"

    def write_predictions(self, frame: pd.DataFrame) -> None:
        atomic_write_parquet(self.path / self.PREDICTIONS, frame)

    def write_result(self, result: dict) -> None:
        atomic_write_text(self.path / self.RESULT, json.dumps(result, indent=2))

    def append_log(self, line: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(time.strftime("%Y-%m-%d %H:%M:%S ") + line.rstrip("\n") + "\n")

    def receive(self, files: dict[str, bytes]) -> None:
        """Write files sent back from elsewhere (a Ray node), each atomically; none may leave the folder."""
        for rel, data in files.items():
            if ".." in Path(rel).parts or Path(rel).is_absolute():
                raise ValueError(f"refusing a returned file outside the run folder: {rel}")
            atomic_write_bytes(self.path / rel, data)

    def remove_leftovers(self) -> None:
        """Delete the temporary files a process killed mid-write left; the files they were to replace are whole."""
        remove_write_leftovers(self.path)

    # ------------------------------------------------------------ reading

    def files(self) -> dict[str, bytes]:
        """Every file of the folder by relative path, to send elsewhere."""
        return {str(f.relative_to(self.path)): f.read_bytes() for f in sorted(self.path.rglob("*")) if f.is_file()}

    def has_checkpoint(self) -> bool:
        return has_checkpoint(self.path / self.CHECKPOINT)

    def load_model(self, home: Path, device: torch.device | str = "cpu") -> Predictor:
        """The run's model, its backbone and stores under the studio `home`."""
        return load_predictor(self.path / self.CHECKPOINT, home, device)

    def has_predictions(self) -> bool:
        return (self.path / self.PREDICTIONS).exists()

    def predictions(self) -> pd.DataFrame:
        return pd.read_parquet(self.path / self.PREDICTIONS)

    def tail_log(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        with open(self.log, "rb") as f:
            return "".join(deque((ln.decode("utf-8", "replace") for ln in f), maxlen=lines))
