"""Shared fixtures: an isolated studio home, small datasets, and the real M4 sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.data import CorpusConfig, builtin_dataset
from core.paths import REPO_ROOT

M4_DIR = REPO_ROOT.parent / "shared" / "data" / "m4-sample"


@pytest.fixture(autouse=True)
def studio_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own studio home, so no test sees another's cache or runs."""
    home = tmp_path / "home"
    monkeypatch.setenv("STUDIO_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def small_builtin():
    return builtin_dataset(CorpusConfig(train_per_class=60, test_per_class=20))


@pytest.fixture(scope="session")
def m4_dir() -> Path:
    if not (M4_DIR / "train.jsonl").exists():
        pytest.skip(f"the shared M4 sample is not at {M4_DIR}")
    return M4_DIR


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def semeval_rows(n_per_class: int = 3, labels: tuple[int, ...] = (0, 1, 2)) -> list[dict]:
    names = ("human", "chatGPT", "cohere", "davinci", "bloomz", "dolly")
    return [{"id": f"{lab}-{i}", "text": f"text number {i} written by {names[lab]}", "model": names[lab],
             "source": "wikipedia" if i % 2 else "reddit", "label": lab}
            for lab in labels for i in range(n_per_class)]


def make_tiny_backbone(folder: Path) -> Path:
    """A random 2-layer, hidden-32 BERT with the MiniLM tokenizer: the real code paths in a blink."""
    import torch
    from transformers import BertConfig, BertModel

    from core.backbone import load_tokenizer

    tokenizer = load_tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_backbone(tmp_path_factory) -> Path:
    return make_tiny_backbone(tmp_path_factory.mktemp("tiny-bert"))
