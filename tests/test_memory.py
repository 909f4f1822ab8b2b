"""A training step's memory: the estimate, and gradient checkpointing only when the step would not fit, with
the gradients it would have had."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoConfig

from core.backbone.encode import load_encoder
from core.backbone.packaged import MINILM, package_file
from core.data import CorpusConfig, DataSpec
from core.runs import RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, memory, resolve
from core.train.methods.specs import CHECKPOINT_SLOWDOWN

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))
GIB = 2 ** 30


def test_the_estimate_is_the_measured_step_of_minilm():
    """bench/speed/memory.py measured 5.79 GiB above the model for 16 × 512 tokens and 0.32 GiB for 4 × 128 (fp32);
    activations grow with the batch, and attention's with the square of the length."""
    config = AutoConfig.from_pretrained(str(package_file(MINILM)), local_files_only=True)
    params = 22_713_216
    assert memory.step_bytes(config, 16, 512, params) / GIB == pytest.approx(5.79, rel=0.05)
    assert memory.step_bytes(config, 4, 128, params) / GIB == pytest.approx(0.32, rel=0.15)
    one, two = (memory.step_bytes(config, n, 512, 0) for n in (1, 2))
    assert two == pytest.approx(2 * one)
    assert memory.step_bytes(config, 1, 1024, 0) > 2 * memory.step_bytes(config, 1, 512, 0)


def test_checkpointing_keeps_the_gradients(tiny_backbone):
    """Dropout masks are replayed in the recomputation, so a step's gradients are those without it."""
    def gradients(checkpointing: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        encoder = load_encoder(tiny_backbone).train()
        assert encoder.config.hidden_dropout_prob > 0
        if checkpointing:
            encoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        ids = torch.randint(1000, 2000, (4, 24))
        encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state.pow(2).mean().backward()
        return [p.grad for p in encoder.parameters() if p.grad is not None]

    plain, checkpointed = gradients(False), gradients(True)
    assert len(plain) == len(checkpointed) > 10
    for a, b in zip(plain, checkpointed):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("free_gib, on", [(0.001, True), (1000.0, False)])
def test_a_run_checkpoints_only_when_its_step_would_not_fit(tiny_backbone, tmp_path, monkeypatch, free_gib, on,
                                                            studio_home):
    monkeypatch.setattr(memory, "free_bytes", lambda device: free_gib * GIB)
    events: list[dict] = []
    config = resolve(TrainConfig(data=DATA, backbone=str(tiny_backbone), method="ganbert", frozen=False,
                                 fraction=0.3, steps=3, evaluations=1, max_len=64, precision="fp32"), studio_home)
    result = train_into(config, RunFolder(tmp_path), studio_home, events.append, lambda: False)
    assert result["gradient_checkpointing"] is on
    said = [e["message"] for e in events if e.get("type") == "status" and e["message"].startswith("memory:")]
    assert len(said) == 1 and ("gradient checkpointing on" in said[0]) is on
    assert "16 texts × 64 tokens" in said[0]


def test_a_frozen_run_holds_no_encoder_activations(tiny_backbone, tmp_path, monkeypatch, studio_home):
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1.0)
    config = resolve(TrainConfig(data=DATA, backbone=str(tiny_backbone), method="finetune", frozen=True,
                                 fraction=0.3, steps=3, evaluations=1, max_len=64, precision="fp32"), studio_home)
    result = train_into(config, RunFolder(tmp_path), studio_home, lambda e: None, lambda: False)
    assert result["gradient_checkpointing"] is False


def test_the_parameters_told_from_the_shape_are_minilms():
    shape = AutoConfig.from_pretrained(str(package_file(MINILM)), local_files_only=True)
    assert memory.shape_parameters(shape) == pytest.approx(22_713_216, rel=0.03)


@pytest.mark.parametrize("free_gib, on", [(0.001, True), (1000.0, False)])
def test_a_grids_estimate_counts_the_checkpointing_its_runs_would_turn_on(monkeypatch, free_gib, on, studio_home):
    """The Train page's estimate before launch: a trained-encoder step that would not fit here trains at
    CHECKPOINT_SLOWDOWN the seconds; evaluation is untouched, and frozen runs and LR never checkpoint."""
    from core.runs.estimate import checkpoints, planned_rows, run_seconds
    from core.train import method_for

    monkeypatch.setattr(memory, "free_bytes", lambda device: free_gib * GIB)
    trained = resolve(TrainConfig(data=DATA, method="ganbert", per_class=5, fraction=None, max_len=512), studio_home)
    assert checkpoints(trained) is on
    method = method_for(trained)
    plain, slowed = (method.seconds(trained, 30, 970, 100, 100, c) for c in (False, True))
    assert planned_rows(trained, 1000, 100, 100, 6) == (30, 970, 30, 100)  # validates on 5/class of the split
    assert run_seconds(trained, (30, 970, 100, 100)) == (slowed if on else plain)
    evaluation = (trained.evaluations * 100 + 100) / (49.0 / 4)
    assert slowed - evaluation == pytest.approx(CHECKPOINT_SLOWDOWN * (plain - evaluation))
    for never in (trained.with_(frozen=True),
                  resolve(TrainConfig(data=DATA, method="features-lr", max_len=512), studio_home)):
        assert checkpoints(never) is False
    setfit = resolve(TrainConfig(data=DATA, method="setfit", per_class=5, fraction=None, max_len=512), studio_home)
    assert method_for(setfit).step_sequences(setfit) == 2 * setfit.batch_size  # both texts of each pair


def test_a_pass_over_many_texts_streams_them_into_the_store(tmp_path, monkeypatch):
    """Encoding holds one chunk of texts at a time and stores each as it ends: the pass's memory does not grow
    with the file, and one interrupted keeps what it finished, encoding only the rest when run again."""
    from core.train import feature_store as features

    monkeypatch.setattr(features, "STREAM_TEXTS", 3)
    texts = [f"text number {i}" for i in range(8)]
    seen, progress = [], []

    def encode(chunk: list[str], on_progress) -> np.ndarray:
        if len(seen) == 2 and fail:
            raise RuntimeError("interrupted")
        seen.append(chunk)
        on_progress(len(chunk), len(chunk))
        return np.array([[float(t.split()[-1])] for t in chunk], np.float32)

    fail = True
    with pytest.raises(RuntimeError):
        features.cached_features({"test": texts}, tmp_path, encode, on_progress=lambda d, t: progress.append((d, t)))
    assert [len(c) for c in seen] == [3, 3] and len(list(tmp_path.glob("*.safetensors"))) == 2
    assert progress == [(0, 8), (3, 8), (6, 8)]
    fail, seen[:] = False, []
    out = features.cached_features({"test": texts}, tmp_path, encode)
    assert [len(c) for c in seen] == [2]  # the six stored are read, not encoded again
    assert out["test"][:, 0].tolist() == list(range(8))
