"""The CUDA path, each part against the same config's CPU result: every method trains a few steps on the device
(tiny BERT; MiniLM under `integration`), its model placed there, bf16 autocast on, GAN-BERT's two optimizers
apart with the generator's noise on the device, a background worker that reports, cancel, a reload that predicts
as the run did, and the memory plan and time estimate reading the device.

Marked `gpu`: skipped without CUDA. The GPU check's dry run (`make gpu-check CPU=1`) sets
`STUDIO_TEST_DEVICE=cpu`, so the same code runs on a CPU there and cannot rot between GPU sessions."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest
import torch

from core import runs as jobs
from core.data import CorpusConfig, DataSpec
from core.paths import home_from_environment
from core.runs import Registry, RunFolder
from core.runs.execute import train_into
from core.train import TrainConfig, load_data, method_for, resolve, split_pool
from core.train.model import StudioModel
from tests.helpers import LONG, active_run, recorded_optimizers, submit, tail_log, wait_for, without_d_loss

pytestmark = pytest.mark.gpu

DATA = DataSpec(builtin=CorpusConfig(train_per_class=30, test_per_class=10))
METHODS = {
    "fine-tuning": dict(method="finetune"),
    "trained head": dict(method="finetune", frozen=True),
    "GAN-BERT G1": dict(method="ganbert", generator="noise"),
    "GAN-BERT G2 frozen": dict(method="ganbert", generator="bow", frozen=True),
    "GAN-BERT control": dict(method="ganbert", adversarial=False),
    "adapters": dict(method="adapter"),
    "SetFit": dict(method="setfit"),
    "features + LR": dict(method="features-lr", frozen=True),
}
NEEDS = {"adapters": "adapters", "SetFit": "setfit"}  # a library the machine may lack


@pytest.fixture
def device() -> str:
    """CUDA where there is one; else the device `STUDIO_TEST_DEVICE` names (the dry run's cpu); else skip."""
    if torch.cuda.is_available():
        return "cuda"
    if wanted := os.environ.get("STUDIO_TEST_DEVICE"):
        return wanted
    pytest.skip("no CUDA device (STUDIO_TEST_DEVICE=cpu runs these on the CPU, as the GPU check's dry run does)")


def importable(library: str) -> bool:
    """Whether a library imports: absent, or broken beside this transformers (adapters beside 5.x), it does not."""
    try:
        importlib.import_module(library)
    except ImportError:
        return False
    return True


def config(backbone, device: str, **kw) -> TrainConfig:
    base = dict(data=DATA, backbone=None if backbone is None else str(backbone), fraction=0.3, steps=6,
                batch_size=8, max_len=64, evaluations=2, precision="fp32", device=device, seed=0)
    return resolve(TrainConfig.of(**{**base, **kw}), home_from_environment())


def trained(cfg: TrainConfig, folder, monkeypatch) -> tuple[dict, np.ndarray, set[str]]:
    """A run's result, its test probabilities, and the devices its model's weights were on when it trained (noted
    for this run alone: a patch left in place would note the next run's devices too, and a CPU run after a GPU
    one would show the GPU's weights 'on the CPU', which only a CUDA machine sees)."""
    placed: set[str] = set()
    real = StudioModel.train

    def noting(self, mode: bool = True):
        placed.update(p.device.type for p in self.parameters())
        return real(self, mode)
    with monkeypatch.context() as patched:
        patched.setattr(StudioModel, "train", noting)
        result = train_into(cfg, RunFolder(folder), home_from_environment(), lambda e: None, lambda: False)
    frame = RunFolder(folder).predictions()
    return result, frame[[c for c in frame.columns if c.startswith("p_")]].to_numpy(), placed


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_trains_on_the_device_as_on_the_cpu(name, device, tiny_backbone, tmp_path, monkeypatch):
    if name in NEEDS and not importable(NEEDS[name]):
        pytest.skip(f"{NEEDS[name]} does not import here")
    on_device, probs, placed = trained(config(tiny_backbone, device, **METHODS[name]), tmp_path / device, monkeypatch)
    on_cpu, cpu_probs, _ = trained(config(tiny_backbone, "cpu", **METHODS[name]), tmp_path / "cpu", monkeypatch)
    if METHODS[name]["method"] in ("finetune", "ganbert", "adapter"):  # the methods of a StudioModel
        assert placed == {device}
    assert on_device["test"]["accuracy"] == pytest.approx(on_cpu["test"]["accuracy"], abs=0.1)
    assert probs == pytest.approx(cpu_probs, abs=apart(METHODS[name]))


def apart(settings: dict) -> float:
    """How far a device run's test probabilities may stand from the CPU run's, both fp32. CUDA draws dropout masks
    and the generator's noise from its own stream, not the CPU's, so the runs differ by those draws: with the
    encoder training at 5e-5 over 6 steps they moved the probabilities less than 0.02 on the H200; a head on frozen
    features learns at 3e-4 or more, and there they moved up to 0.05 (the tiny BERT's trained head) and 0.098
    (MiniLM's frozen GAN-BERT)."""
    return 0.1 if settings.get("frozen") else 0.02


def test_bf16_autocast_on_the_device(device, tiny_backbone, tmp_path, monkeypatch):
    """`auto` pins bf16 on a GPU with it; the encoder then runs under bf16 autocast there, and its predictions
    stay within bf16's tolerance of the fp32 CPU run's."""
    if device == "cuda":
        assert config(tiny_backbone, device, method="finetune", precision="auto").precision == "bf16"
    seen: set = set()
    real = StudioModel.encode

    def noting(self, *args, **kwargs):
        seen.add((torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(StudioModel, "encode", noting)
    _, probs, _ = trained(config(tiny_backbone, device, method="finetune", precision="bf16"), tmp_path / "bf16",
                          monkeypatch)
    assert (True, torch.bfloat16) in seen
    _, fp32, _ = trained(config(tiny_backbone, "cpu", method="finetune"), tmp_path / "fp32", monkeypatch)
    assert probs == pytest.approx(fp32, abs=0.1)


def test_ganbert_keeps_its_two_optimizers_apart_with_the_noise_on_the_device(device, tiny_backbone, monkeypatch,
                                                                             studio_home):
    """The `tf` preset's separate gradients on the device: with D's loss zeroed, one step moves G and leaves D's
    logits where weight decay alone puts them; G's noise is drawn on the device (a CPU tensor would stop the step
    on a GPU)."""
    from core.train.methods import ganbert

    without_d_loss(monkeypatch)
    made = recorded_optimizers(monkeypatch)
    cfg = config(tiny_backbone, device, method="ganbert", gan_preset="tf", warmup=0.0, steps=10)
    method = ganbert.GanBert(method_for(cfg))
    torch.manual_seed(0)
    labels = split_pool(cfg, load_data(cfg, studio_home)).labels
    model = method.build_model(cfg, labels, torch.device(device), studio_home)
    step = method.start(model, cfg, split_pool(cfg, load_data(cfg, studio_home)), 10)
    d_before = model.head.logits.weight.detach().clone()
    g_before = [p.detach().clone() for p in model.generator.parameters()]
    step(torch.randn(8, model.feature_dim, device=device), torch.tensor([0, 1, -1, -1, 0, -1, 1, -1], device=device))
    rate = made[0].param_groups[0]["lr"]  # D's optimizer, made first
    assert rate > 0 and model.head.logits.weight.device.type == device
    assert torch.allclose(model.head.logits.weight, d_before * (1 - rate * 0.01), rtol=0, atol=1e-6)
    assert any(not torch.equal(p, q) for p, q in zip(model.generator.parameters(), g_before))


def test_a_background_worker_on_the_device_reports_and_its_reload_predicts_as_it_did(device, tiny_backbone,
                                                                                      studio_home):
    reg = Registry(studio_home)
    run_id = submit(reg, config(tiny_backbone, device, method="ganbert", generator="noise"))
    run = wait_for(lambda: (r := reg.get(run_id)).status in ("done", "failed", "interrupted") and r, timeout=300,
                   what="the run's end")
    assert run.status == "done", tail_log(reg, run_id)
    assert reg.evaluations(run_id) and run.metrics["test"]["accuracy"] > 0
    assert run.device.startswith("GPU") if device == "cuda" else run.device.startswith("CPU")
    saved = reg.folder(run_id).predictions()
    texts = load_data(run.config, studio_home).test["text"].tolist()
    for where in (device, "cpu"):
        model = reg.folder(run_id).load_model(studio_home, where)
        probs = np.array([model.predict([t])[0][0] for t in texts[:8]])
        expected = saved[[f"p_{n}" for n in model.labels]].to_numpy()[:8]
        assert probs == pytest.approx(expected, abs=1e-3 if where == device else 0.02), where


def test_cancel_on_the_device(device, tiny_backbone, studio_home):
    reg = Registry(studio_home)
    run_id = submit(reg, config(tiny_backbone, device, method="finetune", frozen=True, fraction=0.5, **LONG))
    wait_for(lambda: active_run(reg, run_id).status == "running", timeout=120, what="running")
    assert jobs.cancel(reg, run_id, grace=60) == "cancelled"


def test_the_memory_plan_and_the_estimate_read_the_device(device, tiny_backbone):
    from core.runs.estimate import checkpoints, planned_rows, run_seconds
    from core.train.memory import free_bytes

    free = free_bytes(torch.device(device))
    assert free > 0
    if device == "cuda":
        assert free == pytest.approx(torch.cuda.mem_get_info()[0], rel=0.05)
    cfg = config(tiny_backbone, device, method="ganbert", generator="noise")
    assert not checkpoints(cfg)  # a tiny BERT fits anywhere
    seconds = run_seconds(cfg, planned_rows(cfg, pool=180, split=None, test=60, classes=6))
    more = run_seconds(cfg, planned_rows(cfg, pool=1_800, split=None, test=600, classes=6))
    assert 0 < seconds < more  # the estimate reads the run's data: ten times the texts take longer


@pytest.mark.parametrize("method", ["setfit", "finetune"])
def test_a_causal_lm_trains_as_an_encoder_on_the_device(method, device, tmp_path, monkeypatch):
    """SmolLM2's code path (a tiny random Llama) with its body training: SetFit's contrastive step and fine-tuning
    run on the device as on the CPU."""
    from tests.helpers import make_tiny_llama

    if method == "setfit" and not importable("setfit"):
        pytest.skip("setfit does not import here")
    llama = make_tiny_llama(tmp_path / "llama")
    on_device, probs, _ = trained(config(llama, device, method=method), tmp_path / device, monkeypatch)
    on_cpu, cpu_probs, _ = trained(config(llama, "cpu", method=method), tmp_path / "cpu", monkeypatch)
    assert probs == pytest.approx(cpu_probs, abs=0.02)
    assert on_device["test"]["accuracy"] == pytest.approx(on_cpu["test"]["accuracy"], abs=0.1)


@pytest.mark.integration
@pytest.mark.parametrize("frozen", [True, False])
def test_minilm_trains_on_the_device_as_on_the_cpu(frozen, device, tmp_path, monkeypatch):
    kw = dict(method="ganbert", generator="noise", frozen=frozen, steps=4, max_len=128)
    on_device, probs, placed = trained(config(None, device, **kw), tmp_path / device, monkeypatch)
    on_cpu, cpu_probs, _ = trained(config(None, "cpu", **kw), tmp_path / "cpu", monkeypatch)
    assert placed == {device}
    assert probs == pytest.approx(cpu_probs, abs=apart(kw))
    assert on_device["test"]["accuracy"] == pytest.approx(on_cpu["test"]["accuracy"], abs=0.1)
