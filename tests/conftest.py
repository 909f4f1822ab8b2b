"""Shared fixtures: an isolated studio home, small datasets, and the real M4 sample."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from time import monotonic, sleep  # bound here: a test may patch time.monotonic until its fixtures end

import pytest

from core.environment import prepare

prepare()  # as every entry point does, before anything imports torch
from core.data import CorpusConfig, builtin_dataset  # noqa: E402
from core.paths import REPO_ROOT, home_from_environment  # noqa: E402
from tests.helpers import make_tiny_backbone, need_shared  # noqa: E402

M4_DIR = REPO_ROOT.parent / "shared" / "data" / "m4-sample"
L2R_DIR = REPO_ROOT.parent / "shared" / "data" / "l2r"


# what `make test-fast` leaves out, told from the fixtures a test uses (the other markers are written on the tests)
MARKED_BY_FIXTURE = {"m4_dir": "corpus", "l2r_dir": "corpus", "ray_cluster": "ray"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in {MARKED_BY_FIXTURE[f] for f in getattr(item, "fixturenames", ()) if f in MARKED_BY_FIXTURE}:
            item.add_marker(name)


@pytest.fixture(autouse=True)
def studio_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own studio home, so no test sees another's cache or runs; a worker a test started there
    (`python -m core runs` starts queued runs) is stopped when the test ends: left, one trained on through the
    next tests and a benchmark."""
    home = tmp_path / "home"
    monkeypatch.setenv("STUDIO_HOME", str(home))
    yield home
    if home.exists():
        stop_processes_of(home)


def stop_processes_of(home: Path) -> None:
    """SIGTERM to every process whose environment names `home` as its studio home (Linux's /proc; elsewhere none).

    A worker started just before the test ended may be mid-exec: its fds are closed, so Popen has returned, but the
    kernel has not yet filled the new image's environ, which reads empty. Such processes (neither kernel threads
    nor zombies, whose environ is empty for good) are read again until their environ appears, for up to 2 s."""
    mine = f"STUDIO_HOME={home}".encode()
    pending = [entry for entry in Path("/proc").glob("[0-9]*") if int(entry.name) != os.getpid()]
    deadline = monotonic() + 2.0
    while pending:
        unfilled = []
        for entry in pending:
            try:
                environ = (entry / "environ").read_bytes()
                if not environ:
                    state, flags = _state_and_flags(entry)
                    if state != "Z" and not flags & PF_KTHREAD:
                        unfilled.append(entry)
                elif mine in environ.split(b"\0"):
                    os.kill(int(entry.name), signal.SIGTERM)
            except (OSError, ValueError):
                continue  # gone, or not ours to read
        if not unfilled or monotonic() > deadline:
            return
        pending = unfilled
        sleep(0.01)


PF_KTHREAD = 0x00200000  # a kernel thread: no user memory, so an environ that is always empty


def _state_and_flags(entry: Path) -> tuple[str, int]:
    """A process's state letter and kernel flags from /proc/<pid>/stat (fields 3 and 9; the name may hold spaces)."""
    fields = (entry / "stat").read_text().rpartition(")")[2].split()
    return fields[0], int(fields[6])


@pytest.fixture(scope="session")
def small_builtin():
    return builtin_dataset(CorpusConfig(train_per_class=60, test_per_class=20), home_from_environment())


@pytest.fixture(scope="session")
def m4_dir() -> Path:
    need_shared(M4_DIR / "train.jsonl", "the shared M4 sample")
    return M4_DIR


@pytest.fixture(scope="session")
def l2r_dir() -> Path:
    need_shared(L2R_DIR / "train.jsonl", "the shared L2R corpus")
    return L2R_DIR


@pytest.fixture(scope="session")
def tiny_backbone(tmp_path_factory) -> Path:
    return make_tiny_backbone(tmp_path_factory.mktemp("tiny-bert"))


# ------------------------------------------------------------ a local Hugging Face hub cache

def tiny_family(family: str, folder: Path) -> Path:
    """A random 2-layer, hidden-32 encoder of one family with a tokenizer of its own kind: RoBERTa gets a
    byte-level BPE trained here (pad id 1, <s> … </s>); the WordPiece families reuse MiniLM's vocabulary
    through their own tokenizer classes (DistilBERT's returns no token type ids)."""
    import torch
    from transformers import (
        BertConfig,
        BertModel,
        DebertaV2Config,
        DebertaV2Model,
        DistilBertConfig,
        DistilBertModel,
        DistilBertTokenizerFast,
        ElectraConfig,
        ElectraModel,
        ElectraTokenizerFast,
        RobertaConfig,
        RobertaModel,
        RobertaTokenizerFast,
    )

    from core.backbone.packaged import MINILM, package_file
    from core.data import CorpusConfig, builtin_dataset

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    size = dict(num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=514)
    minilm = str(package_file(MINILM))
    if family == "roberta":
        from tokenizers import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer()
        corpus = builtin_dataset(CorpusConfig(train_per_class=20, test_per_class=1), home_from_environment())
        texts = corpus.train["text"].tolist()
        bpe.train_from_iterator(texts, vocab_size=600, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        bpe.save_model(str(folder))
        tokenizer = RobertaTokenizerFast(vocab_file=str(folder / "vocab.json"), merges_file=str(folder / "merges.txt"),
                                         model_max_length=512)
        model = RobertaModel(RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, pad_token_id=1, bos_token_id=0,
                                           eos_token_id=2, type_vocab_size=1, **size))
    elif family == "distilbert":
        tokenizer = DistilBertTokenizerFast.from_pretrained(minilm, local_files_only=True)
        model = DistilBertModel(DistilBertConfig(vocab_size=tokenizer.vocab_size, dim=32, n_layers=2, n_heads=2,
                                                 hidden_dim=64, max_position_embeddings=512))
    elif family == "electra":  # embeddings narrower than the hidden size, projected up
        tokenizer = ElectraTokenizerFast.from_pretrained(minilm, local_files_only=True)
        model = ElectraModel(ElectraConfig(vocab_size=tokenizer.vocab_size, embedding_size=16, hidden_size=32, **size))
    elif family == "deberta-v2":
        from transformers import BertTokenizerFast

        tokenizer = BertTokenizerFast.from_pretrained(minilm, local_files_only=True)
        model = DebertaV2Model(DebertaV2Config(vocab_size=tokenizer.vocab_size, hidden_size=32, relative_attention=True,
                                               position_buckets=64, pos_att_type=["p2c", "c2p"], type_vocab_size=0,
                                               **size))
    else:
        from transformers import BertTokenizerFast

        tokenizer = BertTokenizerFast.from_pretrained(minilm, local_files_only=True)
        model = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, **size))
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def place_in_hub(hub: Path, hub_id: str, files: Path, commit: str, main: bool = True) -> Path:
    """Lay a model folder out as the Hugging Face cache does: content-named blobs, a snapshot of symlinks
    named by its commit, and refs/main naming the commit."""
    import hashlib
    import os

    repo = hub / ("models--" + hub_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in sorted(p for p in files.rglob("*") if p.is_file()):
        data = path.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / path.relative_to(files)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if main:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(commit)
    return snapshot


HUB_FAMILIES = ("bert", "roberta", "distilbert", "electra", "deberta-v2")


@pytest.fixture(scope="session")
def hub_models(tmp_path_factory) -> Path:
    """Tiny models of every family, built once: `<root>/<family>/`."""
    root = tmp_path_factory.mktemp("tiny-families")
    for family in HUB_FAMILIES:
        tiny_family(family, root / family)
    return root


def commit_of(family: str, n: int = 0) -> str:
    import hashlib

    return hashlib.sha1(f"{family}-{n}".encode()).hexdigest()


@pytest.fixture
def hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hub_models: Path) -> Path:
    """A temporary HF_HOME whose hub cache holds `studio-test/tiny-<family>` for every family, plus a
    cached decoder model the model picker must not offer."""
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    for family in HUB_FAMILIES:
        place_in_hub(home / "hub", f"studio-test/tiny-{family}", hub_models / family, commit_of(family))
    decoder = tmp_path / "gpt2"
    decoder.mkdir()
    (decoder / "config.json").write_text('{"model_type": "gpt2"}')
    place_in_hub(home / "hub", "studio-test/tiny-gpt2", decoder, commit_of("gpt2"))
    return home


# ---------------------------------------------------------------- a home written by main before issue 97

FIXTURE_V2 = Path(__file__).parent / "fixtures" / "home-v2"
TINY_V2 = {"bert": Path("/tmp/gan-bert-studio-v2-tiny-bert"), "llama": Path("/tmp/gan-bert-studio-v2-tiny-llama")}


@pytest.fixture
def home_v2(studio_home: Path) -> Path:
    import shutil

    from tests.helpers import make_tiny_backbone, make_tiny_llama

    shutil.copytree(FIXTURE_V2, studio_home)
    for folder, make in zip(TINY_V2.values(), (make_tiny_backbone, make_tiny_llama)):
        if not (folder / "config.json").exists():
            make(folder)  # the same seeded weights its runs trained on
    return studio_home
