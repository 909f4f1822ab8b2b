"""Token-probability features of a causal LM: how predictable each token of a text was to the model.

Detectors built on a small LM's token probabilities (GLTR's ranks, Ghostbuster's statistics, Fast-DetectGPT's
curvature) tell machine text from human text where a sentence encoder, trained to map paraphrases together,
sees little. Per text, from the forward pass that also gives its hidden states, every token after the first is
scored by the model given the tokens before it:

- its log-probability, the entropy of the model's distribution at that position, and the log of its rank there
  (0 for the model's first choice): the mean, spread and quantiles of each over the text;
- the share of tokens that were the model's first choice, and its top-10 (GLTR);
- Fast-DetectGPT's analytic curvature (Bao et al., ICLR 2024): the text's log-likelihood against the one the
  model expects of its own samples at the same positions, in standard deviations, with the model as both the
  sampling and the scoring one.
"""

from __future__ import annotations

import torch

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
SERIES = ("token log-probability", "entropy", "token log-rank")
NAMES = tuple(f"{series} {stat}" for series in SERIES
              for stat in ("mean", "std", *(f"q{round(q * 100)}" for q in QUANTILES))) \
    + ("top-1 share", "top-10 share", "curvature")
CHUNK = 64  # positions scored at once: 12 MB of logits over SmolLM2's 49,152 tokens in fp32, and ~6 such temporaries;
# 256 held 300 MB and ran 4% slower (32 L2R texts at 256 tokens, 1 thread, AMD EPYC, 2026-12-05)


def token_statistics(lm_head: torch.nn.Module, hidden: torch.Tensor, input_ids: torch.Tensor,
                     attention_mask: torch.Tensor) -> torch.Tensor:
    """`len(NAMES)` float32 statistics per text of a batch: `hidden` is the model's last hidden state (after its
    final norm, what `lm_head` reads), padded on the right as `attention_mask` says. A text of one token has
    nothing scored: its statistics are 0."""
    out = torch.zeros(len(input_ids), len(NAMES), dtype=torch.float32, device=hidden.device)
    for row, (h, ids, mask) in enumerate(zip(hidden, input_ids, attention_mask)):
        n = int(mask.sum())
        if n >= 2:
            out[row] = text_statistics(lm_head, h[:n - 1], ids[1:n])
    return out


def text_statistics(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The statistics of one text: `hidden[t]` predicts `targets[t]`."""
    per_token = [position_scores(lm_head(hidden[i:i + CHUNK]).float(), targets[i:i + CHUNK])
                 for i in range(0, len(targets), CHUNK)]
    log_prob, entropy, log_rank, expected_sq = (torch.cat(parts) for parts in zip(*per_token))
    quantiles = torch.tensor(QUANTILES, device=hidden.device)
    stats = []
    for values in (log_prob, entropy, log_rank):
        stats += [values.mean(), values.std(unbiased=False), *torch.quantile(values, quantiles)]
    rank_one = (log_rank == 0).float().mean()
    top_ten = (log_rank <= torch.log(torch.tensor(10.0))).float().mean()
    # Fast-DetectGPT: E[log p] at a position is -entropy; its variance is E[(log p)^2] - entropy^2
    variance = (expected_sq - entropy ** 2).clamp(min=0).sum()
    curvature = (log_prob.sum() + entropy.sum()) / variance.clamp(min=1e-6).sqrt()
    return torch.stack([*stats, rank_one, top_ten, curvature])


def position_scores(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Per position: the target's log-probability, the distribution's entropy, the target's log-rank, and
    E[(log p)^2] under the distribution (for the curvature's variance)."""
    log_p = torch.log_softmax(logits, dim=-1)
    p = log_p.exp()
    target_logit = logits.gather(1, targets[:, None])
    rank = (logits > target_logit).sum(1).float() + 1  # ties count for the target, as a first choice does
    return (log_p.gather(1, targets[:, None]).squeeze(1), -(p * log_p).sum(1), torch.log(rank),
            (p * log_p.square()).sum(1))
