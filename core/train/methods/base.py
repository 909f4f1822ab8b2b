"""The interface of a training method. A method is a spec (`specs.py`: its names, defaults and budget, readable
without torch; its settings are its `params`) and a trainer, built around the spec with what needs torch,
registered by one line in `core.train.catalog`; the run driver, the CLI, the Train page, the sweep grid, Compare
and the checkpoint loader all go through the spec.

A trainer fits a model on a `Job` (the labeled rows, the same for every method with the same seed), returns its
test probabilities, writes its checkpoint, and loads that checkpoint again as a `Predictor`. Trainers of methods
trained by optimizer steps share one loop (`stepwise.StepTrainer`); the others (logistic regression, SetFit)
fit their own way. A trainer asks its spec (`self.spec`) what the method's settings mean: it is not one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from core.backbone import default_train_layers
from core.backbone.facts import named_causal
from core.train.catalog import CATALOG
from core.train.config import TrainConfig

if TYPE_CHECKING:  # annotations only: listing runs and comparing them must not import torch
    import torch

    from core.train.inputs import Event, Prepared


class Predictor(Protocol):
    """A loaded model: probabilities over its own labels (and GAN-BERT's fake class) for cleaned texts."""

    config: TrainConfig
    labels: tuple[str, ...]

    def predict(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray | None]: ...


@dataclass
class Job:
    """What a method's `fit` gets: the run's config and data, where its checkpoint goes, and the run's
    event and stop hooks."""

    config: TrainConfig
    data: Prepared
    checkpoint: Path
    device: torch.device
    home: Path  # the studio home: its stores and converted backbones
    on_event: Event = lambda e: None
    should_stop: Callable[[], bool] = lambda: False


@dataclass
class Fitted:
    """A fitted method's test probabilities over `data.labels`, its fake-class probabilities when it has
    one, and what the run record keeps of how it trained (steps, selection, validation metrics)."""

    test_probs: np.ndarray
    test_fake: np.ndarray | None = None
    record: dict = field(default_factory=dict)


class Cancelled(RuntimeError):
    """The run was asked to stop."""


class Diverged(RuntimeError):
    """Training went numerically wrong or collapsed onto one class; the message says which."""


# What a method trained by optimizer steps reads and a closed-form fit (logistic regression) never does.
STEP_OPTIONS = ("steps", "epochs", "max_steps", "selection", "evaluations", "lr", "batch_size", "patience", "warmup",
                "collapse_evals", "validation", "attention_dropout")


class Method:
    name: ClassVar[str]
    title: ClassVar[str]  # how Compare, the Train page and the CLI help name it
    variants: ClassVar[tuple[str, ...]] = ()  # settings a sweep crosses (GAN-BERT: generator, adversarial)
    reads_alone: ClassVar[tuple[str, ...]] = ()  # shared settings no other method reads (GAN-BERT's unlabeled pool)
    fake_class: ClassVar[bool] = False  # a k+1-th "fake" output (GAN-BERT)
    ignores: ClassVar[tuple[str, ...]] = ()  # TrainConfig options its runs never read
    reference: ClassVar[bool] = False  # a converged baseline Compare draws as the floor to clear
    encoder: ClassVar[str] = "either"  # frozen | trained | either | none: what it does with the backbone
    uses_unlabeled: ClassVar[bool] = False  # reads unlabeled rows (so a frozen run encodes them)
    selects: ClassVar[bool] = False  # selects a checkpoint on validation labels; a method that does not reads none
    default_c: ClassVar[float] = 1.0  # a logistic-regression head's C, for methods that fit one (`lr_c`)
    top_layers: ClassVar[bool] = False  # may train only the encoder's top K layers (`train_layers`)

    # ------------------------------------------------------------ settings

    @property
    def options(self) -> tuple[str, ...]:
        """The settings only this method reads: its own (the catalog's `params`) and shared ones it alone reads."""
        return (*CATALOG[self.name].params.names(), *self.reads_alone)

    def settle(self, config: TrainConfig) -> TrainConfig:
        """The config as this method runs it: a frozen-only method is frozen; one that trains inside the
        encoder (adapters, SetFit) or has none is not, so a frozen-mode grid still runs it. A logistic
        regression's C, and the learning rate and batch the method picks, are written in where the user left
        them: a run's config says what it ran, and a later change of a default cannot re-read an older run."""
        if "lr_c" in self.options and config.params.lr_c is None:
            config = config.with_(lr_c=self.default_c)
        if self.encoder == "frozen" and not config.frozen:
            config = config.with_(frozen=True)
        if self.encoder in ("trained", "none") and config.frozen:  # token probabilities are frozen features
            config = config.with_(features="hidden", frozen=False)
        if not self.selects and config.validation != "none":  # it would read labels it never uses
            config = config.with_(validation="none", selection="auto")
        if config.frozen or not self.top_layers:  # no layer trains, or every one does: as every run before top-K
            config = config.with_(train_layers=0)
        elif config.train_layers is None:
            config = config.with_(train_layers=default_train_layers(config.backbone))
        return config.with_(lr=self.learning_rate(config), batch_size=self.batch_size(config))

    def learning_rate(self, config: TrainConfig) -> float | None:
        """The rate the method trains at; None for a method with no gradient steps."""
        return config.lr

    def batch_size(self, config: TrainConfig) -> int | None:
        """The rows (or pairs) per step; None for a method with no gradient steps."""
        return config.batch_size

    def settle_note(self, config: TrainConfig) -> str | None:
        """What `settle` changed in a config the user chose, said in one line, or None."""
        if config.frozen and self.encoder == "trained":
            return (f"{self.title} trains inside the encoder, so its runs are not frozen"
                    + (" and read hidden states alone" if config.features != "hidden" else ""))
        return None

    def starved(self, config: TrainConfig, unlabeled: int, labeled: int = 0) -> str | None:
        """Why a run of `config` reading `unlabeled` unlabeled texts beside `labeled` labeled ones cannot do what
        the method is for, or None: a method whose idea rests on unlabeled text (GAN-BERT's game) says so when it
        has none, or fewer than labeled."""
        return None

    def reports_fake(self, config: TrainConfig) -> bool:
        """Whether the run's fake-class probability means something (GAN-BERT's, but not its control's)."""
        return self.fake_class

    def unlabeled_read(self, config: TrainConfig, available: int) -> int:
        """Of `available` unlabeled texts, how many a run learns from (said before launch)."""
        return available if self.uses_unlabeled else 0

    def display(self, config: TrainConfig) -> str:
        """The line a run belongs to in comparisons."""
        return self.titled(config) + (" on frozen features" if config.frozen and self.encoder == "either" else "")

    def titled(self, config: TrainConfig) -> str:
        """Its title, less the BERT it names on a backbone that is no BERT: a run on SmolLM2 had been called "BERT
        fine-tuning" ("Fine-tuning · SmolLM2" now; the backbone follows in the run's name)."""
        if not (self.title.startswith("BERT ") and config.backbone and named_causal(config.backbone)):
            return self.title
        bare = self.title.removeprefix("BERT ").removeprefix("+ ")
        return bare[0].upper() + bare[1:]

    def ignored(self, variants: Mapping[str, Sequence]) -> set[str]:
        """The options its runs do not read, with these values of the sweep's variants chosen."""
        return set(self.ignores)

    def label(self, frozen: bool) -> str:
        """The method's name before its variants are chosen (the Train page's list and option headings)."""
        return self.display(TrainConfig(method=self.name, frozen=frozen))

    def short(self, config: TrainConfig) -> str:
        """A short name for run labels, such as 'ganbert-noise'."""
        return self.name

    def step_sequences(self, config: TrainConfig) -> int | None:
        """The texts one training step runs through the encoder with gradients, which bound its memory
        (`core.train.memory`); None when no encoder trains."""
        return None

    def seconds(self, config: TrainConfig, labeled: int, unlabeled: int, val: int, test: int,
                checkpointing: bool) -> float:
        """Estimated wall time of one run before it starts at laptop-CPU speeds; `checkpointing`: its encoder
        recomputes activations in the backward pass, which slows its training steps."""
        raise NotImplementedError

    # ------------------------------------------------------------ fitting and loading

    def trainer(self) -> Trainer:
        """The method's trainer (the catalog's `trainer`) around this spec, imported on first use: it brings torch."""
        return class_at(CATALOG[self.name].trainer)(self)

    def fit(self, job: Job) -> Fitted:
        """Train on the job's rows (the trainer's work)."""
        return self.trainer().fit(job)

    def load(self, folder: Path, description: dict, home: Path, device: torch.device | str = "cpu") -> Predictor:
        """The checkpoint in `folder`, ready to predict, its backbone and stores under the studio `home` (the
        trainer's work)."""
        return self.trainer().load(folder, description, home, device)


class Trainer:
    """What fits and loads a method's model, around its spec: the spec says what the run's settings mean (its rate,
    batch, budget, the rows an epoch reads), the trainer does the work that needs torch."""

    def __init__(self, spec: Method):
        self.spec = spec

    def fit(self, job: Job) -> Fitted:
        raise NotImplementedError

    def load(self, folder: Path, description: dict, home: Path, device: torch.device | str = "cpu") -> Predictor:
        raise NotImplementedError


def class_at(where: str) -> type:
    """A class from the catalog's "module:Class" (a spec or a trainer)."""
    module, cls = where.split(":")
    return getattr(importlib.import_module(module), cls)
