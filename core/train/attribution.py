"""Why a model gave its label: per-token attributions for the predicted class.

Models with a differentiable path from the token embeddings to the class logits (fine-tuned, adapter,
GAN-BERT, frozen-feature heads, SetFit with either head) get integrated gradients (Sundararajan et al.
2017): the gradient of the class logit, averaged along a straight path from a baseline to the text, times
the text's embeddings minus the baseline's. The baseline keeps the special tokens and zeroes every other
token's word embedding, so the attributions of the text's own tokens add up to the logit's change from the
baseline (completeness). A frozen model's path runs through the frozen encoder into the trained head.

TF-IDF + LR has no token path; its explanation is the n-grams of the text weighted by the model's
coefficients for the class (their contributions to the logit).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import numpy as np
import torch

from core.data import clean_texts
from core.errors import InputError

STEPS = 64  # Riemann midpoints along the path: completeness holds to about 1% of the logit change
CHUNK = 8  # path points through the model at once: bounded memory on long texts, and a bar that moves
Progress = Callable[[int, int], None]  # (integration steps done, steps in all)


@dataclass(frozen=True)
class GradientPath:
    """What integrated gradients needs of a model: its tokenizer and length, its input word embeddings, and
    the logits over its classes as a function of embedded tokens."""

    tokenizer: object
    max_len: int
    embeddings: torch.nn.Module
    logits: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (inputs_embeds, attention_mask) -> [n, k]


@runtime_checkable
class Explainable(Protocol):
    """A predictor that can say why: it attributes its logit for a class to the text's tokens or n-grams
    (`integrated_gradients` along its token path, or `ngram_weights`)."""

    labels: tuple[str, ...]
    config: object

    def predict(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray | None]: ...

    def attribute(self, text: str, label: str, steps: int, on_progress: Progress | None = None) -> Attribution: ...


class TokenPath(Protocol):
    """What integrated gradients reads of a predictor."""

    labels: tuple[str, ...]

    def gradient_path(self) -> GradientPath: ...


@dataclass(frozen=True)
class Attribution:
    """Scores toward (positive) and against (negative) the explained class: per token in text order, with
    each token's character span in the (cleaned) text; or per n-gram for a model without a token path."""

    label: str
    text: str
    method: str  # integrated gradients | n-gram weights
    tokens: list[dict]  # {"token", "score", "start", "end"}
    logit: float
    baseline_logit: float
    unread_from: int | None = None  # where the text past the model's max length begins: never read
    words: tuple[str, ...] = ()  # what a model reading whole-text statistics saw, in sentences

    def to_json(self) -> list[dict]:
        return [{"token": t["token"], "score": t["score"]} for t in self.tokens]

    def top(self, toward: bool, n: int = 5) -> list[dict]:
        """The `n` tokens that weigh most toward (or against) the class, each named so it can be read."""
        chosen = [t for t in self.tokens if (t["score"] > 0) == toward and t["score"] != 0]
        return [t | {"token": readable(t["token"])} for t in sorted(chosen, key=lambda t: -abs(t["score"]))[:n]]

    def as_html(self) -> str:
        """The text with each token shaded toward (green) or against (red) the class, by its share of the
        largest score; the text between tokens as it is, and the text past the max length in grey. Empty for
        n-gram explanations (no spans)."""
        spans = [t for t in self.tokens if t["start"] >= 0]
        if not spans:
            return ""
        scale = max(abs(t["score"]) for t in spans) or 1.0
        parts, at = [], 0
        for t in spans:
            parts.append(html.escape(self.text[at:t["start"]]))
            alpha = abs(t["score"]) / scale * 0.8
            rgb = "46,160,67" if t["score"] > 0 else "215,58,73"
            parts.append(f'<span title="{t["score"]:+.4f}" style="background:rgba({rgb},{alpha:.2f});'
                         f'border-radius:3px">{html.escape(self.text[t["start"]:t["end"]])}</span>')
            at = t["end"]
        if self.unread_from is None:
            parts.append(html.escape(self.text[at:]))
        else:
            parts.append(html.escape(self.text[at:self.unread_from]) + '<span title="past the max length: not read" '
                         f'style="color:#8c8c8c">{html.escape(self.text[self.unread_from:])}</span>')
        # the text's own line breaks and spaces kept: its paragraphs had run onto one line, a break a bare block
        return '<div style="line-height:1.9;white-space:pre-wrap">' + "".join(parts) + "</div>"


def readable(token: str) -> str:
    """A token as a list can show it: a word without the space a byte-level BPE token (SmolLM2's) carries before it,
    and a token of whitespace alone, which such models weigh too, by name: it had read as an empty “”."""
    if token.strip():
        return token.strip()
    breaks = token.count("\n")
    if breaks:
        return "[line break]" if breaks == 1 else f"[{breaks} line breaks]"
    return "[space]" if token == " " else f"[{len(token)} spaces]" if set(token) == {" "} else "[whitespace]"


def explain(model: Explainable, text: str, label: str | None = None, steps: int = STEPS,
            on_progress: Progress | None = None) -> Attribution:
    """Attributions for `label` (default: the predicted class) on one text, cleaned as in training. The
    predicted class is the one `predict` gives (in the run's precision), not the fp32 path's: on a near tie
    the two can differ, and the explanation must be of the label the user was shown. Integrated gradients says
    its steps to `on_progress` (36 s for SmolLM2 at 512 tokens on a CPU)."""
    if not isinstance(model, Explainable):
        raise InputError(f"a {type(model).__name__} cannot explain its predictions")
    cleaned = clean_texts([text], model.config.cleaning)[0]
    if label is None:
        label = model.labels[int(model.predict([cleaned])[0][0].argmax())]
    return model.attribute(cleaned, label, steps, on_progress)


def target_index(model: TokenPath, label: str) -> int:
    if label not in model.labels:
        raise InputError(f"the model has no class {label!r}; its classes are {', '.join(model.labels)}")
    return model.labels.index(label)


def integrated_gradients(model: TokenPath, path: GradientPath, text: str, label: str, steps: int,
                         on_progress: Progress | None = None) -> Attribution:
    enc = path.tokenizer(text, truncation=True, max_length=path.max_len, return_offsets_mapping=True,
                         return_tensors="pt")
    ids, mask = enc["input_ids"], enc["attention_mask"]
    device = path.embeddings.weight.device
    ids, mask = ids.to(device), mask.to(device)
    special = torch.tensor(path.tokenizer.get_special_tokens_mask(ids[0].tolist(), already_has_special_tokens=True),
                           dtype=torch.bool, device=device)
    with torch.no_grad():
        x = path.embeddings(ids).float()
        baseline = torch.where(special[None, :, None], x, torch.zeros_like(x))
        ends = path.logits(torch.cat([x, baseline]), mask.repeat(2, 1)).float()
    target = target_index(model, label)
    alphas = ((torch.arange(steps, device=device, dtype=torch.float32) + 0.5) / steps)[:, None, None]
    grads, done = torch.zeros_like(x[0]), 0
    for chunk in alphas.split(CHUNK):
        points = (baseline + chunk * (x - baseline)).requires_grad_(True)
        logits = path.logits(points, mask.expand(len(chunk), -1))
        grads += torch.autograd.grad(logits[:, target].sum(), points)[0].sum(0)
        done += len(chunk)
        if on_progress:
            on_progress(done, steps)
    scores = ((x - baseline)[0] * grads / steps).sum(-1).detach().cpu().numpy()
    offsets = enc["offset_mapping"][0].tolist()
    tokens = [{"token": text[a:b] or path.tokenizer.convert_ids_to_tokens(int(i)), "score": float(s), "start": a,
               "end": b} for i, s, (a, b), sp in zip(ids[0].tolist(), scores, offsets, special.tolist()) if not sp]
    cut = len(path.tokenizer(text, verbose=False)["input_ids"]) > ids.shape[1]
    return Attribution(model.labels[target], text, "integrated gradients", tokens, float(ends[0, target]),
                       float(ends[1, target]), tokens[-1]["end"] if cut and tokens else None)


def ngram_weights(model, text: str, label: str) -> Attribution:
    """Each n-gram of the text times the class's coefficient: its share of the class logit."""
    contributions, logits = model.ngram_contributions(text)
    target = target_index(model, label)
    scores = contributions[target]
    names = model.ngram_names
    tokens = [{"token": names[i], "score": float(scores[i]), "start": -1, "end": -1}
              for i in np.argsort(-np.abs(scores)) if scores[i] != 0]
    return Attribution(model.labels[target], text, "n-gram weights", tokens, float(logits[target]),
                       float(model.bias[target]))


def unsure(probabilities: dict[str, float], margin: float = 1.5) -> bool:
    """A prediction is unsure when its top probability is within `margin`× of uniform (1/k)."""
    return max(probabilities.values()) < margin / len(probabilities)


def near_chance(test_accuracy: float | None, n_classes: int, margin: float = 2.0) -> str | None:
    """A caution when a model scored under `margin`× chance (1/k) on its test texts: its probabilities then say
    little about a new text, however confident they look (on L2R at 20 labels a class models at 0.31-0.33 against a
    chance of 0.20 showed 97.6-99.6% on a wrong class, and a 1.5× margin never warned). None when it did better, or
    was never tested."""
    if test_accuracy is None or test_accuracy != test_accuracy or test_accuracy >= margin / n_classes:
        return None
    return (f"Near chance: this model scored {test_accuracy:.3f} accuracy on its test texts, where guessing scores "
            f"{1 / n_classes:.3f} ({n_classes} classes). Read its prediction and probabilities as "
            + ("no better than a guess." if test_accuracy <= 1 / n_classes else "little better than a guess."))
