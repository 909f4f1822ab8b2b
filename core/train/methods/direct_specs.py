"""What each method that fits its own way is, said without torch (SetFit's contrastive pairs, the logistic-regression
references): names, options, defaults, budget and how long a run takes; the step-trained methods are in `specs.py`."""

from __future__ import annotations

import math

from core.calibration import measured
from core.train.catalog import CATALOG
from core.train.config import TrainConfig
from core.train.methods.base import STEP_OPTIONS, Method
from core.train.methods.specs import CHECKPOINT_SLOWDOWN, FORWARD_SPEED

SETFIT_CPU_MAX_STEPS = 100  # SetFit's default budget's cap without a GPU: ~6 min at 3.5 s a step (128 tokens)


class SetFitSpec(Method):
    name = "setfit"
    title = CATALOG[name].title
    encoder = "trained"
    uses_unlabeled = True  # up to `STAT_ROWS` of them join the head's standardization statistics
    ignores = ("validation", "train_layers")  # it trains to its budget, as published; its body trains whole
    STAT_ROWS = 1000  # unlabeled rows that join the labeled ones for the standardization statistics

    def unlabeled_read(self, config: TrainConfig, available: int) -> int:
        return min(available, self.STAT_ROWS)

    def display(self, config: TrainConfig) -> str:
        return self.title + (" (published head)" if config.params.setfit_features == "sentence" else "")

    def short(self, config: TrainConfig) -> str:
        return self.name + ("-sentence" if config.params.setfit_features == "sentence" else "")

    def batch_size(self, config: TrainConfig) -> int:
        return config.batch_size or 16  # pairs per step, SetFit's default

    def learning_rate(self, config: TrainConfig) -> float:
        return config.lr or 2e-5  # SetFit's default body learning rate

    def budget(self, config: TrainConfig, labeled: int, gpu: bool) -> tuple[int, str]:
        pairs = config.params.setfit_iterations * 2 * labeled
        per_pass = max(1, math.ceil(pairs / self.batch_size(config)))
        if config.steps:
            return config.steps, f"{config.steps} steps of {self.batch_size(config)} pairs, as chosen"
        if config.epochs:
            return config.epochs * per_pass, f"{config.epochs} passes over {pairs} pairs, as chosen"
        if gpu or per_pass <= SETFIT_CPU_MAX_STEPS:
            return per_pass, f"{per_pass} steps: {config.params.setfit_iterations} pairs per labeled text, once"
        return SETFIT_CPU_MAX_STEPS, (f"{SETFIT_CPU_MAX_STEPS} steps: the CPU cap on {per_pass} "
                                      f"({config.params.setfit_iterations} pairs per labeled text)")

    def step_sequences(self, config: TrainConfig) -> int:
        return 2 * self.batch_size(config)  # both texts of each pair

    def seconds(self, config: TrainConfig, labeled: int, unlabeled: int, val: int, test: int,
                checkpointing: bool) -> float:
        """At CPU speeds, with the CPU's budget unless the run asked for the GPU."""
        steps, _ = self.budget(config, labeled, config.device == "cuda")
        scale = config.max_len / 128
        pairs_per_s = measured("setfit_pair_speed") / scale
        train = steps * self.batch_size(config) / pairs_per_s * (CHECKPOINT_SLOWDOWN if checkpointing else 1.0)
        return train + (labeled + val + test) / (FORWARD_SPEED / scale)


class FeaturesLRSpec(Method):
    """Logistic regression on the cached frozen features of the run's backbone, pooling and max length."""

    name = "features-lr"
    title = CATALOG[name].title
    ignores = (*STEP_OPTIONS, "train_layers")
    reference = True
    encoder = "frozen"
    default_c = 10.0  # bench/studies/defaults.py: best of 0.1, 1, 10 and 100 at 5 and 20 labels per class

    def seconds(self, config: TrainConfig, labeled: int, unlabeled: int, val: int, test: int,
                checkpointing: bool) -> float:
        return measured("features_lr_base_seconds") + labeled / measured("features_lr_texts_speed")


FIT_PER_TEXT_AND_CLASS = measured("tfidf_fit_per_text_and_class")  # s, per labeled text and class


class TfidfLRSpec(Method):
    """TF-IDF word and character n-grams (vocabulary and IDF from the labeled texts) with logistic regression."""

    name = "tfidf-lr"
    title = CATALOG[name].title
    # no backbone: a walk's TF-IDF runs were named and grouped apart by the backbone the grid chose for the others
    ignores = (*STEP_OPTIONS, "max_len", "pooling", "device", "precision", "backbone", "encoder_engine", "features",
               "pool_layer", "train_layers")
    reference = True
    encoder = "none"
    default_c = 100.0  # bench/studies/defaults.py: best of 1, 10 and 100 at 5 and 20 labels per class

    def seconds(self, config: TrainConfig, labeled: int, unlabeled: int, val: int, test: int,
                checkpointing: bool) -> float:
        """Past a few classes the fit grows with the labeled texts times the classes: 2,000 classes of 2 texts took
        35 s to fit, where a model of the texts alone had said 3 s (and 5,000 "under a minute" for 330 s). The
        classes are told from a per-class amount."""
        classes = labeled // config.per_class if config.per_class else 0
        return (measured("tfidf_base_seconds") + (labeled + val + test) / measured("tfidf_texts_speed")
                + FIT_PER_TEXT_AND_CLASS * labeled * classes)
