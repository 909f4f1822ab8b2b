"""The seed report's text cleaning, each step a toggle that is off by default.

One function applies it, so exploration, training and prediction see the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CONTRACTIONS = {
    "won't": "will not", "can't": "cannot", "shan't": "shall not", "ain't": "is not", "let's": "let us",
    "y'all": "you all", "o'clock": "of the clock", "ma'am": "madam",
    # "'s" is also possessive, so it expands only after words where it cannot be.
    "it's": "it is", "that's": "that is", "there's": "there is", "here's": "here is", "what's": "what is",
    "he's": "he is", "she's": "she is", "who's": "who is", "where's": "where is", "how's": "how is",
}
_SUFFIXES = {"n't": " not", "'re": " are", "'ll": " will", "'ve": " have", "'m": " am", "'d": " would"}
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})
_WHOLE = re.compile(r"\b(" + "|".join(re.escape(k) for k in _CONTRACTIONS) + r")\b", re.IGNORECASE)
_SUFFIX = re.compile(r"(\w+)(n't|'re|'ll|'ve|'m|'d)\b", re.IGNORECASE)
_SPECIAL = re.compile(r"[^A-Za-z\u00C0-\u024F\s.,!?;:'\"()-]+")
_SPACES = re.compile(r"[ \t]+")


@dataclass(frozen=True)
class CleaningConfig:
    """Which cleaning steps run; all off keeps the writer's style signal intact."""

    expand_contractions: bool = field(default=False, metadata={"help": "cleaning: expand contractions"})
    # drop digits and symbols; letters, whitespace and . , ! ? ; : ' " ( ) - stay
    strip_special: bool = field(default=False, metadata={"help": "cleaning: strip special characters and digits"})
    lowercase: bool = field(default=False, metadata={"help": "cleaning: lowercase"})

    @property
    def active(self) -> bool:
        return self.expand_contractions or self.strip_special or self.lowercase


def _expand(text: str) -> str:
    text = text.translate(_APOSTROPHES)

    def whole(m: re.Match) -> str:
        word = _CONTRACTIONS[m.group(1).lower()]
        return word.capitalize() if m.group(1)[0].isupper() else word

    text = _WHOLE.sub(whole, text)
    return _SUFFIX.sub(lambda m: m.group(1) + _SUFFIXES[m.group(2).lower()], text)


def clean_text(text: str, config: CleaningConfig) -> str:
    """Apply the enabled steps in the seed report's order: contractions, special characters, case."""
    if config.expand_contractions:
        text = _expand(text)
    if config.strip_special:
        text = _SPACES.sub(" ", _SPECIAL.sub(" ", text)).strip()
    if config.lowercase:
        text = text.lower()
    return text


def clean_texts(texts: list[str], config: CleaningConfig) -> list[str]:
    return [clean_text(t, config) for t in texts] if config.active else list(texts)
