"""The reference baselines: logistic regression (scikit-learn) on TF-IDF n-grams, and on the run's
cached frozen features. Both converge in seconds to one solution, so they are the floor a method must
clear to be worth its cost. Their checkpoints are weights in safetensors and a vocabulary in JSON."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

import numpy as np
import torch
from scipy.sparse import hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from core.errors import InputError
from core.train.attribution import Attribution, Progress, ngram_weights
from core.train.checkpoint_store import read_tensors, write_checkpoint
from core.train.config import TrainConfig
from core.train.methods.base import Fitted, Job, Trainer
from core.train.methods.neural import NeuralTrainer
from core.train.metrics import classification_metrics

NOT_SELECTED = "fixed: logistic regression converges to one solution, so there is no checkpoint to select"
# Word uni- and bigrams for content, character 2–5-grams inside word boundaries for style.
VECTORIZERS = {"word": {"analyzer": "word", "ngram_range": (1, 2)},
               "char": {"analyzer": "char_wb", "ngram_range": (2, 5)}}
MAX_FEATURES = 50_000  # per vectorizer
# The bytes of weights a fit may hold: scikit-learn's L-BFGS keeps some 25 copies of them (its history, gradients),
# so 40 MB bounds a fit near 1 GB. 5,000 classes × 100,000 n-grams had taken 7.4 GB; there each vectorizer keeps
# the 500 most frequent, and at Subtask B's 6 classes the cap stays MAX_FEATURES.
WEIGHT_BYTES = 40e6


def features_for(classes: int) -> int:
    """The n-grams each vectorizer keeps for a fit over `classes` classes (`WEIGHT_BYTES`)."""
    return int(min(MAX_FEATURES, max(100, WEIGHT_BYTES // (8 * len(VECTORIZERS) * max(classes, 1)))))


def fit_logistic(x, y: np.ndarray, classes: int, c: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Multinomial logistic regression; returns k×d weights and k biases (a 2-class fit made symmetric)."""
    if classes < 2:
        raise InputError("logistic regression needs labeled rows of at least two classes")
    lr = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    coef, bias = lr.coef_, lr.intercept_
    if classes == 2:  # softmax([-z/2, z/2]) is sigmoid(z), scikit-learn's binary probability
        coef, bias = np.vstack([-coef / 2, coef / 2]), np.array([-bias[0] / 2, bias[0] / 2])
    return coef.astype(np.float32), bias.astype(np.float32), int(np.max(lr.n_iter_))


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def val_record(job: Job, probs: np.ndarray | None, iterations: int) -> dict:
    """What a fit without checkpoint selection records: its iterations, and its validation metrics when it read
    validation texts (None when it read none, as the references do)."""
    data, val = job.data, None
    if probs is not None and len(data.val):
        scores = classification_metrics(data.val_labels(), data.classes[probs.argmax(1)], data.dataset.labels)
        val = {k: scores[k] for k in ("accuracy", "macro_f1", "mcc")}
    return {"steps": iterations, "selection": "fixed", "selection_reason": NOT_SELECTED, "val": val}


class FeaturesLR(NeuralTrainer):
    """Standardized as the frozen heads see them; saved as the same linear head, so it loads and predicts like
    frozen fine-tuning."""

    def fit(self, job: Job) -> Fitted:
        data = job.data
        model = self.build_model(job.config, data.labels, job.device, job.home)
        inputs = self.inputs_for(model, job)
        job.on_event({"type": "status", "message": "fitting logistic regression on the cached features"})
        with torch.no_grad():
            x = {k: model.standardize(torch.from_numpy(np.asarray(v)).to(job.device)).cpu().numpy()
                 for k, v in inputs.items()}
        coef, bias, iterations = fit_logistic(x["pool"][data.labeled], data.targets[data.labeled],
                                              len(data.classes), job.config.params.lr_c)
        linear = model.head[-1]
        linear.weight.data.copy_(torch.from_numpy(coef))
        linear.bias.data.copy_(torch.from_numpy(bias))
        self.save(model, job.checkpoint)
        val = softmax(x["val"] @ coef.T + bias) if len(data.val) else None
        return Fitted(softmax(x["test"] @ coef.T + bias), None, val_record(job, val, iterations))


def ngram_names(vectorizers: dict[str, TfidfVectorizer]) -> list[str]:
    """Feature index → its n-gram, word ones first, in the order `TfidfPredictor.features` stacks them."""
    names = []
    for kind, v in vectorizers.items():
        vocabulary = sorted(v.vocabulary_.items(), key=lambda item: item[1])
        names += [f"{term} ({'words' if kind == 'word' else 'chars'})" for term, _ in vocabulary]
    return names


class TfidfPredictor:
    def __init__(self, config: TrainConfig, labels: tuple[str, ...], vectorizers: dict[str, TfidfVectorizer],
                 coef: np.ndarray, bias: np.ndarray):
        self.config, self.labels, self.vectorizers, self.coef, self.bias = config, labels, vectorizers, coef, bias

    def features(self, texts: list[str]):
        return hstack([v.transform(texts) for v in self.vectorizers.values()]).tocsr()

    def predict(self, texts: list[str]) -> tuple[np.ndarray, None]:
        return softmax(np.asarray(self.features(texts) @ self.coef.T) + self.bias), None

    @cached_property
    def ngram_names(self) -> list[str]:
        """Feature index → its n-gram, built once per loaded model (26,913 names on the real sample; rebuilt
        for every n-gram an explanation named, they took minutes)."""
        return ngram_names(self.vectorizers)

    def attribute(self, text: str, label: str, steps: int, on_progress: Progress | None = None) -> Attribution:
        """The text's n-grams weighted by the class's coefficients (there is no token path to integrate along)."""
        return ngram_weights(self, text, label)

    def ngram_contributions(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Per class, each feature's share of the logit on this text (tf-idf value × coefficient), and the
        logits."""
        x = self.features([text]).toarray()[0]
        return self.coef * x[None, :], self.coef @ x + self.bias


class TfidfLR(Trainer):
    """TF-IDF n-grams (vocabulary and IDF from the labeled texts) and logistic regression, saved as tensors."""

    def fit(self, job: Job) -> Fitted:
        data = job.data
        job.on_event({"type": "status", "message": "fitting TF-IDF n-grams and logistic regression"})
        texts = [data.pool_texts[i] for i in data.labeled]
        kept = features_for(len(data.classes))
        if kept < MAX_FEATURES:
            job.on_event({"type": "status", "message": f"{len(data.classes):,} classes: each vectorizer keeps the "
                                                       f"{kept:,} most frequent n-grams, so the fit stays near 1 GB"})
        vectorizers = {k: TfidfVectorizer(sublinear_tf=True, max_features=kept, **v).fit(texts)
                       for k, v in VECTORIZERS.items()}
        predictor = TfidfPredictor(job.config, data.labels, vectorizers, np.zeros(0), np.zeros(0))
        coef, bias, iterations = fit_logistic(predictor.features(texts), data.targets[data.labeled],
                                              len(data.classes), job.config.params.lr_c)
        predictor.coef, predictor.bias = coef, bias
        tensors = {"coef": torch.from_numpy(coef), "bias": torch.from_numpy(bias),
                   **{f"idf_{k}": torch.from_numpy(v.idf_.astype(np.float32)) for k, v in vectorizers.items()}}
        vocabulary = {k: {term: int(i) for term, i in v.vocabulary_.items()} for k, v in vectorizers.items()}
        write_checkpoint(job.checkpoint, tensors, {"config": json.loads(job.config.to_json()),
                                                   "labels": list(data.labels)},
                         {"vocabulary.json": json.dumps(vocabulary)})
        val = predictor.predict(data.texts("val"))[0] if len(data.val) else None
        test, _ = predictor.predict(data.texts("test"))
        return Fitted(test, None, val_record(job, val, iterations))

    def load(self, folder: Path, description: dict, home: Path, device: torch.device | str = "cpu"
             ) -> TfidfPredictor:
        tensors = read_tensors(folder)
        vocabulary = json.loads((folder / "vocabulary.json").read_text())
        vectorizers = {}
        for k, params in VECTORIZERS.items():
            v = TfidfVectorizer(sublinear_tf=True, vocabulary=vocabulary[k], **params)
            v.idf_ = tensors[f"idf_{k}"].double().numpy()
            vectorizers[k] = v
        config = TrainConfig.from_json(json.dumps(description["config"]))
        return TfidfPredictor(config, tuple(description["labels"]), vectorizers, tensors["coef"].numpy(),
                              tensors["bias"].numpy())
