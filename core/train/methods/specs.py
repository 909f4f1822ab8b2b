"""What each method trained by optimizer steps is, said without torch: its names, options, defaults, budget, how it
settles a config and how long a run takes (the methods that fit their own way: `direct_specs.py`). The registry,
Compare, the time estimates and the CLI read these; `python -m core runs`
must not wait seconds for torch. Each method's trainer holds its spec and does the steps that need torch; the spec
hands `fit` and `load` to it (`Method.trainer`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from core.backbone import attention_dropout, pass_work
from core.backbone.facts import measured_budget
from core.backbone.packaged import PACKAGED
from core.calibration import measured
from core.train.catalog import CATALOG
from core.train.config import TrainConfig, cut_layers
from core.train.methods.base import Method
from core.train.methods.presets import (
    ATTENTION_DROPOUT,
    PAPER,
    STUDIO,
    authors_pooling,
    copies,
    paper,
    pooling_note,
    recipe_for,
)

# The machine's figures (`core/calibration.json`, each with the bench that measured it). Without the attention
# dropout's slowdown the `tf` preset's first G1 run on L2R, scaled from studio runs at 0, was estimated at 36 min and
# took 70 by its own clock; with it, 51. The rest is not modelled: its batches of 64 pad no more than 16's (256
# tokens against 255 at the longest, L2R's pool); once a run like it has finished, its seeds' estimates come from it.
CHECKPOINT_SLOWDOWN = measured("checkpoint_slowdown")
ATTENTION_DROPOUT_SLOWDOWN = measured("attention_dropout_slowdown")
FORWARD_SPEED = measured("forward_speed")
MINILM_TRAINING_SPEED = measured("minilm_training_speed")  # `StepSpec.cpu_speed`, the training costs' unit
MIN_VAL_PER_CLASS = 10  # below this, one text moves a class's F1 too far to rank checkpoints on


def not_learned(steps: int) -> str:
    """Why a run that never beat chance on validation is not a result about its method: the `tf` preset's 3
    epochs are 9 steps at 2e-5 on 25 labels, and score 0.234 on the real sample (chance 0.20)."""
    return (f"no evaluation beat chance on validation in {steps} steps: the model has not learned yet, so its "
            "scores say more about the budget than the method; more epochs or steps, or a higher learning rate, "
            "give it room")


class StepSpec(Method):
    """Supervised training of the head (and the encoder unless frozen) by AdamW steps."""

    selects = True
    top_layers = True
    # When the encoder trains: the best of bench/studies/defaults.py on the real M4 sample, 5 seeds. Averaged over 5 and
    # 20 labels per class, 2e-5 (the SemEval baseline's rate, the first default) 0.469 on seeds 0-1, 5e-5
    # (run_glue_no_trainer's, the second) 0.492 and 1e-4 0.503: level at 5/class (0.412 against 0.415), ahead at
    # 20/class (0.594 against 0.569; paired +0.025, about [-0.019, +0.069]).
    encoder_lr: ClassVar[float] = 1e-4
    frozen_lr: ClassVar[float] = 3e-3  # bench/studies/defaults.py: best of 3e-4, 1e-3 and 3e-3 for a frozen head
    frozen_batch_size: ClassVar[int] = 64
    # The default budget: at least this many steps (where the curves of bench/studies/convergence.py flatten at
    # 5 and 20 labels per class, and the best of bench/studies/defaults.py), and at least this many epochs when the
    # labeled set is large.
    min_steps_frozen: ClassVar[int] = 100
    min_steps_trained: ClassVar[int] = 150
    default_epochs: ClassVar[tuple[int, int]] = (10, 3)  # frozen, trained
    # Fallback throughputs (samples/s) for time estimates before any run finished: the encoder training, and a head
    # on cached features (`core/calibration.json`)
    cpu_speed: ClassVar[float] = MINILM_TRAINING_SPEED
    head_speed: ClassVar[float] = measured("frozen_head_speed")
    # Attention dropout while the encoder trains, where the user left it: 0 lets attention take its fused kernel
    # (1.4x a step at 256 tokens on 2 CPU cores, bench/speed/train.py --levers), and bench/studies/defaults.py found
    # accuracy level with the backbone's own rate ("fine-tuning attention dropout"). None keeps the backbone's rate.
    attention_dropout: ClassVar[float | None] = ATTENTION_DROPOUT

    def settle(self, config: TrainConfig) -> TrainConfig:
        """The method's attention dropout written in where the user left it and the encoder trains; and the steps
        measured for this backbone's top layers (`measured_budget`) where the user chose no budget, so the run's
        config says the budget it ran (a run at the same rate before the steps were measured read as one at them)."""
        config = super().settle(config)
        rate = self.attention_rate(config)
        if config.attention_dropout is None and not config.frozen and rate is not None:
            config = config.with_(attention_dropout=rate)
        measured = None if config.frozen else measured_budget(config.backbone, self.name, config.train_layers)
        if measured and measured.steps and config.steps is None and config.epochs is None:
            config = config.with_(steps=min(measured.steps, config.max_steps or measured.steps))
        return config

    def attention_rate(self, config: TrainConfig) -> float | None:
        """The attention dropout this method trains its encoder at by default (None: the backbone's own)."""
        return self.attention_dropout

    def attention_cost(self, config: TrainConfig) -> float:
        """A trained step's time against one at attention dropout 0: the rate the run asked for, else the method's,
        else the backbone's own (MiniLM's 0.1)."""
        rate = config.attention_dropout if config.attention_dropout is not None else self.attention_rate(config)
        if rate is None:
            rate = attention_dropout(config.backbone)
        return ATTENTION_DROPOUT_SLOWDOWN if rate > 0 else 1.0

    def learning_rate(self, config: TrainConfig) -> float:
        """The rate asked for; else the frozen head's, or the one measured for this backbone's top layers
        (`measured_budget`), or the method's own with the encoder training."""
        if config.lr or config.frozen:
            return config.lr or self.frozen_lr
        measured = measured_budget(config.backbone, self.name, config.train_layers)
        return measured.lr if measured else self.encoder_lr

    def batch_size(self, config: TrainConfig) -> int:
        return config.batch_size or (self.frozen_batch_size if config.frozen else 16)

    def epoch_rows(self, config: TrainConfig, labeled: np.ndarray, unlabeled: np.ndarray) -> np.ndarray:
        """Indices into the pool that one epoch iterates over: here the labeled rows only."""
        return labeled

    def rows_read(self, config: TrainConfig, idx: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The rows of a batch whose representations a step reads (all of them, unless the method has no use for
        some)."""
        return idx

    def epoch_size(self, config: TrainConfig, labeled: int, unlabeled: int) -> int:
        """How many rows `epoch_rows` gives, for budgets and estimates made before any data is loaded."""
        return labeled

    def read_share(self, config: TrainConfig, labeled: int, unlabeled: int) -> float:
        """The share of a batch's rows a step reads (`rows_read`), for estimates: here every row."""
        return 1.0

    def budget(self, config: TrainConfig, epoch_size: int) -> tuple[int, str]:
        """Optimizer steps for the run, and how they were chosen."""
        per_epoch = max(1, math.ceil(epoch_size / self.batch_size(config)))
        if config.steps:
            return config.steps, f"{config.steps} steps, as chosen ({config.steps / per_epoch:.3g} epochs)"
        if config.epochs:
            steps = config.epochs * per_epoch
            if config.max_steps and steps > config.max_steps:
                return config.max_steps, (f"{config.max_steps} steps: {config.epochs} epochs of {per_epoch} step(s), "
                                          f"capped at {config.max_steps} ({config.max_steps / per_epoch:.3g} epochs)")
            return steps, f"{config.epochs} epochs of {per_epoch} step(s)"
        floor = self.min_steps_frozen if config.frozen else self.min_steps_trained
        epochs = self.default_epochs[0 if config.frozen else 1]
        steps = max(floor, epochs * per_epoch)
        return steps, (f"{steps} steps: the default, the larger of {floor} steps and {epochs} epochs of {per_epoch} "
                       "step(s)")

    def step_sequences(self, config: TrainConfig) -> int | None:
        return None if config.frozen else self.batch_size(config)

    def seconds(self, config: TrainConfig, labeled: int, unlabeled: int, val: int, test: int,
                checkpointing: bool) -> float:
        """Training samples over the budget divided by throughput, plus the evaluations and the test pass."""
        steps, _ = self.budget(config, self.epoch_size(config, labeled, unlabeled))
        samples = (steps * min(self.batch_size(config), self.epoch_size(config, labeled, unlabeled))
                   * self.read_share(config, labeled, unlabeled))
        if config.frozen:
            return (samples + config.evaluations * val + test) / self.head_speed
        scale = config.max_len / 128
        runs, below = cut_layers(config)  # a top-K run trains and evaluates its top layers on stored states
        share = (runs - below) / runs if below else 1.0
        train = (samples / (self.cpu_speed / scale) * (CHECKPOINT_SLOWDOWN if checkpointing else 1.0)
                 * self.attention_cost(config) * self.training_cost(config) * share)
        forward = pass_work(config.backbone, config.resolved_pooling) * share
        return train + (config.evaluations * val + test) / (FORWARD_SPEED / scale) * forward

    def training_cost(self, config: TrainConfig) -> float:
        """A trained step's time on the run's backbone against this method's on MiniLM (`cpu_speed`): measured for a
        packaged backbone (`Packaged.costs`), else the backbone's layers × width² against MiniLM's."""
        entry = PACKAGED.get(str(config.backbone))
        measured = dict(entry.costs).get(self.name) if entry else None
        if measured is not None:
            return measured * self.cpu_speed / MINILM_TRAINING_SPEED
        return pass_work(config.backbone, config.resolved_pooling)


class FinetuneSpec(StepSpec):
    """BERT fine-tuning: the `StepSpec` defaults (the studio's measured ones), or the GAN-BERT paper's baseline
    (`finetune_preset` paper: `presets.PAPER`)."""

    name = "finetune"
    title = CATALOG[name].title

    def learning_rate(self, config: TrainConfig) -> float:
        return config.lr or (PAPER["lr"] if paper(config) else super().learning_rate(config))

    def batch_size(self, config: TrainConfig) -> int:
        return config.batch_size or (PAPER["batch_size"] if paper(config) else super().batch_size(config))

    def attention_rate(self, config: TrainConfig) -> float | None:
        """The paper's BERT keeps its own attention dropout (0.1)."""
        return None if paper(config) else super().attention_rate(config)

    def settle(self, config: TrainConfig) -> TrainConfig:
        """The paper preset trains the encoder for its 3 epochs on the pooled CLS, and reads the labeled rows alone:
        bert.py has no validation set, so a validation left at auto reads none."""
        if paper(config) and config.frozen:
            config = config.with_(frozen=False, features="hidden")
        config = super().settle(config)
        if not paper(config):
            return config
        budget = {"epochs": PAPER["epochs"]} if config.steps is None and config.epochs is None else {}
        rows = {"validation": "none", "selection": "auto"} if config.validation == "auto" else {}
        return config.with_(**budget, **rows,
                            pooling=config.pooling or authors_pooling(PAPER["pooling"], config.backbone))

    def settle_note(self, config: TrainConfig) -> str | None:
        if paper(config) and config.frozen:
            return ("the paper preset fine-tunes the encoder, as the paper's BERT baseline did, "
                    "so its runs are not frozen")
        return (paper(config) and pooling_note(config, "paper")) or super().settle_note(config)

    def budget(self, config: TrainConfig, epoch_size: int) -> tuple[int, str]:
        """The paper's epochs in steps as bert.py counts them: int(texts / batch x epochs), its batches whole."""
        if not (paper(config) and config.epochs and not config.steps and not config.max_steps):
            return super().budget(config, epoch_size)
        batch = self.batch_size(config)
        steps = max(1, int(epoch_size / batch * config.epochs))
        return steps, (f"{steps} steps: {config.epochs} epochs of {epoch_size} texts at batch {batch}, counted as "
                       f"bert.py counts them (int({epoch_size} / {batch} x {config.epochs}))")

    def display(self, config: TrainConfig) -> str:
        """With the encoder frozen nothing is fine-tuned: it is a head trained on frozen features."""
        return "Trained head on frozen features" if config.frozen else self.titled(config) + (
            ", paper preset" if paper(config) else "")

    def short(self, config: TrainConfig) -> str:
        return self.name + ("-paper" if paper(config) else "")


class AdapterSpec(StepSpec):
    name = "adapter"
    title = CATALOG[name].title
    encoder = "trained"  # the adapters sit inside the encoder's layers
    # AdapterHub's examples use 1e-4 on thousands of labels; on the real M4 sample's 25 and 96 labels it scored
    # 0.238 and 0.308 (seeds 0-1; chance 0.20), 3e-4 0.346 and 0.331, 3e-3 0.375 and 0.569 (seeds 0-4), and 1e-3
    # 0.391 and 0.594 (seeds 0-4; ahead of 3e-3 over both amounts on all 5). Houlsby et al. swept up to 3e-3;
    # bench/studies/defaults.py --mode full sweeps 1e-4 to 3e-3.
    encoder_lr = 1e-3
    cpu_speed = measured("adapter_training_speed")
    attention_dropout = None  # unmeasured for adapters: the backbone's own rate


class LoraSpec(StepSpec):
    """LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"): the encoder's weights stay fixed
    and each self-attention query and value matrix learns a rank-r update B·A, scaled by alpha / r; the head trains
    with it. The preset is the paper's GLUE recipe on RoBERTa-base: r 8, alpha 8, the query and value matrices,
    batch 16, AdamW at 4e-4 to 5e-4 (5e-4 here), no LoRA dropout. AdapterHub's `LoRAConfig` implements it on BERT's
    kin and Llama's (`adapter.Lora`). Its step on MiniLM is not measured apart: fine-tuning's `cpu_speed`."""

    name = "lora"
    title = CATALOG[name].title
    encoder = "trained"  # the low-rank updates sit inside the encoder's attention
    encoder_lr = 5e-4
    attention_dropout = None  # the backbone's own rate, as the paper trained RoBERTa


class GanBertSpec(StepSpec):
    """D (k+1 outputs) and G; labeled rows are repeated and shuffled with the unlabeled ones. How the steps are
    taken is the preset's (`presets.PRESETS`); `adversarial` off is the control: the same D, rows and budget
    with the supervised term alone."""

    name = "ganbert"
    uses_unlabeled = True  # D learns real vs fake from them
    title = CATALOG[name].title
    variants = CATALOG[name].variants
    reads_alone = ("unlabeled_limit",)

    def rows_read(self, config: TrainConfig, idx: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The control has no loss on unlabeled rows (it is L_sup alone), so it skips their encoder passes: the same
        steps and gradients (tests/test_faithful.py) at a fraction of the cost when the encoder trains."""
        return idx if config.params.adversarial else idx[targets[idx] >= 0]
    fake_class = True
    head_speed = measured("ganbert_head_speed")  # real rows/s at its frozen batch of 64, and as many fakes
    generators = {"noise": "G1 (noise)", "bow": "G2 (bag of words)"}

    def learning_rate(self, config: TrainConfig) -> float:
        return config.lr or recipe_for(config).lr or STUDIO[config.frozen]["lr"]

    def batch_size(self, config: TrainConfig) -> int:
        return config.batch_size or recipe_for(config).batch_size or STUDIO[config.frozen]["batch_size"]

    def attention_rate(self, config: TrainConfig) -> float | None:
        """The studio preset's measured rate; the authors' presets keep the backbone's own (their dropout)."""
        return STUDIO[False]["attention_dropout"] if config.params.gan_preset == "studio" else None

    def settle(self, config: TrainConfig) -> TrainConfig:
        """The preset's lr, batch, budget (in epochs, as both official codes count it), attention dropout and
        pooling, where the user left them; the control has no generator, so G1 and G2 controls are one run."""
        config = super().settle(config)  # lr and batch, from the preset's (`learning_rate`, `batch_size`)
        recipe = recipe_for(config)
        changes: dict = {}
        if config.steps is None and config.epochs is None:
            changes["epochs"] = recipe.epochs or STUDIO[config.frozen]["epochs"]
            if config.params.gan_preset == "studio" and config.max_steps is None:  # the budget rule (`presets.STUDIO`)
                changes["max_steps"] = STUDIO[config.frozen]["max_steps"]
        if config.pooling is None and recipe.pooling:
            changes["pooling"] = authors_pooling(recipe.pooling, config.backbone)
        if config.params.batches_without_labels is None and recipe.batches_without_labels is not None:
            changes["batches_without_labels"] = recipe.batches_without_labels
        if not config.params.adversarial:
            changes["generator"] = "noise"
        return config.with_(**changes)

    def settle_note(self, config: TrainConfig) -> str | None:
        preset = recipe_for(config).pooling == "pooled" and pooling_note(config, config.params.gan_preset)
        return preset or super().settle_note(config)

    def display(self, config: TrainConfig) -> str:
        game = self.generators[config.params.generator] if config.params.adversarial else "control (adversarial off)"
        preset = "" if config.params.gan_preset == "studio" else f", {config.params.gan_preset} preset"
        return f"GAN-BERT {game}{preset}" + (" on frozen features" if config.frozen else "")

    def ignored(self, variants: Mapping[str, Sequence]) -> set[str]:
        """The control alone (adversarial off and not on) trains no generator."""
        control_only = list(variants.get("adversarial", [True])) == [False]
        return super().ignored(variants) | ({"generator", "noise", "noise_dim"} if control_only else set())

    def label(self, frozen: bool) -> str:
        """Not one generator's name: which generators (and the control) run is chosen beside it."""
        return self.title + (" on frozen features" if frozen else "")

    def short(self, config: TrainConfig) -> str:
        return f"ganbert-{config.params.generator}" if config.params.adversarial else "ganbert-control"

    def starved(self, config: TrainConfig, unlabeled: int, labeled: int = 0) -> str | None:
        """The game's real texts are the unlabeled ones beside the labeled: a run with none (every train text labeled
        and no unlabeled set, as the GAN-BERT authors' 109 questions alone) plays it on its labeled texts only, and
        what it adds over its control is then no claim about unlabeled text; one with fewer unlabeled than labeled
        texts (a walk's 1 beside 64, at 50% of a small pool) is said to be far from the paper's setting (5,343
        beside 109). The control reads none anyway."""
        if not config.params.adversarial:
            return None
        if 0 < unlabeled < labeled:
            return (f"GAN-BERT reads {unlabeled:,} unlabeled text{'s' if unlabeled > 1 else ''} beside its {labeled:,} "
                    "labeled: the paper's gain rests on many more unlabeled texts than labeled (5,343 beside 109), so "
                    "what the game adds here says little about unlabeled text. A lower labeled amount or an unlabeled "
                    "set gives it more")
        if unlabeled:
            return None
        why = ("its unlabeled pool is set to 0" if config.unlabeled_limit == 0 else
               "every train text is labeled or validates, and the dataset has no unlabeled set")
        return (f"GAN-BERT reads no unlabeled text: {why}. Its discriminator has no real text but the labeled one to "
                "tell from the generator's, so the game has nothing to learn from. Load an unlabeled set (the Data "
                "page: a folder's unlabeled file, an unlabeled file, or train rows without a label; the CLI: "
                "--unlabeled or --unlabeled-rows)")

    def reports_fake(self, config: TrainConfig) -> bool:
        """The control never trains the fake logit, so its fake probability means nothing."""
        return config.params.adversarial

    def unlabeled_read(self, config: TrainConfig, available: int) -> int:
        """The control draws the same pool and learns from none of it."""
        return available if config.params.adversarial else 0

    def copies(self, config: TrainConfig, labeled: int, unlabeled: int) -> int:
        """How often an epoch repeats each labeled row (`presets.copies`)."""
        return copies(labeled, unlabeled, self.batch_size(config), config.params.batches_without_labels)

    def epoch_rows(self, config: TrainConfig, labeled: np.ndarray, unlabeled: np.ndarray) -> np.ndarray:
        """Each labeled row repeated (`copies`: by the labeled share of the whole pool, extra unlabeled texts
        included, and the floor on batches without labels), then every unlabeled row."""
        return np.concatenate([np.repeat(labeled, self.copies(config, len(labeled), len(unlabeled))), unlabeled])

    def epoch_size(self, config: TrainConfig, labeled: int, unlabeled: int) -> int:
        return labeled * self.copies(config, labeled, unlabeled) + unlabeled

    def read_share(self, config: TrainConfig, labeled: int, unlabeled: int) -> float:
        """The control reads a batch's labeled rows alone: its estimate had counted every row, and a 17-s control
        run read "1m 51s" left."""
        if config.params.adversarial:
            return 1.0
        return labeled * self.copies(config, labeled, unlabeled) / self.epoch_size(config, labeled, unlabeled)
