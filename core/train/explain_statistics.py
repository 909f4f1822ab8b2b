"""Why a model that reads token-probability statistics predicted a class, in words: the text's statistics
against the means of each class's labeled texts ("its tokens were more predictable to the model than this
model's human texts"), and each statistic's share of the class's logit.

The statistics describe the whole text, not its tokens, so there is nothing to shade in it: the shares are
gradient × input on the standardized features, from the average labeled text (all zeros) to this one, exact for a
linear head (features + LR, the trained head) and a first-order reading of GAN-BERT's discriminator. A model that
also reads hidden states gets their summed share as one line.
"""

from __future__ import annotations

import torch

from core.backbone.poolings import hidden_pooling
from core.backbone.probabilities import NAMES
from core.train.attribution import Attribution
from core.train.model import StudioModel

# the statistics said in words: (name in `NAMES`, what a higher value means, what a lower one means)
HEADLINES = (
    ("token log-probability mean", "its tokens were more predictable to the model",
     "its tokens were less predictable to the model"),
    ("entropy mean", "the model was less sure of each next token", "the model was surer of each next token"),
    ("top-10 share", "more of its tokens were among the model's 10 likeliest",
     "fewer of its tokens were among the model's 10 likeliest"),
    ("curvature", "its likelihood sat further above what the model expects of its own samples (Fast-DetectGPT)",
     "its likelihood sat nearer what the model expects of its own samples, or below it (Fast-DetectGPT)"),
)


def statistics_attribution(model: StudioModel, tokenizer, text: str, label: str) -> Attribution:
    """The statistics' shares of `label`'s logit, and the headline statistics in words."""
    k = model.labels.index(label)
    enc = tokenizer([text], truncation=True, max_length=model.config.max_len, return_tensors="pt")
    device = model.feature_mean.device
    with torch.no_grad():
        rep = model.encode(enc["input_ids"].to(device), enc["attention_mask"].to(device))
    rep = rep.detach().requires_grad_(True)
    logit = model.head_logits(rep)[0, k]
    (grad,) = torch.autograd.grad(logit, rep)
    shares = (grad * rep)[0].tolist()
    raw = (rep.detach() * model.feature_std + model.feature_mean)[0]
    start = len(shares) - len(NAMES)
    tokens = [{"token": name, "score": score, "start": -1, "end": -1}
              for name, score in zip(NAMES, shares[start:])]
    if hidden_pooling(model.pooling) is not None:
        tokens.append({"token": f"hidden states ({start:,} values)", "score": sum(shares[:start]), "start": -1,
                       "end": -1})
    with torch.no_grad():
        baseline = float(model.head_logits(torch.zeros_like(rep))[0, k])
    spread = model.feature_std[start:].tolist()
    return Attribution(label, text, "token-probability statistics", tokens, float(logit.detach()), baseline,
                       words=tuple(in_words(model, raw[start:].tolist(), spread, label)))


def in_words(model: StudioModel, values: list[float], spread: list[float], label: str) -> list[str]:
    """One sentence per headline statistic: the text against the class whose labeled texts it is least like
    on it, beside the predicted class's mean; none where it is within a tenth of the labeled texts' spread of every
    class's mean (nothing sets it apart)."""
    means = model.class_means[:, -len(NAMES):].tolist()
    predicted = model.labels.index(label)
    others = [c for c in range(len(model.labels)) if c != predicted]
    sentences = []
    for name, higher, lower in HEADLINES if others else ():
        f = NAMES.index(name)
        value = values[f]
        far = max(others, key=lambda c: abs(means[c][f] - value))
        if abs(means[far][f] - value) < 0.1 * spread[f]:
            continue
        said = higher if value > means[far][f] else lower
        sentences.append(f"{said[0].upper()}{said[1:]} than this model's {model.labels[far]} texts ({name} "
                         f"{value:.2f} against their {means[far][f]:.2f}; its {label} texts: "
                         f"{means[predicted][f]:.2f}).")
    return sentences
