"""Classifying texts with a finished run's best checkpoint."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.backbone import load_tokenizer
from core.cleaning import clean_texts
from core.models.classifier import StudioModel
from core.runs import Registry, RunError
from core.training import CHECKPOINT, load_best


@dataclass(frozen=True)
class Prediction:
    label: str
    probabilities: dict[str, float]  # over the k real classes, summing to 1
    fake_probability: float | None  # GAN-BERT's k+1-th class; None for other methods
    seconds: float

    def to_json(self) -> dict:
        return {"label": self.label, "probabilities": self.probabilities,
                "fake_probability": self.fake_probability, "seconds": self.seconds}


def load_run_model(registry: Registry, run_id: str, device: str = "cpu") -> StudioModel:
    run = registry.get(run_id)
    folder = registry.run_dir(run_id) / CHECKPOINT
    if not (folder / "model.json").exists():
        raise RunError(f"run {run_id} is {run.status} and has no checkpoint to predict with")
    return load_best(registry.run_dir(run_id), device)


@torch.inference_mode()
def classify(model: StudioModel, texts: list[str], batch_size: int = 32) -> list[Prediction]:
    """Probabilities per class, cleaned and truncated exactly as in training."""
    config = model.config
    tokenizer = load_tokenizer(config.backbone)
    device = next(model.parameters()).device
    cleaned = clean_texts(texts, config.cleaning)
    out: list[Prediction] = []
    for start in range(0, len(cleaned), batch_size):
        t0 = time.perf_counter()
        enc = tokenizer(cleaned[start:start + batch_size], truncation=True, max_length=config.max_len,
                        padding=True, return_tensors="pt").to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.bf16):
            logits = model.head_logits(model.encode(enc["input_ids"], enc["attention_mask"])).float()
        probs = F.softmax(logits, dim=-1)
        fake = probs[:, -1] if model.has_fake_class else None
        real = probs[:, :len(model.labels)]
        real = real / real.sum(-1, keepdim=True)
        seconds = (time.perf_counter() - t0) / len(real)
        for i, row in enumerate(real.tolist()):
            best = max(range(len(row)), key=row.__getitem__)
            out.append(Prediction(model.labels[best], dict(zip(model.labels, row)),
                                  float(fake[i]) if fake is not None else None, seconds))
    return out
