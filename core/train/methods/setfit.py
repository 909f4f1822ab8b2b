"""SetFit (Tunstall et al. 2022) through the `setfit` package: contrastive fine-tuning of the
sentence-transformer body on pairs drawn from the labeled texts (same class: positive), then a
logistic-regression head on the tuned body's features.

The head reads, by default, every layer's mean and CLS vectors of the tuned body (standardized): on
this task the last layer holds topic more than style, and SetFit as published (the body's own sentence
embedding) scores near chance on real M4 text; `setfit_features="sentence"` gives the published head. On a
causal LM (SmolLM2) the head reads the run's pooled layer instead: a causal LM's first token has seen nothing,
so it has no CLS, and that layer is the one measured best (`core.backbone.packaged`).
No pickle: the `setfit` package saves its head with joblib, so the studio saves the body as a
sentence-transformers folder (safetensors) and the head's weights in safetensors.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from transformers import TrainerCallback

from core.backbone import depth
from core.backbone.encode import encode_texts, pool
from core.train.attribution import Attribution, GradientPath, Progress, integrated_gradients
from core.train.checkpoint_store import read_tensors, write_checkpoint
from core.train.config import TrainConfig
from core.train.inputs import Prepared
from core.train.memory import bound_memory
from core.train.methods import base
from core.train.methods.base import Cancelled, Fitted, Job
from core.train.methods.direct_specs import SetFitSpec
from core.train.methods.linear import fit_logistic, softmax, val_record

BODY = "body"  # the tuned sentence-transformer, inside the checkpoint folder


def head_pooling(config: TrainConfig) -> str:
    """How the `layers` head pools the body: every layer's mean and CLS for an encoder; a causal LM's pooled layer
    (its CLS would be a first token that has seen nothing)."""
    return config.resolved_pooling if depth(config.backbone)[1] else "layers"


def head_features(body, config: TrainConfig, texts: list[str]) -> np.ndarray:
    """What the head reads: the body's sentence embedding (as published), or `head_pooling`'s vectors."""
    if config.params.setfit_features == "sentence":
        return body.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
    return encode_texts(body[0].auto_model, body.tokenizer, texts, config.max_len, head_pooling(config))


def fit_head(body, config: TrainConfig, data: Prepared) -> dict[str, np.ndarray]:
    """Logistic regression on the body's features of the labeled rows. All-layer features are standardized
    with statistics of the labeled rows and up to `SetFitSpec.STAT_ROWS` unlabeled ones; the published sentence
    embedding is used as it is."""
    texts = [data.pool_texts[i] for i in data.labeled]
    if config.params.setfit_features == "layers":
        extra = np.random.default_rng(config.seed).permutation(data.unlabeled)[:SetFitSpec.STAT_ROWS]
        x = head_features(body, config, texts + [data.pool_texts[i] for i in extra])
        mean, std = x.mean(0), x.std(0) + 1e-6
    else:
        x = head_features(body, config, texts)
        mean, std = np.zeros(x.shape[1], np.float32), np.ones(x.shape[1], np.float32)
    coef, bias, _ = fit_logistic((x[:len(texts)] - mean) / std, data.targets[data.labeled], len(data.classes),
                                 config.params.lr_c)
    return {"coef": coef, "bias": bias, "feature_mean": mean.astype(np.float32), "feature_std": std.astype(np.float32)}


class SetFitPredictor:
    def __init__(self, config: TrainConfig, labels: tuple[str, ...], body, head: dict[str, np.ndarray]):
        self.config, self.labels, self.body, self.head = config, labels, body, head

    def predict(self, texts: list[str]) -> tuple[np.ndarray, None]:
        x = (head_features(self.body, self.config, texts) - self.head["feature_mean"]) / self.head["feature_std"]
        return softmax(x @ self.head["coef"].T + self.head["bias"]), None

    def attribute(self, text: str, label: str, steps: int, on_progress: Progress | None = None) -> Attribution:
        return integrated_gradients(self, self.gradient_path(), text, label, steps, on_progress)

    def gradient_path(self) -> GradientPath:
        """The tuned body's word embeddings → the head's features (the body's own sentence pipeline, or every
        layer's mean and CLS) → the standardized LR head."""
        encoder, pooling = self.body[0].auto_model, head_pooling(self.config)
        h = {k: torch.from_numpy(v) for k, v in self.head.items()}

        def features(embeds: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            if self.config.params.setfit_features == "sentence":
                return self.body({"inputs_embeds": embeds, "attention_mask": mask})["sentence_embedding"]
            out = encoder(inputs_embeds=embeds, attention_mask=mask, output_hidden_states=True)
            return pool(out, mask, pooling)

        def logits(embeds: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            x = (features(embeds, mask).float() - h["feature_mean"]) / h["feature_std"]
            return x @ h["coef"].T + h["bias"]
        return GradientPath(self.body.tokenizer, self.config.max_len, encoder.get_input_embeddings(), logits)


class StepEvents(TrainerCallback):
    """SetFit's steps as studio progress events; a cancel request stops training at the next step."""

    def __init__(self, job: Job, total: int):
        self.job, self.total, self.cancelled = job, total, False

    def on_step_end(self, args, state, control, **kwargs):
        self.job.on_event({"type": "progress", "step": state.global_step, "total_steps": self.total})
        if self.job.should_stop():
            self.cancelled = control.should_training_stop = True
        return control


class SetFit(base.Trainer):
    """The contrastive body tuning and the head, through the `setfit` package."""

    def fit(self, job: Job) -> Fitted:
        from datasets import Dataset  # setfit and datasets take seconds to import: only SetFit runs pay it
        from sentence_transformers import SentenceTransformer
        from setfit import SetFitModel, Trainer, TrainingArguments

        config, data = job.config, job.data
        texts = [data.pool_texts[i] for i in data.labeled]
        targets = data.targets[data.labeled].tolist()
        body = SentenceTransformer(str(config.resolved_backbone(job.home).folder), device=str(job.device),
                                   local_files_only=True)
        body.max_seq_length = config.max_len
        memory = bound_memory(body[0].auto_model, self.spec.step_sequences(config), config.max_len, job.device)
        job.on_event({"type": "status", "message": memory.message()})

        # -- the contrastive step: pairs of labeled texts, same class positive
        steps, budget = self.spec.budget(config, len(texts), job.device.type == "cuda")
        job.on_event({"type": "status", "message": f"budget: {budget}"})
        pairs = steps * self.spec.batch_size(config)
        iterations = max(config.params.setfit_iterations, math.ceil(pairs / (2 * len(texts))))
        progress = StepEvents(job, steps)
        with tempfile.TemporaryDirectory() as scratch:
            args = TrainingArguments(output_dir=scratch, batch_size=self.spec.batch_size(config), max_steps=steps,
                                     num_iterations=iterations, body_learning_rate=self.spec.learning_rate(config),
                                     max_length=config.max_len, seed=config.seed, show_progress_bar=False,
                                     report_to="none", save_strategy="no")
            trainer = Trainer(model=SetFitModel(model_body=body, model_head=LogisticRegression()), args=args,
                              train_dataset=Dataset.from_dict({"text": texts, "label": targets}))
            trainer.add_callback(progress)
            trainer.train_embeddings(texts, targets, args=args)
        if progress.cancelled:
            raise Cancelled("cancelled by request")

        # -- the head: logistic regression on the tuned body's features
        job.on_event({"type": "status", "message": f"fitting the head on {config.params.setfit_features} features"})
        head = fit_head(body, config, data)

        # -- the checkpoint: the body first, the head and description last (a folder with one is whole)
        job.checkpoint.mkdir(parents=True, exist_ok=True)
        body.save(str(job.checkpoint / BODY), safe_serialization=True)
        write_checkpoint(job.checkpoint, {k: torch.from_numpy(v) for k, v in head.items()},
                         {"config": json.loads(config.to_json()), "labels": list(data.labels)})
        predictor = SetFitPredictor(config, data.labels, body, head)
        val = predictor.predict(data.texts("val"))[0] if len(data.val) else None
        test, _ = predictor.predict(data.texts("test"))
        return Fitted(test, None, val_record(job, val, steps) | {
            "budget": budget, "budget_steps": steps, "selection": "last",
            "gradient_checkpointing": memory.checkpointing,
            "selection_reason": "the last body: SetFit trains to its budget, with no checkpoint selection"})

    def load(self, folder: Path, description: dict, home: Path, device: torch.device | str = "cpu"
             ) -> SetFitPredictor:
        from sentence_transformers import SentenceTransformer

        config = TrainConfig.from_json(json.dumps(description["config"]))
        body = SentenceTransformer(str(folder / BODY), device=str(device), local_files_only=True)
        body.max_seq_length = config.max_len
        head = {k: v.numpy() for k, v in read_tensors(folder).items()}
        return SetFitPredictor(config, tuple(description["labels"]), body, head)
