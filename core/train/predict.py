"""Classifying texts with any trained model, cleaned exactly as in training."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from sklearn.metrics import accuracy_score, confusion_matrix

from core.data import clean_texts
from core.train.macro import macro_f1
from core.train.methods import Predictor
from core.train.submission import submission_ids


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


def unlearned_note(model_labels: tuple[str, ...], dataset_labels: tuple[str, ...]) -> str | None:
    """The dataset's classes a model never had a labeled row of, in one line (None when it knows them all): it
    cannot predict them, so their texts are its errors."""
    missing = [c for c in dataset_labels if c not in set(model_labels)]
    if not missing:
        return None
    shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    return (f"This model knows {len(model_labels)} of the dataset's {len(dataset_labels)} classes: it never had a "
            f"labeled text of {shown}, so it cannot predict {'them' if len(missing) > 1 else 'it'}.")


def readable(p: float) -> str:
    """A probability as people read it: three decimals, or '<0.001' (GAN-BERT's tiny ones printed 1e-36)."""
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


FAKE_MEANING = ("How much GAN-BERT's discriminator takes this text for its generator's output: a sign of how far "
                "the text lies from what it trained on, not of whether a machine wrote it.")


def fake_class_note(p: float) -> tuple[str, str | None]:
    """What Classify says of GAN-BERT's fake-class probability: its line, and a warning when the discriminator
    takes the text for generator output (its class scores then mean little)."""
    warning = ("The discriminator takes this text for generator output; its class scores are unreliable."
               if p > 0.5 else None)
    return f"Fake-class probability: **{readable(p)}**", warning


def readable_frame(out: pd.DataFrame) -> pd.DataFrame:
    """A predictions table (`classify_frame`) with its probabilities written as `readable` says."""
    return out.assign(**{c: out[c].map(readable) for c in out.columns if c.startswith("p_")})


def classify_frame(model: Predictor, frame: pd.DataFrame, labels: tuple[str, ...], batch_size: int = 64,
                   on_progress: Callable[[int, int], None] | None = None) -> tuple[pd.DataFrame, dict | None]:
    """Predictions for every row of a loaded file (`load_frame`): id, the gold label when the file has one
    (never called `label`, which a submission reads as the prediction), the predicted class, each class's
    probability and GAN-BERT's fake-class probability; and, when every row has a label of a class the model knows,
    the accuracy and macro-F1 (over the classes in the labels or the predictions) with the confusion counts. When
    some labels are of classes it never learned, no scores: `out.attrs["unscored"]` says why."""
    texts = frame["text"].tolist()
    if (from_store := getattr(model, "from_store", None)) is not None:  # a frozen run reads the feature store
        model = from_store(texts, on_progress or (lambda done, total: None))
    preds: list[Prediction] = []
    for start in range(0, len(texts), batch_size):
        preds += classify(model, texts[start:start + batch_size], batch_size)
        if on_progress is not None:
            on_progress(len(preds), len(texts))
    # the ids a submission writes (a file's own, or its row numbers), in the table and the CSV too: a file without
    # ids had read three-0, three-1… there and 0, 1… in its submission
    out = pd.DataFrame({"id": submission_ids(frame), "predicted": [p.label for p in preds]})
    for name in model.labels:
        out[f"p_{name}"] = [p.probabilities[name] for p in preds]
    if preds and preds[0].fake_probability is not None:
        out["p_fake"] = [p.fake_probability for p in preds]
    ids = frame["label"].to_numpy()
    if not len(ids) or (ids < 0).any():
        return out, None
    truth = [labels[i] for i in ids]
    out.insert(1, "gold", truth)
    if unknown := sorted(set(truth) - set(model.labels)):  # scored, they would count as the model's errors
        out.attrs["unscored"] = (
            f"Not scored: {sum(t in unknown for t in truth):,} of the file's {len(truth):,} labeled rows are of "
            f"classes the model was never trained on ({', '.join(unknown)}); it knows {', '.join(model.labels)}. "
            "The predictions are below; accuracy against these labels would measure the mismatch, not the model.")
        return out, None
    classes = [c for c in model.labels if c in set(truth) | set(out["predicted"])]
    confusion = confusion_matrix(truth, out["predicted"], labels=classes)
    metrics = {"rows": len(out), "accuracy": float(accuracy_score(truth, out["predicted"])),
               "macro_f1": macro_f1(confusion), "classes": classes, "confusion": confusion.tolist()}
    return out, metrics
