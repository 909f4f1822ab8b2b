"""Resolving a config as it will run. It reads the training texts (max length `auto`), the local model cache
and the device: only what launches or trains runs imports it, not what lists or compares them."""

from pathlib import Path

from core.backbone import backbone_label, depth, prepare_backbone
from core.backbone.device import pick_device, pinned_precision
from core.backbone.engine_choice import auto_engine
from core.backbone.packaged import CAUSAL_EXAMPLES
from core.backbone.poolings import pooled_layer
from core.errors import InputError
from core.train.config import TrainConfig, cut_layers
from core.train.inputs import load_data
from core.train.maxlen import max_length_for
from core.train.methods import method_for


def resolve(config: TrainConfig, home: Path) -> TrainConfig:
    """The config as it will run, resolved once at launch (a sweep's grid, the CLI's `train`) and stored so:
    the data's paths from the root, the method's defaults and budget (`settle`), this machine's backbone
    snapshot and precision, and max length `auto` from the training texts (read with the backbone's tokenizer, a
    packaged one converted under the studio `home` for it). Every later reader (the registry, the worker, `train`)
    takes the stored config as it is."""
    method = method_for(config)
    config = method.settle(config.with_(data=config.data.absolute()))
    if method.encoder == "none":  # no encoder reads tokens: the max length, precision and engine mean nothing to it
        return config.with_(max_len=None, precision="auto", encoder_engine="torch")
    check_causal(config)
    return with_max_len(pinned(config, home), home)


def check_causal(config: TrainConfig) -> None:
    """Token probabilities are frozen features and need a causal LM, and a pooled layer must be one the backbone
    has. A causal LM (SmolLM2) trains like any encoder, on a GPU or a CPU, cut at the layer its head reads; what it
    costs here is the run's estimate (`core.compare.advice.training_notes` say it where the CPU has no native bf16)."""
    if config.features != "hidden" and not config.frozen:  # after `settle`: a frozen-only method is frozen by then
        raise InputError("token-probability features are frozen features: turn on frozen-feature mode")
    layers, causal = depth(config.backbone)
    if config.features != "hidden" and not causal:
        raise InputError(f"token-probability features need a causal LM backbone (such as {CAUSAL_EXAMPLES}); "
                         f"{backbone_label(config.backbone)} is an encoder, which scores no tokens")
    pooled = pooled_layer(config.resolved_pooling)
    if pooled is not None and layers and not 1 <= pooled <= layers:
        raise InputError(f"pooled layer must be between 1 and {layers} for this backbone, got {pooled}")
    runs, _ = cut_layers(config)
    if config.train_layers and not config.frozen and runs and config.train_layers >= runs:
        raise InputError(f"trained layers (K) must be fewer than the {runs} layers this run's encoder runs"
                         + (f" (up to layer {pooled}, the one its pooling reads)" if pooled and pooled < layers else "")
                         + f", got {config.train_layers}; 0 trains every layer")


def is_resolved(config: TrainConfig) -> bool:
    """Whether `resolve` has nothing left to do that can be told without the data or the disk (`train` refuses
    a config that is not)."""
    method = method_for(config)
    if not config.data.is_absolute or method.settle(config) != config:
        return False
    if method.encoder == "none":  # reads no tokens: no precision or max length to pin
        return config.max_len is None
    return config.precision != "auto" and config.max_len is not None and config.encoder_engine != "auto"


def with_max_len(config: TrainConfig, home: Path) -> TrainConfig:
    """Max length `auto` resolved from the training texts (`core.train.maxlen`); a number stays."""
    if config.max_len is not None:
        return config
    ds = load_data(config, home, need_test=False)
    backbone = prepare_backbone(config.backbone, config.revision, home=home)
    return config.with_(max_len=max_length_for(ds, backbone, None).tokens)


def pinned(config: TrainConfig, home: Path) -> TrainConfig:
    """What depends on this machine, fixed at launch so every run of a sweep and every reload agree: the
    cached snapshot a hub id resolves to (an error naming how to get it when it is not cached), and the
    precision `auto` means on the run's device."""
    revision, device = config.resolved_backbone(home).revision, pick_device(config.device)
    # an encoder that trains runs in torch; frozen features come from the engine `auto` names on this machine
    engine = "torch" if not config.frozen or depth(config.backbone)[1] else auto_engine(device) \
        if config.encoder_engine == "auto" else config.encoder_engine  # a causal LM is not exported to ONNX
    precision = "fp32" if engine != "torch" else pinned_precision(config.precision, device)  # ONNX Runtime's is fp32
    return config.with_(revision=revision, precision=precision, encoder_engine=engine)
