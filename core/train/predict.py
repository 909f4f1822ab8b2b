"""Classifying texts with any trained model, cleaned exactly as in training."""

from __future__ import annotations

import time
from dataclasses import dataclass

from core.data import clean_texts
from core.train.methods import Predictor


@dataclass(frozen=True)
class Prediction:
    label: str
    probabilities: dict[str, float]  # over the model's classes, summing to 1
    fake_probability: float | None  # GAN-BERT's k+1-th class; None for other methods
    seconds: float

    def to_json(self) -> dict:
        return {"label": self.label, "probabilities": self.probabilities,
                "fake_probability": self.fake_probability, "seconds": self.seconds}


def classify(model: Predictor, texts: list[str], batch_size: int = 32) -> list[Prediction]:
    """Probabilities per class for each text. A class the model never had labeled rows of is not among
    its labels, so no prediction names it."""
    cleaned = clean_texts(texts, model.config.cleaning)
    out: list[Prediction] = []
    for start in range(0, len(cleaned), batch_size):
        t0 = time.perf_counter()
        probs, fake = model.predict(cleaned[start:start + batch_size])
        seconds = (time.perf_counter() - t0) / len(probs)
        for i, row in enumerate(probs.tolist()):
            best = max(range(len(row)), key=row.__getitem__)
            out.append(Prediction(model.labels[best], dict(zip(model.labels, row)),
                                  None if fake is None else float(fake[i]), seconds))
    return out
