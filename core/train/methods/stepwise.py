"""Methods trained by optimizer steps, and their one loop.

A run's length is a number of optimizer steps, whatever an epoch holds: at 5 labels per class a head's
epoch is one step, so budgets counted in epochs measured the budget, not the method. `fit` reads top to
bottom like nanoGPT's train.py: model and inputs → the selection rule → the budget → the loop (each
step is the method's) → evaluations, selection, early stopping → the test set once, with the kept
checkpoint. Nothing here depends on which method runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import get_linear_schedule_with_warmup

from core.train.config import TrainConfig
from core.train.inputs import Prepared, Representer, bucketed_batches
from core.train.memory import bound_memory
from core.train.methods.base import Cancelled, Diverged, Fitted, Job
from core.train.methods.neural import NeuralTrainer
from core.train.methods.specs import MIN_VAL_PER_CLASS, not_learned
from core.train.metrics import classification_metrics
from core.train.model import StudioModel
from core.train.optim import Step, adamw, encoder_and_head, trained_named


def selection_rule(config: TrainConfig, data: Prepared) -> tuple[str, str]:
    """Which checkpoint a run keeps, and why: the user's choice, or for `auto` the best on validation
    unless validation is too small to rank checkpoints, then the last."""
    if not len(data.val):
        return "last", "last checkpoint: the run reads no validation labels, so it trains to its budget"
    if config.selection != "auto":
        return config.selection, f"{config.selection} checkpoint, as chosen"
    targets = data.val_targets()
    smallest = int(np.bincount(targets[targets >= 0], minlength=len(data.classes)).min())
    if smallest < MIN_VAL_PER_CLASS:
        return "last", (f"last checkpoint: validation holds {smallest} text(s) of its smallest class, fewer than "
                        f"{MIN_VAL_PER_CLASS}, too few to rank checkpoints, so the run trains to its budget")
    return "best", f"best validation macro-F1 (validation holds at least {smallest} texts per class)"


def endless_batches(rows: np.ndarray, lengths: np.ndarray, batch_size: int, rng: np.random.Generator
                    ) -> Iterator[np.ndarray]:
    """Pool indices batch after batch, epoch after epoch, reshuffled every epoch."""
    while True:
        for batch in bucketed_batches(lengths[rows], batch_size, rng):
            yield rows[batch]


@torch.no_grad()
def predict_split(model: StudioModel, method: StepTrainer, rep: Representer, split: str, batch_size: int,
                  should_stop: Callable[[], bool] = lambda: False) -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities over the model's classes and, for a method with one, the fake-class probability. A stop
    asked for lands between batches: a SIGTERM to a bench waited out a whole evaluation pass of SmolLM2 (>35 s)."""
    model.eval()
    n = len(rep.lengths(split))
    order = np.argsort(rep.lengths(split), kind="stable")
    probs = np.zeros((n, len(model.labels)), dtype=np.float32)
    fake = np.zeros(n, dtype=np.float32)
    for start in range(0, n, batch_size * 2):
        if should_stop():
            raise Cancelled("cancelled by request")
        idx = order[start:start + batch_size * 2]
        real, fake_part = method.probabilities(model.head_logits(rep(split, idx)))
        probs[idx] = real.cpu().numpy()
        if fake_part is not None:
            fake[idx] = fake_part.cpu().numpy()
    model.train()
    return probs, fake


@dataclass(frozen=True)
class Evaluation:
    predicted: np.ndarray  # label ids of the validation texts
    val: dict  # validation metrics
    fake_share: float | None  # mean fake probability of real validation texts (GAN-BERT)
    labels: tuple[str, ...]


class Tally:
    """The losses since the last evaluation, and the training speed."""

    def __init__(self):
        self.sums, self.since, self.samples = {}, 0, 0
        self.started = time.perf_counter()

    def add(self, step: int, losses: dict[str, float], samples: int) -> None:
        for name, value in losses.items():
            if not math.isfinite(value):
                raise Diverged(f"the {name} loss became {value} at step {step}")
            self.sums[name] = self.sums.get(name, 0.0) + value
        self.samples, self.since = self.samples + samples, self.since + 1

    def losses_since_last(self) -> dict[str, float]:
        means = {k: v / self.since for k, v in self.sums.items()}
        self.sums, self.since = {}, 0
        return means

    @property
    def speed(self) -> float:
        elapsed = time.perf_counter() - self.started
        return self.samples / elapsed if elapsed else 0.0


class Selection:
    """What the evaluations decide: the checkpoint kept (`best` on validation macro-F1, or the last), early
    stopping after `patience` evaluations without a better one, and the collapse guard."""

    def __init__(self, rule: str, config: TrainConfig, per_epoch: int):
        self.rule, self.per_epoch = rule, per_epoch
        self.patience, self.collapse_evals = config.patience, config.collapse_evals
        self.best_f1, self.best_state, self.stale, self.collapsed, self.evaluations = -1.0, None, 0, 0, 0
        self.learned = False  # whether an evaluation so far beat chance with two classes or more
        self.last = Evaluation(np.zeros(0, int), {}, None, ())

    def judge(self, step: int, evaluation: Evaluation, model: StudioModel, method: StepTrainer, checkpoint: Path
              ) -> bool:
        """Take one evaluation: keep the checkpoint when it is the best so far (rule `best`), and raise
        Diverged when a model that had learned (validation accuracy above chance, over two classes or more)
        falls onto one class for `collapse_evals` evaluations in a row, counted from the second epoch. A model
        that never beat chance has not collapsed but not yet learned: the `tf` preset's 9 steps at 2e-5 on 25
        labels are such a run (11 of 12 validation texts one class at step 1, all 12 from step 4, the
        supervised loss at ln 5 throughout), and its result belongs in the table. Returns whether it improved."""
        self.evaluations, self.last = self.evaluations + 1, evaluation
        one_class = len(np.unique(evaluation.predicted)) == 1
        self.collapsed = self.collapsed + 1 if step > self.per_epoch and one_class and self.learned else 0
        chance = 1 / len(evaluation.labels)
        self.learned = self.learned or not one_class and evaluation.val["accuracy"] > chance
        improved = evaluation.val["macro_f1"] > self.best_f1
        if improved:
            self.best_f1, self.stale = evaluation.val["macro_f1"], 0
            if self.rule == "best":
                self.best_state = {k: v.detach().clone() for k, v in method.saved_state(model).items()}
                method.save(model, checkpoint)
        else:
            self.stale += 1
        if self.collapsed >= self.collapse_evals:
            only = evaluation.labels[int(evaluation.predicted[0])]
            raise Diverged(f"collapsed: every validation prediction was '{only}' for {self.collapsed} evaluations "
                           "in a row")
        return improved

    def stop_early(self) -> bool:
        return self.rule == "best" and self.stale >= self.patience

    def restore(self, model: StudioModel, method: StepTrainer, checkpoint: Path) -> None:
        """The kept checkpoint into the model for the test: the best one, or the last (saved now)."""
        if self.rule == "last":
            method.save(model, checkpoint)
        else:
            model.load_state_dict(self.best_state, strict=False)


class StepTrainer(NeuralTrainer):
    """Supervised training of the head (and the encoder unless frozen) by AdamW steps: the loop every
    step-trained method shares, around its spec (a `StepSpec`: rate, batch, budget, the rows an epoch reads)."""

    def start(self, model: StudioModel, config: TrainConfig, data: Prepared, total_steps: int) -> Step:
        """Set up optimizers (and anything else the steps need) and return one optimizer step."""
        params = encoder_and_head(model)
        eps, decay_norms = self.adamw_options(config)
        opt = adamw(trained_named(model), self.spec.learning_rate(config), eps, decay_norms)
        schedule = get_linear_schedule_with_warmup(opt, int(config.warmup * total_steps), total_steps)

        def step(rep: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
            loss = F.cross_entropy(model.head_logits(rep), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            schedule.step()
            return {"loss": loss.item()}
        return step

    def adamw_options(self, config: TrainConfig) -> tuple[float, bool]:
        """AdamW's epsilon, and whether LayerNorm weights and biases are decayed too (torch's default; BERT's own
        optimizer leaves them out)."""
        return 1e-8, True

    # ------------------------------------------------------------ the loop

    def fit(self, job: Job) -> Fitted:
        config, data, device, on_event = job.config, job.data, job.device, job.on_event
        rng = np.random.default_rng(config.seed)
        # -- model and inputs
        model = self.build_model(config, data.labels, device, job.home)
        rep = Representer(model, self.inputs_for(model, job), config, device, job.home)
        rep.prepare({"pool": data.labeled, "val": np.arange(len(data.val)), "test": np.arange(len(data.dataset.test))},
                    on_event)
        sequences = self.spec.step_sequences(config)
        memory = sequences and bound_memory(model.encoder, sequences, config.max_len, device,
                                            model.cut.trained_layers if model.cut.boundary else None)
        if memory:
            on_event({"type": "status", "message": memory.message()})
        rule, why = selection_rule(config, data)
        on_event({"type": "status", "message": f"selection: {why}"})

        # -- the budget, what an epoch iterates over, and the method's optimizer step
        rows = self.spec.epoch_rows(config, data.labeled, data.unlabeled)
        batch_size = self.spec.batch_size(config)
        total_steps, budget = self.spec.budget(config, len(rows))
        on_event({"type": "status", "message": f"budget: {budget}"})
        eval_every = max(1, math.ceil(total_steps / config.evaluations))
        step_once = self.start(model, config, data, total_steps)
        batches = endless_batches(rows, rep.lengths("pool"), batch_size, rng)
        selection = Selection(rule, config, per_epoch=max(1, math.ceil(len(rows) / batch_size)))
        tally = Tally()

        # -- loop: optimizer steps, and every `eval_every` an evaluation that selects
        model.train()
        for step in range(1, total_steps + 1):
            if job.should_stop():
                raise Cancelled("cancelled by request")
            idx = next(batches)
            read = self.spec.rows_read(config, idx, data.targets)  # no encoder pass for rows a step has no use for
            reps = rep("pool", read) if len(read) else None
            tally.add(step, step_once(reps, torch.from_numpy(data.targets[read]).to(device)), len(idx))
            if step % 10 == 0 or step in (1, total_steps):
                on_event({"type": "progress", "step": step, "total_steps": total_steps, "samples_per_s": tally.speed})
            if step % eval_every and step != total_steps:
                continue
            if not len(data.val):  # nothing to validate on: the losses alone, and the run trains to its budget
                selection.evaluations += 1
                on_event({"type": "evaluation", "index": selection.evaluations, "step": step,
                          "total_steps": total_steps, "losses": tally.losses_since_last(), "val": None,
                          "val_fake_prob": None, "best": False, "samples_per_s": tally.speed})
                continue
            evaluation = self.evaluate(model, rep, data, batch_size, config, job.should_stop)
            improved = selection.judge(step, evaluation, model, self, job.checkpoint)
            fake = evaluation.fake_share
            on_event({"type": "evaluation", "index": selection.evaluations, "step": step, "total_steps": total_steps,
                      "losses": tally.losses_since_last(), "val": evaluation.val, "val_fake_prob": fake,
                      "best": improved and rule == "best", "samples_per_s": tally.speed})
            if fake is not None and fake > 0.5:
                on_event({"type": "status", "message": f"warning: the discriminator calls real validation texts "
                                                       f"fake (mean fake probability {fake:.2f} > 0.5)"})
            if selection.stop_early():
                on_event({"type": "status", "message": f"early stop at step {step}: no better validation "
                                                       f"macro-F1 for {selection.stale} evaluations"})
                break

        if len(data.val) and not selection.learned:
            on_event({"type": "status", "message": f"warning: {not_learned(step)}"})

        # -- test once, with the kept checkpoint
        selection.restore(model, self, job.checkpoint)
        probs, fake = predict_split(model, self, rep, "test", batch_size, job.should_stop)
        record = {"steps": step, "budget_steps": total_steps, "budget": budget, "selection": rule,
                  "selection_reason": why, "evaluations": selection.evaluations,
                  "best_val_macro_f1": selection.best_f1 if len(data.val) else None,
                  "val": {k: selection.last.val.get(k) for k in ("accuracy", "macro_f1", "mcc")} if len(data.val)
                  else None,
                  "val_fake_prob": selection.last.fake_share,
                  "learned": selection.learned if len(data.val) else None,  # without validation, no one can tell
                  "samples_per_s": tally.speed,
                  "gradient_checkpointing": bool(memory and memory.checkpointing)}
        return Fitted(probs, fake if self.spec.reports_fake(config) else None, record)

    def evaluate(self, model: StudioModel, rep: Representer, data: Prepared, batch_size: int,
                 config: TrainConfig, should_stop: Callable[[], bool] = lambda: False) -> Evaluation:
        """The validation metrics now, and how much the discriminator calls real validation texts fake."""
        probs, fake = predict_split(model, self, rep, "val", batch_size, should_stop)
        predicted = data.classes[probs.argmax(1)]
        val = classification_metrics(data.val_labels(), predicted, data.dataset.labels)
        fake_share = float(fake.mean()) if self.spec.reports_fake(config) and len(fake) else None
        return Evaluation(predicted, val, fake_share, data.dataset.labels)
