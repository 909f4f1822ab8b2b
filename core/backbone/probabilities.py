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
CHUNK = 64  # positions scored at once: its buffers hold 44 MB over SmolLM2's 49,152 tokens (bf16 logits, three
# fp32). 64, 128 and 256 ran level in a whole pass of both feature sets (5.2, 5.1, 5.1 texts/s; 64 L2R texts at 256
# tokens, AMD EPYC with AVX512-BF16, 2 threads, 2026-12-06): the smallest buffers win


def token_statistics(lm_head: torch.nn.Module, hidden: torch.Tensor, input_ids: torch.Tensor,
                     attention_mask: torch.Tensor) -> torch.Tensor:
    """`len(NAMES)` float32 statistics per text of a batch: `hidden` is the model's last hidden state (after its
    final norm, what `lm_head` reads), padded on the right as `attention_mask` says. A text of one token has
    nothing scored: its statistics are 0."""
    follows = attention_mask[:, 1:].bool()  # position t predicts token t + 1, where that token is the text's
    counts = follows.sum(1).tolist()
    scores = position_scores(lm_head, hidden[:, :-1][follows], input_ids[:, 1:][follows])
    out = torch.zeros(len(input_ids), len(NAMES), dtype=torch.float32, device=hidden.device)
    for row, per_token in enumerate(scores.split(counts, dim=1)):
        if counts[row]:
            out[row] = text_statistics(*per_token)
    return out


def text_statistics(log_prob: torch.Tensor, entropy: torch.Tensor, log_rank: torch.Tensor,
                    variance: torch.Tensor) -> torch.Tensor:
    """The statistics of one text from its positions' scores (`position_scores`)."""
    quantiles = torch.tensor(QUANTILES, device=log_prob.device)
    stats = []
    for values in (log_prob, entropy, log_rank):
        stats += [values.mean(), values.std(unbiased=False), *torch.quantile(values, quantiles)]
    rank_one = (log_rank == 0).float().mean()
    top_ten = (log_rank <= torch.log(torch.tensor(10.0))).float().mean()
    # Fast-DetectGPT: E[log p] at a position is -entropy, and the text's variance is the sum of its positions'
    curvature = (log_prob.sum() + entropy.sum()) / variance.sum().clamp(min=1e-6).sqrt()
    return torch.stack([*stats, rank_one, top_ten, curvature])


@torch.no_grad()
def position_scores(lm_head: torch.nn.Module, states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per position (`states[t]` predicts `targets[t]`), four rows: the target's log-probability, the
    distribution's entropy, the target's log-rank (ties count for the target, as a first choice does), and the
    variance of log p under the distribution (the curvature's).

    The head runs in the pass's precision (autocast's, else its weights'), its weight cast once rather than at
    every call as autocast does (113 MB for SmolLM2's); the softmax and its sums run in fp32, out of autocast,
    which would cast their operands down to bf16, in buffers reused from chunk to chunk: a fresh 12 MB tensor at
    each step cost more than the head's product. Token probabilities are frozen features: nothing here is
    differentiated."""
    device = states.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else lm_head.weight.dtype
    weight = lm_head.weight.to(dtype).T
    bias = None if lm_head.bias is None else lm_head.bias.to(dtype)
    logits = torch.empty(min(CHUNK, len(states)), weight.shape[1], dtype=dtype, device=states.device)
    shifted = logits if dtype == torch.float32 else torch.empty(logits.shape, device=states.device)
    exp, above = torch.empty_like(shifted), torch.empty_like(shifted)
    out = torch.empty(4, len(states), device=states.device)
    with torch.autocast(device, enabled=False):
        for start in range(0, len(states), CHUNK):
            h, t = states[start:start + CHUNK].to(dtype), targets[start:start + CHUNK, None]
            n = len(h)
            z, e = shifted[:n], exp[:n]
            torch.matmul(h, weight, out=logits[:n])
            if bias is not None:
                logits[:n].add_(bias)
            if shifted is not logits:
                z.copy_(logits[:n])
            out[2, start:start + n] = torch.log(torch.gt(z, z.gather(1, t), out=above[:n]).sum(1) + 1)
            z.sub_(z.amax(1, keepdim=True))
            total = torch.exp(z, out=e).sum(1, keepdim=True)
            z.sub_(total.log())  # log p
            out[0, start:start + n] = z.gather(1, t)[:, 0]
            entropy = -torch.bmm(e[:, None], z[:, :, None]).view(n, 1) / total
            e.mul_(z.add_(entropy))  # p (log p - E[log p]), before dividing by `total`: centred, so fp32 keeps it
            out[1, start:start + n] = entropy[:, 0]
            out[3, start:start + n] = torch.bmm(e[:, None], z[:, :, None]).view(-1) / total[:, 0]
    return out
