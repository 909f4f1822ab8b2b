"""GAN-BERT (Croce, Castellucci and Basili, ACL 2020): discriminator, generators and losses.

D sees sentence representations (real ones from the encoder, fake ones from G) and outputs k+1
logits, the last being "fake". Unlabeled real texts teach D what real looks like; that is where
GAN-BERT gets its gain when labels are few.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import get_linear_schedule_with_warmup

from core.backbone.encode import load_tokenizer
from core.train.config import TrainConfig
from core.train.dropout import Dropout
from core.train.inputs import Prepared
from core.train.methods.presets import GanRecipe, recipe_for, sizes_for
from core.train.methods.stepwise import StepTrainer
from core.train.model import StudioModel
from core.train.optim import Step, adamw, trained_named

EPS = 1e-8


def mlp(sizes: list[int], dropout: float) -> nn.Sequential:
    """Linear → LeakyReLU(0.2) → Dropout for each hidden size (the official block)."""
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.LeakyReLU(0.2), Dropout(dropout)]
    return nn.Sequential(*layers)


class Discriminator(nn.Module):
    """Dropout on the input, hidden layer(s), then k+1 logits; `forward` also returns the last hidden
    layer, which feature matching compares between real and fake."""

    def __init__(self, input_dim: int, hidden: list[int], num_labels: int, dropout: float = 0.2):
        super().__init__()
        self.input_dropout = Dropout(dropout)
        self.body = mlp([input_dim, *hidden], dropout)
        self.logits = nn.Linear(hidden[-1], num_labels + 1)

    def forward(self, rep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.body(self.input_dropout(rep))
        return self.logits(features), features


class NoiseGenerator(nn.Module):
    """G1: noise (uniform as in the official code, or Gaussian as in the seed report) into an MLP."""

    def __init__(self, noise_dim: int, hidden: list[int], output_dim: int, noise: str = "uniform",
                 dropout: float = 0.2):
        super().__init__()
        self.noise_dim, self.noise = noise_dim, noise
        self.body = mlp([noise_dim, *hidden], dropout)
        self.out = nn.Linear(hidden[-1], output_dim)

    def sample_noise(self, n: int, device: torch.device) -> torch.Tensor:
        if self.noise == "gaussian":
            return torch.randn(n, self.noise_dim, device=device)
        return torch.rand(n, self.noise_dim, device=device)

    def forward(self, n: int, device: torch.device) -> torch.Tensor:
        return self.out(self.body(self.sample_noise(n, device)))


class BowGenerator(NoiseGenerator):
    """G2: a generator conditioned on a bag of words drawn from real unlabeled text.

    Design: G1 must discover the whole manifold of real representations from noise alone, and tends
    to cover only part of it. G2 gives each fake sample a content anchor: it draws one real unlabeled
    text, keeps a random subset of its tokens (each with probability `keep`, at least one), and
    averages the backbone's frozen input word embeddings over that subset. The bag carries topic and
    vocabulary but not word order or style, so D cannot separate real from fake by content and is
    pushed to the stylistic cues that tell writers apart. The bag is joined with noise (so one bag
    can yield many fakes) and fed to the same MLP as G1. The word embeddings are a frozen copy: G2
    never moves the encoder. Neither official GAN-BERT repository has such a generator.
    """

    def __init__(self, noise_dim: int, hidden: list[int], output_dim: int, word_embeddings: torch.Tensor,
                 bags: torch.Tensor, bag_lengths: torch.Tensor, noise: str = "uniform", keep: float = 0.3,
                 dropout: float = 0.2):
        super().__init__(noise_dim + word_embeddings.shape[1], hidden, output_dim, noise, dropout)
        self.noise_dim = noise_dim
        self.keep = keep
        # Not saved with the model: rebuilt from the backbone and the data when training resumes.
        self.register_buffer("embeddings", word_embeddings.detach().clone(), persistent=False)
        self.register_buffer("bags", bags, persistent=False)  # [n_texts, max_tokens] token ids, 0-padded
        self.register_buffer("bag_lengths", bag_lengths, persistent=False)

    def bag_of_words(self, n: int) -> torch.Tensor:
        device = self.bags.device
        rows = torch.randint(len(self.bags), (n,), device=device)
        ids, lengths = self.bags[rows], self.bag_lengths[rows]
        valid = torch.arange(ids.shape[1], device=device)[None, :] < lengths[:, None]
        keep = (torch.rand(ids.shape, device=device) < self.keep) & valid
        first = torch.zeros_like(keep)
        first[:, 0] = True  # at least one token per bag
        keep = keep | (first & ~keep.any(dim=1, keepdim=True))
        # the kept tokens' embeddings summed without materializing [n, tokens, dim]
        sums = F.embedding_bag(ids, self.embeddings, mode="sum", per_sample_weights=keep.to(self.embeddings.dtype))
        return sums / keep.sum(1, keepdim=True).clamp(min=1)

    def forward(self, n: int, device: torch.device) -> torch.Tensor:
        z = torch.cat([self.bag_of_words(n), self.sample_noise(n, device)], dim=-1)
        return self.out(self.body(z))


@dataclass
class GanLosses:
    d: torch.Tensor
    g: torch.Tensor
    d_supervised: torch.Tensor
    d_real: torch.Tensor
    d_fake: torch.Tensor
    g_adversarial: torch.Tensor
    g_feature_matching: torch.Tensor


def gan_losses(real_logits: torch.Tensor, real_features: torch.Tensor, fake_logits: torch.Tensor,
               fake_features: torch.Tensor, labels: torch.Tensor, label_mask: torch.Tensor) -> GanLosses:
    """The GAN-BERT objectives (Croce et al. 2020, eqs. for L_D and L_G; crux82/ganbert-pytorch).

    L_D = L_sup + L_unsup_real + L_unsup_fake, where
      L_sup        = cross-entropy over the k real classes, on labeled rows only (0 if none),
      L_unsup_real = -mean log(1 - p_fake(real)),
      L_unsup_fake = -mean log p_fake(G(z)).
    L_G = -mean log(1 - p_fake(G(z))) + mean_j (E[f_real]_j - E[f_fake]_j)^2   (feature matching
    over D's last hidden layer). p_fake is the softmax probability of the last (k+1-th) logit.
    """
    real_probs = F.softmax(real_logits, dim=-1)
    fake_probs = F.softmax(fake_logits, dim=-1)

    d_supervised = supervised_loss(real_logits, labels, label_mask)
    d_real = -torch.log(1 - real_probs[:, -1] + EPS).mean()
    d_fake = -torch.log(fake_probs[:, -1] + EPS).mean()

    g_adversarial = -torch.log(1 - fake_probs[:, -1] + EPS).mean()
    g_feature_matching = (real_features.mean(0) - fake_features.mean(0)).pow(2).mean()
    return GanLosses(d=d_supervised + d_real + d_fake, g=g_adversarial + g_feature_matching,
                     d_supervised=d_supervised, d_real=d_real, d_fake=d_fake, g_adversarial=g_adversarial,
                     g_feature_matching=g_feature_matching)


def supervised_loss(real_logits: torch.Tensor, labels: torch.Tensor, label_mask: torch.Tensor) -> torch.Tensor:
    """L_sup: cross-entropy over the k real classes (the fake logit left out), on labeled rows only; 0, still
    differentiable, when the batch has none."""
    picked = F.log_softmax(real_logits[:, :-1], dim=-1).gather(1, labels.clamp(min=0).unsqueeze(1)).squeeze(1)
    n_labeled = label_mask.sum()
    return -(picked * label_mask).sum() / n_labeled if n_labeled > 0 else real_logits.sum() * 0.0


def bow_generator(config: TrainConfig, model: StudioModel, data: Prepared) -> BowGenerator:
    """G2 with its bags: token ids (no special tokens) of the unlabeled texts, or of the whole pool
    when every text is labeled."""
    tokenizer = load_tokenizer(model.backbone)
    source = data.unlabeled if len(data.unlabeled) else np.arange(len(data.targets))
    ids = tokenizer([data.pool_texts[i] for i in source], truncation=True, max_length=config.max_len,
                    add_special_tokens=False, verbose=False)["input_ids"]
    ids = [x or [tokenizer.unk_token_id] for x in ids]
    bags = torch.zeros((len(ids), max(len(x) for x in ids)), dtype=torch.long)
    for i, row in enumerate(ids):
        bags[i, :len(row)] = torch.tensor(row)
    lengths = torch.tensor([len(x) for x in ids])
    embeddings = model.encoder.get_input_embeddings().weight.detach()
    _, g_hidden, noise = sizes_for(config, model.hidden_size)
    return BowGenerator(config.params.noise_dim, g_hidden, model.feature_dim, embeddings, bags, lengths, noise,
                        dropout=recipe_for(config).dropout)


class GanBert(StepTrainer):
    """D and G, their optimizers and one adversarial step, as `GanBertSpec` and its preset say."""

    def build_head(self, config: TrainConfig, num_labels: int, feature_dim: int, hidden_size: int
                   ) -> tuple[nn.Module, nn.Module | None]:
        """D, and G1; G2 replaces G1 when training starts, since its bags come from the data."""
        d_hidden, g_hidden, noise = sizes_for(config, hidden_size)
        dropout = recipe_for(config).dropout
        return (Discriminator(feature_dim, d_hidden, num_labels, dropout),
                NoiseGenerator(config.params.noise_dim, g_hidden, feature_dim, noise, dropout))

    def probabilities(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The real classes' softmax over the k real logits, as both official codes predict
        (argmax(logits[:, :k])): a fake logit far ahead cannot underflow them. The fake class apart."""
        logits = logits.float()
        return F.softmax(logits[:, :-1], dim=-1), F.softmax(logits, dim=-1)[:, -1]

    def start(self, model: StudioModel, config: TrainConfig, data: Prepared, total_steps: int) -> Step:
        """D (encoder and head) and G get their own optimizers, as in both official codes; the preset says
        how their gradients are taken, clipped and scheduled."""
        recipe = recipe_for(config)
        d_named = trained_named(model, generator=False)
        d_params = [p for _, p in d_named]
        optimizers = [optimizer_for(d_named, config, recipe, total_steps)]
        if not config.params.adversarial:
            used = reaching_logits(model, d_params)

            def control(real_rep: torch.Tensor | None, labels: torch.Tensor) -> dict[str, float]:
                """The same D, rows and budget, trained by L_sup alone: what GAN-BERT is without its game. It reads
                only a batch's labeled rows (`rows_read`); a batch without any still takes its optimizer step, with
                the gradient L_sup has there (zero on every parameter it reaches, none on the others), as AdamW's
                moments and decay move on."""
                if real_rep is None:
                    zero = tuple(torch.zeros_like(p) if reaches else None for p, reaches in zip(d_params, used))
                    apply(optimizers[0], d_params, zero, recipe.clip)
                    return {"d_supervised": 0.0}
                loss = supervised_loss(model.head(real_rep)[0], labels, (labels >= 0).float())
                apply(optimizers[0], d_params, torch.autograd.grad(loss, d_params, allow_unused=True), recipe.clip)
                return {"d_supervised": loss.item()}
            return control
        if config.params.generator == "bow":
            model.generator = bow_generator(config, model, data).to(model.feature_mean.device)
        g_named = trained_named(model, generator=True)
        g_params = [p for _, p in g_named]
        optimizers.append(optimizer_for(g_named, config, recipe, total_steps))

        def step(real_rep: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
            """One forward pass. Separate (TF code, studio): D's loss w.r.t. D and the encoder, G's loss w.r.t.
            G, each clipped. Summed (the notebook, which calls both backward() before either step()): each
            optimizer applies the gradient of L_D + L_G to its own parameters."""
            fake_rep = model.generator(len(real_rep), real_rep.device)
            real_logits, real_features = model.head(real_rep)
            fake_logits, fake_features = model.head(fake_rep)
            losses = gan_losses(real_logits, real_features, fake_logits, fake_features, labels,
                                (labels >= 0).float())
            if recipe.separate:
                d_grads = torch.autograd.grad(losses.d, d_params, retain_graph=True, allow_unused=True)
                g_grads = torch.autograd.grad(losses.g, g_params, allow_unused=True)
            else:
                grads = torch.autograd.grad(losses.d + losses.g, d_params + g_params, allow_unused=True)
                d_grads, g_grads = grads[:len(d_params)], grads[len(d_params):]
            apply(optimizers[0], d_params, d_grads, recipe.clip)
            apply(optimizers[1], g_params, g_grads, recipe.clip)
            return {"d_loss": losses.d.item(), "g_loss": losses.g.item(), "d_supervised": losses.d_supervised.item(),
                    "g_feature_matching": losses.g_feature_matching.item()}
        return step


def reaching_logits(model: StudioModel, params: list[nn.Parameter]) -> list[bool]:
    """Which of `params` the head's logits depend on (an encoder's pooler does not, unless pooling reads it): one
    pass in eval mode over a two-token text, which draws no dropout and so leaves the run's random stream as it
    was."""
    was_training = model.training
    model.eval()
    try:
        device = model.feature_mean.device
        if model.config.frozen:
            rep = torch.zeros(1, model.feature_dim, device=device)
        elif model.cut.boundary:  # a top-K run: below its boundary nothing trains, and states stand for a text
            rep = model.encode_states(torch.zeros(1, 2, model.hidden_size, device=device),
                                      torch.ones(1, 2, dtype=torch.long, device=device))
        else:
            tokenizer = load_tokenizer(model.backbone)
            ids = torch.tensor([tokenizer("")["input_ids"]], device=device)  # its special tokens alone
            rep = model.encode(ids, torch.ones_like(ids))
        grads = torch.autograd.grad(model.head_logits(rep).sum(), params, allow_unused=True)
    finally:
        model.train(was_training)
    return [g is not None for g in grads]


@dataclass
class Optimizer:
    opt: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LRScheduler | None


def optimizer_for(named: list[tuple[str, nn.Parameter]], config: TrainConfig, recipe: GanRecipe,
                  total_steps: int) -> Optimizer:
    """AdamW at the config's rate with the recipe's epsilon and weight decay, and its schedule."""
    opt = adamw(named, config.lr, eps=recipe.eps, decay_norms=recipe.decay_norms)
    schedule = get_linear_schedule_with_warmup(opt, int(config.warmup * total_steps), total_steps) \
        if recipe.warmup else None
    return Optimizer(opt, schedule)


def apply(optimizer: Optimizer, params: list[nn.Parameter], grads: tuple, clip: float | None) -> None:
    for p, g in zip(params, grads):
        p.grad = g
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(params, clip)
    optimizer.opt.step()
    if optimizer.schedule is not None:
        optimizer.schedule.step()
    optimizer.opt.zero_grad(set_to_none=True)
