"""What a word is in the exploration views: one rule for the n-gram counts, the word clouds, the TF-IDF maps and the
KL shift, so a word means the same in each.

scikit-learn's default pattern (two or more word characters) cut "I've", "don't" and "we'll" into "ve", "don" and
"ll", and read the `<br />` line breaks of web text as the word "br": on the l2r corpus all four were top words with
stop words removed. Here HTML tags and entities are read as the text they stand for, links are dropped (their
"https github com" had been a top trigram), and contractions stay whole. When stop words are removed, an n-gram of
two words or more is made from the whole text and kept when it neither starts nor ends with a stop word: removed
first, they had joined words that never stood together ("state of the art" read as the bigram "state art").
"""

from __future__ import annotations

import html
import re
from functools import partial

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

VERSION = 3  # part of the cache keys of the views that count words: a changed rule recomputes them
URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
HTML_TAG = re.compile(r"</?[a-z][a-z0-9]*(?:\s[^<>]*)?/?>", re.IGNORECASE)  # <br>, <br />, </a>, <a href=…>
APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})  # don’t and don't: one word
TOKEN_PATTERN = r"(?u)\b\w(?:'?\w)+\b"  # two or more word characters, an apostrophe allowed between two of them

_SUBJECTS = "i you he she it we they that there here what who where when why how let".split()
_NEGATED = "do does did is are was were have has had would should could might must need ca wo sha ai".split()
# scikit-learn's list holds "do" and "not" but not "don't", which reads as one word here
CONTRACTIONS = frozenset({f"{s}'{end}" for s in _SUBJECTS for end in ("s", "re", "ve", "ll", "d", "m")}
                         | {f"{v}n't" for v in _NEGATED}
                         | {f"{v}'ve" for v in ("would", "should", "could", "might", "must")})
STOP_WORDS = sorted(ENGLISH_STOP_WORDS | CONTRACTIONS)  # a list: what scikit-learn's `stop_words` accepts


def normalise(text: str) -> str:
    """Lower case, HTML entities decoded, HTML tags and links turned into spaces and curly apostrophes made
    straight."""
    return URL.sub(" ", HTML_TAG.sub(" ", html.unescape(text))).translate(APOSTROPHES).lower()


def vectorizer_options(stop_words: bool = False, n: int = 1) -> dict:
    """Keyword arguments for a scikit-learn Count- or TfidfVectorizer that splits text by this rule into n-grams of
    `n` words; with stop words removed, longer n-grams come from the whole text and may hold stop words inside."""
    if stop_words and n > 1:
        return {"analyzer": partial(_inner_ngrams, n=n, pattern=re.compile(TOKEN_PATTERN), stop=frozenset(STOP_WORDS))}
    return {"preprocessor": normalise, "token_pattern": TOKEN_PATTERN, "ngram_range": (n, n),
            "stop_words": STOP_WORDS if stop_words else None}


def _inner_ngrams(text: str, n: int, pattern: re.Pattern, stop: frozenset[str]) -> list[str]:
    """The n-grams of a text that neither start nor end with a stop word ("state of the art", not "state art")."""
    tokens = pattern.findall(normalise(text))
    return [" ".join(gram) for i in range(len(tokens) - n + 1)
            if (gram := tokens[i:i + n])[0] not in stop and gram[-1] not in stop]
