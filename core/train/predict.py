"""Classifying texts with a trained model, cleaned and truncated exactly as in training."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from core.backbone import load_tokenizer
from core.data import clean_texts
from core.train.methods import method_for
from core.train.model import StudioModel


@dataclass(frozen=True)
class Prediction:
    label: str
    probabilities: dict[str, float]  # over the k real classes, summing to 1
    fake_probability: float | None  # GAN-BERT's k+1-th class; None for other methods
    seconds: float

    def to_json(self) -> dict:
        return {"label": self.label, "probabilities": self.probabilities,
                "fake_probability": self.fake_probability, "seconds": self.seconds}


@torch.inference_mode()
def classify(model: StudioModel, texts: list[str], batch_size: int = 32) -> list[Prediction]:
    """Probabilities per class for each text, from the model's method."""
    config = model.config
    method = method_for(config)
    tokenizer = load_tokenizer(config.backbone)
    device = next(model.parameters()).device
    cleaned = clean_texts(texts, config.cleaning)
    out: list[Prediction] = []
    for start in range(0, len(cleaned), batch_size):
        t0 = time.perf_counter()
        enc = tokenizer(cleaned[start:start + batch_size], truncation=True, max_length=config.max_len,
                        padding=True, return_tensors="pt").to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.bf16):
            logits = model.head_logits(model.encode(enc["input_ids"], enc["attention_mask"]))
        real, fake = method.probabilities(logits)
        seconds = (time.perf_counter() - t0) / len(real)
        for i, row in enumerate(real.tolist()):
            best = max(range(len(row)), key=row.__getitem__)
            out.append(Prediction(model.labels[best], dict(zip(model.labels, row)),
                                  float(fake[i]) if fake is not None else None, seconds))
    return out
