"""Methods whose model is the studio's `StudioModel` (an encoder, a head, standardized features): how
to build it, what its checkpoint keeps, how to load it and how it predicts texts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

from core.backbone import prepare_backbone
from core.backbone.cut import split_at
from core.backbone.device import use_bf16
from core.backbone.encode import feature_size, load_cut, load_tokenizer
from core.backbone.engines import encode_with, usable_engine
from core.backbone.families import FINAL_NORMS, LAYER_KEY
from core.backbone.poolings import last_layer, reads_probabilities
from core.data import clean_texts
from core.train.attribution import Attribution, GradientPath, Progress, integrated_gradients
from core.train.checkpoint_store import read_tensors, write_checkpoint
from core.train.config import TrainConfig
from core.train.dropout import cheap_dropout
from core.train.explain_statistics import statistics_attribution
from core.train.inputs import frozen_features, model_inputs
from core.train.methods.base import Job, Trainer
from core.train.model import StudioModel


class NeuralPredictor:
    """A loaded `StudioModel` that predicts texts: tokenized and truncated exactly as in training."""

    def __init__(self, model: StudioModel, method: NeuralTrainer, home: Path):
        self.model, self.method, self.home = model, method, home
        self.config, self.labels = model.config, model.labels
        self.tokenizer = load_tokenizer(model.backbone)

    @torch.inference_mode()
    def predict(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        device = next(self.model.parameters()).device
        bf16 = use_bf16(self.config.precision, device)
        if self.config.frozen and self.config.encoder_engine not in ("torch", "auto"):  # the features it trained on
            backbone = self.model.backbone
            engine = usable_engine(self.config.encoder_engine, backbone, self.home, device)
            features = encode_with(engine, backbone, self.home, texts, self.config.max_len,
                                   self.config.resolved_pooling, device, bf16)
            logits = self.model.head_logits(self.model.standardize(torch.from_numpy(features).to(device)))
        else:
            enc = self.tokenizer(texts, truncation=True, max_length=self.config.max_len, padding=True,
                                 return_tensors="pt").to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                logits = self.model.head_logits(self.model.encode(enc["input_ids"], enc["attention_mask"]))
        return self.probabilities(logits)

    @torch.inference_mode()
    def predict_features(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """A frozen run's probabilities from its features (as its feature store holds them)."""
        device = next(self.model.parameters()).device
        return self.probabilities(self.model.head_logits(self.model.standardize(torch.from_numpy(features).to(device))))

    def probabilities(self, logits: torch.Tensor) -> tuple[np.ndarray, np.ndarray | None]:
        real, fake = self.method.probabilities(logits)
        return real.cpu().numpy(), fake.cpu().numpy() if self.method.spec.reports_fake(self.config) else None

    def from_store(self, texts: list[str], on_progress: Callable[[int, int], None] = lambda done, total: None
                   ) -> StoredFeatures | NeuralPredictor:
        """For a frozen run, a predictor over these texts' features as training reads them: from the feature store
        the run's backbone, layer, length and precision key (texts any run or earlier predict encoded are read, the
        others encoded once and stored), so a file scored by three runs of one backbone is encoded once. A
        predictor that trains its encoder is itself: its features are its own."""
        if not self.config.frozen:
            return self
        cleaned = clean_texts(texts, self.config.cleaning)
        device = next(self.model.parameters()).device

        def on_event(event: dict) -> None:
            if event["type"] == "features":
                on_progress(event["done"], event["total"])
        features = frozen_features(self.config, {"texts": cleaned}, device, self.home, on_event,
                                   self.model.cut)["texts"]
        return StoredFeatures(self, cleaned, features)

    def attribute(self, text: str, label: str, steps: int, on_progress: Progress | None = None) -> Attribution:
        if reads_probabilities(self.model.pooling):  # statistics of the whole text: said in words, not per token
            return statistics_attribution(self.model, self.tokenizer, text, label)
        return integrated_gradients(self, self.gradient_path(), text, label, steps, on_progress)

    def gradient_path(self) -> GradientPath:
        """Word embeddings → encoder (frozen or not) → pooling → standardization → head: the logits over the
        real classes (GAN-BERT's fake logit left out), in fp32 for exact gradients."""
        k = len(self.labels)
        return GradientPath(self.tokenizer, self.config.max_len, self.model.encoder.get_input_embeddings(),
                            lambda embeds, mask: self.model.head_logits(self.model.encode(None, mask, embeds))[:, :k])


class StoredFeatures:
    """A frozen run's predictor over the features of a known set of texts (`NeuralPredictor.from_store`); texts
    come to `predict` cleaned, as `classify` cleans them."""

    def __init__(self, predictor: NeuralPredictor, texts: list[str], features: np.ndarray):
        self.predictor, self.features = predictor, features
        self.config, self.labels = predictor.config, predictor.labels
        self.rows = {text: i for i, text in enumerate(texts)}

    def predict(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        return self.predictor.predict_features(self.features[[self.rows[t] for t in texts]])


def without_cut_layers(state: dict[str, torch.Tensor], cut: int | None) -> dict[str, torch.Tensor]:
    """A checkpoint's weights without those of layers above `cut` (and a causal LM's final norm, which follows the
    last layer only): runs that trained a `layerN` pooling before encoders were cut at it saved every layer, and
    their checkpoints load into the cut model unchanged in what they predict."""
    if cut is None:
        return state

    def kept(key: str) -> bool:
        layer = LAYER_KEY.match(key)
        return not (layer and int(layer.group(1)) >= cut) and not key.startswith(FINAL_NORMS)
    return {k: v for k, v in state.items() if kept(k)}


class NeuralTrainer(Trainer):
    """The trainer of a method whose model is a `StudioModel`; defaults describe a linear head on the sentence
    representation."""

    def adapt_encoder(self, encoder: PreTrainedModel, config: TrainConfig, below: int) -> None:
        """Change the encoder before training (adapters go in here, above the `below` frozen layers of a top-K run);
        most methods leave it."""

    def build_head(self, config: TrainConfig, num_labels: int, feature_dim: int, hidden_size: int
                   ) -> tuple[nn.Module, nn.Module | None]:
        """The head over sentence representations, and a generator when the method has one."""
        return nn.Sequential(nn.Dropout(0.1), nn.Linear(feature_dim, num_labels)), None

    def probabilities(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Probabilities over the k real classes, and the fake-class probability when there is one."""
        return F.softmax(logits.float(), dim=-1), None

    def saved_state(self, model: StudioModel) -> dict[str, torch.Tensor]:
        """What the checkpoint holds: what prediction needs. Never the generator; with a frozen encoder no
        encoder either (it is the unchanged backbone)."""
        state = {k: v for k, v in model.state_dict().items() if not k.startswith("generator.")}
        if model.config.frozen:
            return {k: v for k, v in state.items() if not k.startswith("encoder.")}
        if model.cut.boundary:  # a top-K run: the layers below are the backbone's, unchanged
            trained = {f"encoder.{n}" for n, p in model.encoder.named_parameters() if p.requires_grad}
            return {k: v for k, v in state.items() if not k.startswith("encoder.") or k in trained}
        return state

    # ------------------------------------------------------------ the model and its checkpoint

    def inputs_for(self, model: StudioModel, job: Job) -> dict[str, object]:
        """Each split's inputs. Frozen features are standardized with the statistics of the labeled texts, the
        rows every frozen method reads (heads, LR and GAN-BERT alike, whatever its validation), so the methods
        compared see the same features, and no statistic comes from a row the run may not read."""
        inputs = model_inputs(job.config, job.data, job.device, job.home, job.on_event)
        if job.config.frozen:
            seen = np.asarray(inputs["pool"])[job.data.labeled]
            model.feature_mean.copy_(torch.from_numpy(seen.mean(0)))
            model.feature_std.copy_(torch.from_numpy(seen.std(0) + 1e-6))
            if hasattr(model, "class_means"):
                targets = job.data.targets[job.data.labeled]
                model.class_means.copy_(torch.from_numpy(np.stack([seen[targets == c].mean(0)
                                                                   for c in range(len(job.data.classes))])))
        return inputs

    def build_model(self, config: TrainConfig, labels: tuple[str, ...], device: torch.device, home: Path
                    ) -> StudioModel:
        """A fresh model: the local backbone's encoder (frozen, or changed by the method) and the head. The encoder
        stops at the layer its pooling reads (`cut_after`): layers above it are never built, run, trained or saved,
        a third of SmolLM2's 30 at its layer 20. A top-K run (`train_layers`) trains the top K layers of that cut
        alone, the rest frozen below its boundary (`split_at`)."""
        pooling = config.resolved_pooling
        backbone = config.resolved_backbone(home)
        cut = load_cut(backbone, device, reads_probabilities(pooling), last_layer(pooling))
        encoder = cut.model
        hidden = encoder.config.hidden_size
        feature_dim = feature_size(encoder.config, pooling)
        top = 0 if config.frozen else config.train_layers or 0
        if config.frozen:
            encoder.requires_grad_(False)
        else:  # its dropout trains with it: cheap masks, and attention dropout as the config says
            cheap_dropout(encoder, config.attention_dropout)
        self.adapt_encoder(encoder, config, cut.depth - top if 0 < top < cut.depth else 0)
        head, generator = self.build_head(config, len(labels), feature_dim, hidden)
        return StudioModel(config, labels, feature_dim, hidden, split_at(cut, top), head, backbone, generator
                           ).to(device)

    def save(self, model: StudioModel, folder: Path) -> None:
        description = {"config": json.loads(model.config.to_json()), "labels": list(model.labels),
                       "feature_dim": model.feature_dim, "hidden_size": model.hidden_size,
                       "backbone": model.backbone.describe()}
        write_checkpoint(folder, self.saved_state(model), description)

    def load(self, folder: Path, description: dict, home: Path, device: torch.device | str = "cpu"
             ) -> NeuralPredictor:
        """Rebuild the model from its description and load the weights (safetensors only); a packaged backbone is
        converted again under `home` where it is gone from there."""
        config = TrainConfig.from_json(json.dumps(description["config"]))
        prepare_backbone(config.backbone, config.revision, home=home)
        model = self.build_model(config, tuple(description["labels"]), torch.device(device), home)
        state = without_cut_layers(read_tensors(folder, device), model.cut.layers)
        _, unexpected = model.load_state_dict(state, strict=False)
        if unexpected:
            raise ValueError(f"checkpoint in {folder} has weights this model does not: {unexpected[:3]}")
        not_loaded = [k for k in self.saved_state(model) if k not in state]
        if not_loaded:
            raise ValueError(f"checkpoint in {folder} lacks weights: {not_loaded[:3]}")
        return NeuralPredictor(model.eval(), self, home)
