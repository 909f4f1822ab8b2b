"""Training: one loop for every method behind `train(config, run_dir, on_event)`.

Reads top to bottom like nanoGPT's train.py: device and seed → data → labeled subset → model →
batches → the loop (finetune/adapter step, or GAN-BERT's separate D and G steps) → evaluation,
early stopping and checkpoints → the test set once, with the best checkpoint.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from transformers import get_linear_schedule_with_warmup

from core.backbone import load_tokenizer, pick_device
from core.config import TrainConfig
from core.data import UNLABELED, Dataset, load_dataset, sample_labeled, with_cleaning
from core.features import cached_features
from core.metrics import classification_metrics
from core.models.classifier import StudioModel, build_model, load_model
from core.models.ganbert import BowGenerator, gan_losses, preset_sizes, repeats_for
from core.errors import InputError
from core.paths import atomic_write_parquet, atomic_write_text, studio_home

Event = Callable[[dict], None]
CHECKPOINT = "checkpoint"
PREDICTIONS = "test_predictions.parquet"
VAL_SEED = 0  # the validation carve is the same for every run seed, so runs compare on one split


class Diverged(RuntimeError):
    """Training went numerically wrong or collapsed onto one class; the message says which."""


class Cancelled(RuntimeError):
    """The run was asked to stop."""


@dataclass
class Prepared:
    """Everything the loop needs, built once: data split into labeled and unlabeled, inputs per split."""

    dataset: Dataset
    labeled: np.ndarray  # indices into the pool that keep their labels
    unlabeled: np.ndarray  # indices into the pool used without labels
    pool_labels: np.ndarray
    inputs: dict[str, object]  # per split: feature matrix (frozen) or token id lists
    fraction: float  # labeled share of the train pool (also when given per class)


# ---------------------------------------------------------------- data

def load_data(config: TrainConfig) -> Dataset:
    ds = with_cleaning(load_dataset(config.data, config.val_fraction, VAL_SEED), config.cleaning)
    if ds.test is None:
        raise InputError("a training run needs a test split; add a test file")
    return ds


def prepare(config: TrainConfig, ds: Dataset, model: StudioModel, on_event: Event) -> Prepared:
    """Split the train pool into labeled and unlabeled rows and build each split's inputs.

    Unlabeled rows get label -1 here, so no later step can read a label the run is not meant to have.
    """
    pool_frame = ds.train if ds.unlabeled is None else pd.concat([ds.train, ds.unlabeled], ignore_index=True)
    n_train = len(ds.train)
    train_labels = ds.train["label"].to_numpy()
    mask = sample_labeled(train_labels, config.fraction, config.per_class, config.seed)
    labeled = np.flatnonzero(mask)
    unlabeled = np.concatenate([np.flatnonzero(~mask), np.arange(n_train, len(pool_frame))])
    pool_labels = np.full(len(pool_frame), UNLABELED)
    pool_labels[labeled] = train_labels[labeled]
    texts = {"pool": pool_frame["text"].tolist(), "val": ds.val["text"].tolist(), "test": ds.test["text"].tolist()}

    if config.frozen:
        on_event({"type": "status", "message": "encoding texts with the frozen backbone (cached for later runs)"})
        inputs: dict[str, object] = cached_features(
            texts, config.backbone, ds.fingerprint, config.max_len, config.resolved_pooling,
            studio_home() / "features", config.device, config.bf16,
            on_progress=lambda done, total: on_event({"type": "features", "done": done, "total": total}))
        pool = inputs["pool"]
        model.feature_mean.copy_(torch.from_numpy(pool.mean(0)))
        model.feature_std.copy_(torch.from_numpy(pool.std(0) + 1e-6))
    else:
        tokenizer = load_tokenizer(config.backbone)
        inputs = {k: tokenizer(v, truncation=True, max_length=config.max_len, verbose=False)["input_ids"]
                  for k, v in texts.items()}
    return Prepared(ds, labeled, unlabeled, pool_labels, inputs, float(mask.mean()))


def bucketed_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator,
                     bucket: int = 50) -> list[np.ndarray]:
    """Shuffle, sort by length inside chunks of `bucket` batches, cut, shuffle the batches: batches of
    similar lengths pad little, and the order still changes every epoch."""
    order = rng.permutation(len(lengths))
    batches = []
    for start in range(0, len(order), batch_size * bucket):
        chunk = order[start:start + batch_size * bucket]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def pad_batch(ids: list[list[int]], pad_id: int, device: torch.device, pad_to: int | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad to the longest row (dynamic padding) or to `pad_to`; the mask comes from the true lengths."""
    width = pad_to or max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, :len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, :len(row)] = 1
    return input_ids.to(device), mask.to(device)


class Representer:
    """Turns row indices of a split into sentence representations (features or an encoder pass)."""

    def __init__(self, model: StudioModel, prepared: Prepared, config: TrainConfig, device: torch.device):
        self.model, self.inputs, self.config, self.device = model, prepared.inputs, config, device
        self.pad_id = load_tokenizer(config.backbone).pad_token_id
        self.features = {k: torch.from_numpy(np.asarray(v)) for k, v in self.inputs.items()} if config.frozen else {}

    def lengths(self, split: str) -> np.ndarray:
        if self.config.frozen:
            return np.zeros(len(self.features[split]))
        return np.array([len(x) for x in self.inputs[split]])

    def __call__(self, split: str, idx: np.ndarray) -> torch.Tensor:
        if self.config.frozen:
            return self.model.standardize(self.features[split][idx].to(self.device))
        ids, mask = pad_batch([self.inputs[split][i] for i in idx], self.pad_id, self.device)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.config.bf16):
            return self.model.encode(ids, mask).float()


# ---------------------------------------------------------------- evaluation

@torch.no_grad()
def predict_split(model: StudioModel, rep: Representer, split: str, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities (k real classes renormalised) and, for GAN-BERT, the fake-class probability."""
    model.eval()
    n = len(rep.lengths(split))
    order = np.argsort(rep.lengths(split), kind="stable")
    probs = np.zeros((n, len(model.labels)), dtype=np.float32)
    fake = np.zeros(n, dtype=np.float32)
    for start in range(0, n, batch_size * 2):
        idx = order[start:start + batch_size * 2]
        p = F.softmax(model.head_logits(rep(split, idx)).float(), dim=-1).cpu().numpy()
        if model.has_fake_class:
            fake[idx] = p[:, -1]
            p = p[:, :-1] / p[:, :-1].sum(1, keepdims=True).clip(1e-12)
        probs[idx] = p
    model.train()
    return probs, fake


def evaluate(model: StudioModel, rep: Representer, split: str, y_true: np.ndarray, batch_size: int) -> dict:
    probs, _ = predict_split(model, rep, split, batch_size)
    return classification_metrics(y_true, probs.argmax(1), model.labels)


# ---------------------------------------------------------------- the loop

def train(config: TrainConfig, run_dir: Path, on_event: Event = lambda e: None,
          should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Train, keep the best validation checkpoint in `run_dir/checkpoint`, return final test metrics.

    Raises Diverged (NaN/inf loss, or collapse onto one class) and Cancelled; the caller records them.
    """
    # -- device and seed
    device = pick_device(config.device)
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    random.seed(config.seed)
    rng = np.random.default_rng(config.seed)
    run_dir.mkdir(parents=True, exist_ok=True)

    # -- data and model
    ds = load_data(config)
    model = build_model(config, ds.labels, device)
    prepared = prepare(config, ds, model, on_event)
    rep = Representer(model, prepared, config, device)
    y_val, y_test = ds.val["label"].to_numpy(), ds.test["label"].to_numpy()
    on_event({"type": "data", "labeled": int(len(prepared.labeled)), "unlabeled": int(len(prepared.unlabeled)),
              "val": int(len(y_val)), "test": int(len(y_test)), "fraction": prepared.fraction})

    # -- what one epoch iterates over: labeled rows, plus (GAN-BERT) repeated labeled and unlabeled rows
    gan = config.method == "ganbert"
    if gan:
        reps = repeats_for(prepared.fraction)
        rows = np.concatenate([np.repeat(prepared.labeled, reps), prepared.unlabeled])
        if config.generator == "bow":
            model.generator = make_bow_generator(config, model, prepared, device)
    else:
        rows = prepared.labeled
    pool_lengths = rep.lengths("pool")
    batch_size = config.resolved_batch_size
    steps_per_epoch = math.ceil(len(rows) / batch_size)
    total_steps = steps_per_epoch * config.epochs

    # -- optimizers: D (encoder + head) and G apart, as in the original TF code
    d_params = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("generator.")]
    d_opt = adamw(d_params, config.learning_rate)
    g_opt = adamw(model.generator.parameters(), config.learning_rate) if gan else None
    schedule = None if gan else get_linear_schedule_with_warmup(d_opt, int(config.warmup * total_steps), total_steps)

    # -- loop
    best_f1, best_state, stale, collapsed, step = -1.0, None, 0, 0, 0
    history = []
    started = time.perf_counter()
    samples = 0
    model.train()
    for epoch in range(1, config.epochs + 1):
        sums: dict[str, float] = {}
        for batch in bucketed_batches(pool_lengths[rows], batch_size, rng):
            if should_stop():
                raise Cancelled("cancelled by request")
            idx = rows[batch]
            labels = torch.from_numpy(prepared.pool_labels[idx]).to(device)
            if gan:
                losses = gan_step(model, rep("pool", idx), labels, (labels >= 0).float(), d_params, d_opt, g_opt)
            else:
                losses = supervised_step(model, rep("pool", idx), labels, d_params, d_opt, schedule)
            for name, value in losses.items():
                if not math.isfinite(value):
                    raise Diverged(f"the {name} loss became {value} at epoch {epoch}, step {step + 1}")
                sums[name] = sums.get(name, 0.0) + value
            step += 1
            samples += len(idx)
            if step % 10 == 0 or step == total_steps:
                on_event({"type": "progress", "epoch": epoch, "step": step, "total_steps": total_steps,
                          "samples_per_s": samples / (time.perf_counter() - started)})

        # -- evaluate, keep the best checkpoint, stop early or on collapse
        val = evaluate(model, rep, "val", y_val, batch_size)
        train_losses = {k: v / steps_per_epoch for k, v in sums.items()}
        history.append({"epoch": epoch, **train_losses, **{f"val_{k}": val[k] for k in ("accuracy", "macro_f1", "mcc")}})
        predicted = np.asarray(val["confusion"]).sum(0)
        collapsed = collapsed + 1 if (predicted > 0).sum() == 1 else 0
        improved = val["macro_f1"] > best_f1
        if improved:
            best_f1, stale = val["macro_f1"], 0
            best_state = {k: v.detach().clone() for k, v in model.trainable_state().items()}
            model.save(run_dir / CHECKPOINT)
        else:
            stale += 1
        on_event({"type": "epoch", "epoch": epoch, "step": step, "total_steps": total_steps,
                  "losses": train_losses, "val": val, "best": improved,
                  "samples_per_s": samples / (time.perf_counter() - started)})
        if collapsed >= config.collapse_evals:
            only = model.labels[int(predicted.argmax())]
            raise Diverged(f"collapsed: every validation prediction was '{only}' for {collapsed} evaluations in a row")
        if stale >= config.patience:
            on_event({"type": "status", "message": f"early stop: no better validation macro-F1 for {stale} epochs"})
            break

    # -- test once, with the best checkpoint
    model.load_state_dict(best_state, strict=False)
    probs, fake = predict_split(model, rep, "test", batch_size)
    has_labels = bool((y_test >= 0).all())
    test = classification_metrics(y_test, probs.argmax(1), model.labels) if has_labels else {}
    write_predictions(run_dir, ds.test["id"].tolist(), y_test, probs, fake, model.labels)
    elapsed = time.perf_counter() - started
    result = {"best_val_macro_f1": best_f1, "test": test, "history": history, "epochs_run": len(history),
              "seconds": elapsed, "samples_per_s": samples / elapsed if elapsed else 0.0,
              "labeled": int(len(prepared.labeled)), "unlabeled": int(len(prepared.unlabeled)),
              "fraction": prepared.fraction}
    atomic_write_text(run_dir / "result.json", json.dumps(result, indent=2))
    return result


def adamw(params, lr: float) -> torch.optim.AdamW:
    """Fused AdamW: one kernel per step instead of several per tensor (40 → 25 ms per frozen GAN-BERT
    step at batch 64 on this CPU)."""
    return torch.optim.AdamW(params, lr=lr, fused=True)


def supervised_step(model: StudioModel, rep: torch.Tensor, labels: torch.Tensor, params: list, opt, schedule
                    ) -> dict[str, float]:
    loss = F.cross_entropy(model.head_logits(rep), labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    schedule.step()
    return {"loss": loss.item()}


def gan_step(model: StudioModel, real_rep: torch.Tensor, labels: torch.Tensor, label_mask: torch.Tensor,
             d_params: list, d_opt, g_opt) -> dict[str, float]:
    """One GAN-BERT step. D's and G's gradients come from one forward pass but are taken separately
    (D's loss w.r.t. D and the encoder only, G's loss w.r.t. G only), each clipped at norm 1.0, as the
    original TF code did; the PyTorch port summed them, which mixes the two objectives."""
    fake_rep = model.generator(len(real_rep), real_rep.device)
    real_logits, real_features = model.head(real_rep)
    fake_logits, fake_features = model.head(fake_rep)
    losses = gan_losses(real_logits, real_features, fake_logits, fake_features, labels, label_mask)
    g_params = list(model.generator.parameters())
    d_grads = torch.autograd.grad(losses.d, d_params, retain_graph=True, allow_unused=True)
    g_grads = torch.autograd.grad(losses.g, g_params, allow_unused=True)
    for params, grads, opt in ((d_params, d_grads, d_opt), (g_params, g_grads, g_opt)):
        for p, g in zip(params, grads):
            p.grad = g
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    return {"d_loss": losses.d.item(), "g_loss": losses.g.item(), "d_supervised": losses.d_supervised.item(),
            "g_feature_matching": losses.g_feature_matching.item()}


def make_bow_generator(config: TrainConfig, model: StudioModel, prepared: Prepared, device: torch.device
                       ) -> BowGenerator:
    """G2 with its bags: token ids (no special tokens) of the unlabeled texts, or of the whole pool
    when every text is labeled."""
    tokenizer = load_tokenizer(config.backbone)
    source = prepared.unlabeled if len(prepared.unlabeled) else np.arange(len(prepared.pool_labels))
    texts = [prepared.dataset.train["text"].iloc[i] if i < len(prepared.dataset.train)
             else prepared.dataset.unlabeled["text"].iloc[i - len(prepared.dataset.train)] for i in source]
    ids = tokenizer(texts, truncation=True, max_length=config.max_len, add_special_tokens=False,
                    verbose=False)["input_ids"]
    ids = [x or [tokenizer.unk_token_id] for x in ids]
    width = max(len(x) for x in ids)
    bags = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        bags[i, :len(row)] = torch.tensor(row)
    lengths = torch.tensor([len(x) for x in ids])
    embeddings = model.encoder.get_input_embeddings().weight.detach()
    sizes = preset_sizes(config.gan_preset, model.hidden_size, config.noise)
    return BowGenerator(config.noise_dim, sizes.g_hidden, model.feature_dim, embeddings, bags, lengths,
                        sizes.noise, dropout=sizes.dropout).to(device)


def write_predictions(run_dir: Path, ids: list[str], y_true: np.ndarray, probs: np.ndarray, fake: np.ndarray,
                      labels: tuple[str, ...]) -> None:
    """Per-text test predictions, for confusion matrices and paired tests between runs."""
    frame = pd.DataFrame({"id": ids, "label": y_true, "pred": probs.argmax(1), "fake_prob": fake})
    for i, name in enumerate(labels):
        frame[f"p_{name}"] = probs[:, i]
    atomic_write_parquet(run_dir / PREDICTIONS, frame)


def load_best(run_dir: Path, device: str = "cpu") -> StudioModel:
    return load_model(run_dir / CHECKPOINT, device)
