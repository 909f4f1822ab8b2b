"""The built-in synthetic corpus: six invented "writers" named after the Subtask B classes.

It exists so the studio runs offline on a fresh machine. Each class is a distinct writer (sentence
length, connectives, word choice, punctuation, formatting) over topics shared by all classes. Every
stylistic choice is drawn from the writer's own preferences only with probability `style_strength`,
otherwise from a pool shared by all writers, so the task is learnable but not trivial.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from core.data.labels import SEMEVAL_LABELS

SYNTHETIC_NAME = "Built-in synthetic corpus"

TOPICS: dict[str, dict[str, list[str]]] = {
    "climate": {
        "noun": ["carbon emissions", "sea levels", "heat waves", "the polar ice", "renewable energy", "drought",
                 "wildfires", "climate policy", "solar panels", "wind farms"],
        "verb": ["affects", "threatens", "reshapes", "drives", "reduces", "changes"],
        "thing": ["coastal towns", "farmers", "energy prices", "local wildlife", "city planning", "insurance costs"],
    },
    "cooking": {
        "noun": ["sourdough bread", "a cast iron pan", "fresh herbs", "slow roasting", "home made pasta",
                 "fermentation", "the spice rack", "a good stock", "knife skills", "baking soda"],
        "verb": ["improves", "transforms", "ruins", "balances", "brings out", "changes"],
        "thing": ["the flavour", "weeknight dinners", "the texture", "a simple recipe", "the crust", "leftovers"],
    },
    "space": {
        "noun": ["the Mars rover", "orbital debris", "reusable rockets", "the space station", "exoplanets",
                 "lunar dust", "satellite networks", "deep space probes", "radio telescopes", "solar storms"],
        "verb": ["reveals", "complicates", "enables", "limits", "inspires", "changes"],
        "thing": ["future missions", "our models of gravity", "launch costs", "astronaut health", "GPS signals",
                  "the search for life"],
    },
    "transport": {
        "noun": ["bike lanes", "electric buses", "the subway", "traffic congestion", "high speed rail",
                 "ride sharing", "parking rules", "commuter trains", "toll roads", "scooter rentals"],
        "verb": ["shapes", "slows", "improves", "reduces", "reorganises", "changes"],
        "thing": ["daily commutes", "air quality", "small businesses", "housing prices", "road safety",
                  "rush hour"],
    },
    "finance": {
        "noun": ["index funds", "credit card debt", "an emergency fund", "compound interest", "inflation",
                 "student loans", "a monthly budget", "retirement savings", "mortgage rates", "side income"],
        "verb": ["protects", "erodes", "grows", "complicates", "stabilises", "changes"],
        "thing": ["household savings", "long term plans", "young families", "spending habits", "credit scores",
                  "peace of mind"],
    },
    "sleep": {
        "noun": ["screen time", "caffeine", "a regular bedtime", "deep sleep", "night shifts", "napping",
                 "blue light", "melatonin", "sleep apnea", "a dark bedroom"],
        "verb": ["disrupts", "restores", "improves", "shortens", "regulates", "changes"],
        "thing": ["memory", "mood", "reaction time", "heart health", "focus at work", "the immune system"],
    },
    "music": {
        "noun": ["piano lessons", "music theory", "daily practice", "ear training", "a school choir",
                 "jazz improvisation", "online tutorials", "the metronome", "sight reading", "band rehearsals"],
        "verb": ["builds", "sharpens", "motivates", "frustrates", "develops", "changes"],
        "thing": ["young students", "rhythm", "confidence", "finger technique", "listening skills",
                  "stage fright"],
    },
    "oceans": {
        "noun": ["coral reefs", "plastic waste", "overfishing", "kelp forests", "ocean warming", "whale songs",
                 "marine reserves", "shipping noise", "tide pools", "deep sea mining"],
        "verb": ["damages", "supports", "disturbs", "protects", "alters", "changes"],
        "thing": ["fish stocks", "coastal economies", "migration routes", "biodiversity", "food webs",
                  "local fishermen"],
    },
    "work": {
        "noun": ["remote work", "open offices", "video meetings", "a four day week", "flexible hours",
                 "team chat apps", "performance reviews", "burnout", "hybrid schedules", "mentoring"],
        "verb": ["boosts", "drains", "reshapes", "improves", "undermines", "changes"],
        "thing": ["productivity", "team culture", "career growth", "work life balance", "hiring",
                  "employee retention"],
    },
    "history": {
        "noun": ["the Roman roads", "medieval trade", "the printing press", "ancient libraries", "the silk road",
                 "early maps", "the steam engine", "old city walls", "clay tablets", "royal archives"],
        "verb": ["shaped", "connected", "preserved", "transformed", "spread", "changed"],
        "thing": ["literacy", "european cities", "religious life", "long distance trade", "later empires",
                  "how people travelled"],
    },
    "software": {
        "noun": ["unit tests", "code review", "continuous integration", "legacy code", "type checking",
                 "technical debt", "pair programming", "logging", "feature flags", "database migrations"],
        "verb": ["catches", "slows", "improves", "hides", "prevents", "changes"],
        "thing": ["bugs", "release cycles", "new developers", "system reliability", "deadlines",
                  "the architecture"],
    },
    "gardening": {
        "noun": ["compost", "raised beds", "tomato plants", "pruning", "mulch", "native flowers", "seed saving",
                 "drip irrigation", "crop rotation", "garden pests"],
        "verb": ["feeds", "protects", "improves", "weakens", "attracts", "changes"],
        "thing": ["the soil", "bees", "the harvest", "root growth", "water use", "the neighbourhood"],
    },
}

# Shared choice pools: every writer can use every option; writers differ only in preference.
CONNECTIVES = ["Additionally,", "Furthermore,", "Moreover,", "However,", "Also,", "So", "But", "Anyway,",
               "In addition,", "Notably,", "Therefore,", "For example,", "Honestly,", "Overall,", "Plus,",
               "Meanwhile,", "Indeed,", "Still,"]
ADJ_SYNONYMS = ["important", "crucial", "key", "vital", "big", "significant", "essential", "major", "huge",
                "notable", "real", "central"]
HEDGES = ["it is worth noting that", "in my experience", "it seems that", "research suggests that",
          "I think", "clearly", "to be fair", "arguably", "in many cases", "generally speaking", "basically",
          "of course"]
OPENERS = ["When it comes to {noun},", "Let's talk about {noun}.", "I have been thinking about {noun}.",
           "{noun} is a topic that comes up often.", "Here is the thing about {noun}:",
           "Many people ask about {noun}.", "So, {noun}.", "Consider {noun}."]
CLOSERS = ["In conclusion, {noun} deserves attention.", "Overall, {noun} matters more than it seems.",
           "Just my two cents.", "Hope this helps!", "That is all for now.",
           "Ultimately, the answer depends on context.", "Thanks for reading.", "Anyway, that's my take."]
TEMPLATES = [
    "{hedge} {noun} {verb} {thing}",
    "{noun} {verb} {thing} in ways that are {adj}",
    "the {adj} point is that {noun} {verb} {thing}",
    "{noun} often {verb} {thing}, and that is {adj}",
    "{thing} depend on {noun} more than we admit",
    "{hedge} the link between {noun} and {thing} is {adj}",
    "nobody expected that {noun} {verb} {thing} so quickly",
    "the data on {noun} and {thing} is {adj}",
]
FILLERS = ["for most people", "over time", "in the long run", "at least at first", "in practice", "right now",
           "more than once", "for a while", "in the end", "every single day", "to some degree", "quite a lot"]


@dataclass(frozen=True)
class Writer:
    """Preferences of one synthetic class; indices point into the shared pools above."""

    words_mean: float  # mean sentence length in words, before fillers
    sentences: tuple[int, int]  # min, max sentences per text
    connectives: tuple[int, ...]
    adjectives: tuple[int, ...]
    hedges: tuple[int, ...]
    templates: tuple[int, ...]
    opener: float  # probability of an opening line
    closer: float  # probability of a closing line
    exclaim: float  # probability a sentence ends with "!"
    question: float
    semicolon: float  # probability two sentences are joined by ";"
    dash: float  # probability of an em-dash aside
    parens: float  # probability of a parenthetical
    bullets: float  # probability the body is formatted as a list
    paragraphs: float  # probability of a paragraph break between sentences
    lowercase_start: float  # probability a sentence starts in lowercase
    typo: float  # probability a word loses a letter
    fillers: tuple[int, ...] = field(default=())


WRITERS: dict[str, Writer] = {
    "human": Writer(9, (3, 7), (5, 6, 7, 12, 14), (4, 8, 10), (4, 6, 10), (6, 4), 0.3, 0.5, 0.15, 0.12, 0.02,
                    0.02, 0.15, 0.0, 0.3, 0.2, 0.04, (3, 5, 7, 9)),
    "chatGPT": Writer(15, (5, 9), (0, 1, 8, 13, 11), (1, 6, 9), (0, 8, 4), (1, 5, 2), 0.6, 0.7, 0.0, 0.02, 0.03,
                      0.01, 0.02, 0.35, 0.4, 0.0, 0.0, (4, 6)),
    "cohere": Writer(13, (4, 7), (2, 9, 16, 10), (3, 7, 11), (5, 9, 11), (2, 7, 0), 0.3, 0.4, 0.0, 0.0, 0.05,
                     0.25, 0.05, 0.1, 0.15, 0.0, 0.0, (1, 10)),
    "davinci": Writer(18, (3, 6), (3, 10, 16, 17), (0, 5, 7), (2, 4, 8), (0, 1, 5), 0.2, 0.3, 0.0, 0.05, 0.25,
                      0.03, 0.15, 0.0, 0.1, 0.0, 0.0, (0, 4, 10)),
    "bloomz": Writer(6, (2, 5), (4, 15), (4, 2, 8), (10, 7), (6, 3, 7), 0.1, 0.1, 0.05, 0.0, 0.0,
                     0.0, 0.0, 0.05, 0.05, 0.1, 0.02, (2, 11)),
    "dolly": Writer(11, (3, 6), (4, 11, 14, 15), (5, 2, 10), (1, 3, 9), (3, 5, 4), 0.4, 0.3, 0.08, 0.08, 0.02,
                    0.05, 0.08, 0.2, 0.2, 0.03, 0.01, (6, 8, 11)),
}


@dataclass(frozen=True)
class CorpusConfig:
    """Sizes and difficulty of the synthetic corpus; the defaults mirror a laptop-sized Subtask B."""

    train_per_class: int = 2000
    test_per_class: int = 500
    seed: int = 13
    style_strength: float = 0.25  # share of choices taken from the writer's own preferences


class _Sampler:
    """Draws one choice: the writer's preference with probability `strength`, else the shared pool."""

    def __init__(self, rng: random.Random, strength: float):
        self.rng = rng
        self.strength = strength

    def pick(self, pool: list[str], preferred: tuple[int, ...]) -> str:
        if preferred and self.rng.random() < self.strength:
            return pool[self.rng.choice(preferred)]
        return self.rng.choice(pool)

    def chance(self, own: float, shared: float = 0.05) -> bool:
        p = own if self.rng.random() < self.strength else shared
        return self.rng.random() < p


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 5:
        return word
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1:]


def _sentence(w: Writer, topic: dict[str, list[str]], s: _Sampler, first: bool) -> str:
    rng = s.rng
    slots = {
        "noun": rng.choice(topic["noun"]),
        "verb": rng.choice(topic["verb"]),
        "thing": rng.choice(topic["thing"]),
        "adj": s.pick(ADJ_SYNONYMS, w.adjectives),
        "hedge": s.pick(HEDGES, w.hedges),
    }
    text = s.pick(TEMPLATES, w.templates).format(**slots)
    # Pad toward the writer's sentence length with fillers and a second clause.
    target = max(4, int(rng.gauss(w.words_mean, w.words_mean / 4)))
    while len(text.split()) < target:
        if rng.random() < 0.5:
            text += " " + s.pick(FILLERS, w.fillers)
        else:
            text += f" because {rng.choice(topic['noun'])} {rng.choice(topic['verb'])} {rng.choice(topic['thing'])}"
    if s.chance(w.parens):
        text += f" ({s.pick(FILLERS, w.fillers)})"
    if s.chance(w.dash):
        text += f" — {s.pick(HEDGES, w.hedges)} {rng.choice(topic['thing'])}"
    if not first and s.chance(0.6, 0.3):
        text = s.pick(CONNECTIVES, w.connectives) + " " + text
    if w.typo and s.chance(w.typo * 10, 0.0):
        words = text.split()
        j = rng.randrange(len(words))
        words[j] = _typo(words[j], rng)
        text = " ".join(words)
    if not s.chance(w.lowercase_start, 0.0):
        text = text[0].upper() + text[1:]
    end = "!" if s.chance(w.exclaim, 0.02) else "?" if s.chance(w.question, 0.02) else "."
    return text + end


def write_text(writer: Writer, topic: dict[str, list[str]], s: _Sampler) -> str:
    """One document by one writer on one topic."""
    rng = s.rng
    n = rng.randint(*writer.sentences)
    sentences = [_sentence(writer, topic, s, first=i == 0) for i in range(n)]
    parts: list[str] = []
    if s.chance(writer.opener, 0.2):
        parts.append(s.pick(OPENERS, ()).format(noun=rng.choice(topic["noun"])))
    if s.chance(writer.bullets, 0.03) and n >= 3:
        numbered = rng.random() < 0.5
        body = "\n".join(f"{i + 1}. {x}" if numbered else f"- {x}" for i, x in enumerate(sentences))
        parts.append(body)
    else:
        text = sentences[0]
        for x in sentences[1:]:
            if s.chance(writer.semicolon, 0.03):
                text = text[:-1] + "; " + x[0].lower() + x[1:]
            elif s.chance(writer.paragraphs, 0.1):
                text += "\n\n" + x
            else:
                text += " " + x
        parts.append(text)
    if s.chance(writer.closer, 0.2):
        parts.append(s.pick(CLOSERS, ()).format(noun=rng.choice(topic["noun"])))
    sep = "\n\n" if "\n" in parts[-1] or len(parts) > 2 else " "
    return sep.join(parts)


def _generate(per_class: int, rng: random.Random, strength: float, split: str,
              on_class: Callable[[], None]) -> list[dict]:
    rows = []
    topics = list(TOPICS.values())
    s = _Sampler(rng, strength)
    for label_id, name in enumerate(SEMEVAL_LABELS):
        on_class()
        writer = WRITERS[name]
        for i in range(per_class):
            rows.append({
                "id": f"synthetic-{split}-{name}-{i}",
                "text": write_text(writer, rng.choice(topics), s),
                "model": name,
                "source": "synthetic",
                "label": label_id,
            })
    rng.shuffle(rows)
    return rows


def generate(config: CorpusConfig = CorpusConfig(), on_progress: Callable[[int, int], None] | None = None
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and test frames in the Subtask B row shape; the same config always gives the same texts.
    `on_progress(done, total)` hears of each class of each split as it starts."""
    rng = random.Random(config.seed)
    total, done = 2 * len(SEMEVAL_LABELS), [0]

    def on_class() -> None:
        if on_progress is not None:
            on_progress(done[0], total)
        done[0] += 1

    train = _generate(config.train_per_class, rng, config.style_strength, "train", on_class)
    test = _generate(config.test_per_class, rng, config.style_strength, "test", on_class)
    return pd.DataFrame(train), pd.DataFrame(test)
