"""Encoding engines for frozen features: the backbone in torch (eager, at the run's precision), or exported once to
ONNX and run by ONNX Runtime's CPU provider with its graph optimisations, in fp32 or with int8 weights (dynamic
quantisation). Every engine returns the same encoder outputs (every layer's hidden states, and the pooler's when
the model has one), so pooling, and so every method, reads them alike.

The export is made once per backbone (its axes are dynamic: any batch, any length up to the model's positions) and
kept under the studio home, keyed by the backbone's identity. A family whose export fails falls back to torch,
and the caller is told so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from core.backbone.cut import Cut
from core.backbone.encode import load_cut, load_tokenizer, pool
from core.backbone.locate import Backbone, found_store
from core.backbone.poolings import last_layer, reads_probabilities
from core.paths import replace_durably

ENGINES = ("torch", "onnx", "onnx-int8")
EXPORT_DIR = "onnx"  # under the studio home


class ExportError(RuntimeError):
    """The backbone's family could not be exported to ONNX: its runs encode with torch."""


def export_folder(backbone: Backbone, home: Path) -> Path:
    """The backbone's export under a studio home (or an earlier studio's, keyed without modification times, used
    where it lies: `found_store`)."""
    def keyed(identity: str) -> Path:
        return home / EXPORT_DIR / hashlib.sha1(identity.encode()).hexdigest()[:16]
    return found_store(keyed(backbone.identity), [keyed(i) for i in backbone.past_identities], backbone)


class Exportable(torch.nn.Module):
    """The encoder as a graph of named outputs: every hidden state, then the pooler's output when there is one."""

    def __init__(self, encoder, inputs: list[str]):
        super().__init__()
        self.encoder, self.inputs = encoder, inputs

    def forward(self, *args):
        out = self.encoder(**dict(zip(self.inputs, args)), output_hidden_states=True)
        pooled = getattr(out, "pooler_output", None)
        return (*out.hidden_states, *(() if pooled is None else (pooled,)))


def exported(backbone: Backbone, home: Path, int8: bool) -> tuple[Path, dict]:
    """The backbone's ONNX graph (fp32, or int8 weights), exported and quantised on first use, with what it holds.
    Written beside the store and moved into place, so two runs exporting at once never see half a file."""
    folder = export_folder(backbone, home)
    meta_path, failed = folder / "meta.json", folder.parent / f"{folder.name}.failed"
    if failed.exists():  # tried before: the family does not export, and trying again costs seconds every run
        raise ExportError(failed.read_text())
    if not meta_path.exists():
        tmp = folder.parent / f".{folder.name}.{os.getpid()}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            meta = export(backbone, tmp / "model.onnx")
            (tmp / "meta.json").write_text(json.dumps(meta))
            replace_durably(tmp, folder)
        except ExportError as e:
            failed.write_text(str(e))
            raise
        except OSError:  # another process moved its export into place first: theirs is as good
            if not meta_path.exists():
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    meta = json.loads(meta_path.read_text())
    if not int8:
        return folder / "model.onnx", meta
    quantised = folder / "model.int8.onnx"
    if not quantised.exists():  # each process quantises into a file of its own, then renames it into place
        from onnxruntime.quantization import QuantType, quantize_dynamic

        partial = folder / f".model.int8.{os.getpid()}.partial.onnx"
        quantize_dynamic(str(folder / "model.onnx"), str(partial), weight_type=QuantType.QInt8)
        replace_durably(partial, quantised)
    return quantised, meta


def export(backbone: Backbone, path: Path) -> dict:
    """torch.onnx's TorchScript exporter on eager attention (SDPA's graph does not export with dynamic lengths),
    dynamic batch and sequence axes; raises ExportError for a family it cannot trace."""
    from transformers import AutoModel

    tokenizer = load_tokenizer(backbone)
    try:
        encoder = AutoModel.from_pretrained(str(backbone.folder), local_files_only=True,
                                            attn_implementation="eager").eval()
        sample = tokenizer(["an exported text", "two"], padding=True, return_tensors="pt")
        inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in sample]
        layers = encoder.config.num_hidden_layers + 1
        with torch.no_grad():
            probe = Exportable(encoder, inputs)(*(sample[k] for k in inputs))
        outputs = [f"hidden_{i}" for i in range(layers)] + (["pooled"] if len(probe) > layers else [])
        torch.onnx.export(Exportable(encoder, inputs), tuple(sample[k] for k in inputs), str(path),
                          input_names=inputs, output_names=outputs, opset_version=17, dynamo=False,
                          dynamic_axes={**{k: {0: "batch", 1: "tokens"} for k in inputs},
                                        **{k: {0: "batch", 1: "tokens"} for k in outputs if k != "pooled"},
                                        **({"pooled": {0: "batch"}} if "pooled" in outputs else {})})
    except Exception as e:  # the exporter raises many types for what it cannot trace
        raise ExportError(f"{backbone.name} could not be exported to ONNX ({type(e).__name__}: {e})") from None
    return {"inputs": inputs, "outputs": outputs, "layers": layers, "backbone": backbone.identity}


class OnnxEncoder:
    """An exported backbone in an ONNX Runtime session: the encoder outputs of a tokenized batch, as torch."""

    def __init__(self, path: Path, meta: dict):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = torch.get_num_threads()  # the cores torch would use, no more
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.meta = meta
        # the inputs the graph kept: an export drops one the model never reads (DeBERTa's token types, unused)
        self.inputs = [i.name for i in self.session.get_inputs()]

    def __call__(self, enc: dict) -> SimpleNamespace:
        feeds = {k: np.asarray(enc[k], dtype=np.int64) for k in self.inputs}
        out = [torch.from_numpy(o) for o in self.session.run(None, feeds)]
        layers = self.meta["layers"]
        return SimpleNamespace(hidden_states=tuple(out[:layers]), last_hidden_state=out[layers - 1],
                               pooler_output=out[layers] if len(out) > layers else None)


@lru_cache(maxsize=4)
def session(path: Path, meta_json: str) -> OnnxEncoder:
    """One ONNX Runtime session per exported graph and process: Classify predicts a text at a time, and a new
    session costs a second."""
    return OnnxEncoder(path, json.loads(meta_json))


def encode_onnx(backbone: Backbone, home: Path, texts: list[str], max_len: int, pooling: str, int8: bool,
                batch_size: int = 32, on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Float32 sentence vectors through ONNX Runtime, in length-sorted batches, pooled as torch's are."""
    path, meta = exported(backbone, home, int8)
    encoder = session(path, json.dumps(meta, sort_keys=True))
    tokenizer = load_tokenizer(backbone)
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), 0), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        idx = order[start:start + batch_size]
        enc = tokenizer([texts[i] for i in idx], truncation=True, max_length=max_len, padding=True,
                        return_tensors="np")
        vecs = pool(encoder(enc), torch.from_numpy(enc["attention_mask"]), pooling).float().numpy()
        if not out.shape[1]:
            out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        out[idx] = vecs
        if on_progress is not None:
            on_progress(min(start + batch_size, len(texts)), len(texts))
    return out


def usable_engine(engine: str, backbone: Backbone, home: Path, device: torch.device,
                  on_fallback: Callable[[str], None] = lambda message: None) -> str:
    """The engine that will encode: `engine`, exported now if it is the first use, or torch on a GPU (ONNX
    Runtime's CPU provider is for CPUs) and for a family that does not export (said through `on_fallback`)."""
    if engine == "torch" or device.type != "cpu":
        return "torch"
    try:
        exported(backbone, home, engine == "onnx-int8")
    except ExportError as e:
        on_fallback(f"{e}; encoding with torch instead")
        return "torch"
    return engine


def encode_with(engine: str, backbone: Backbone, home: Path, texts: list[str], max_len: int, pooling: str,
                device: torch.device, bf16: bool, on_progress: Callable[[int, int], None] | None = None
                ) -> np.ndarray:
    """Vectors of `texts` by a usable engine (`usable_engine`); torch at the run's precision."""
    return encoder_for(engine, backbone, home, max_len, pooling, device, bf16)(texts, on_progress)


def encoder_for(engine: str, backbone: Backbone, home: Path, max_len: int, pooling: str, device: torch.device,
                bf16: bool, loaded: Cut | None = None
                ) -> Callable[[list[str], Callable[[int, int], None] | None], np.ndarray]:
    """`encode_with` with the encoder loaded once: a pass that streams its texts in chunks (`cached_features`)
    calls it per chunk. `loaded`: that encoder already in memory (a frozen run's own, as `load_cut` gave it),
    used by torch rather than a second copy (SmolLM2's is 0.5 GB)."""
    from core.backbone.encode import encode_texts

    if engine != "torch":
        return lambda texts, on_progress: encode_onnx(backbone, home, texts, max_len, pooling, engine == "onnx-int8",
                                                      on_progress=on_progress)
    model = loaded or load_cut(backbone, device, reads_probabilities(pooling), last_layer(pooling))
    tokenizer = load_tokenizer(backbone)
    return lambda texts, on_progress: encode_texts(model, tokenizer, texts, max_len, pooling, bf16=bf16,
                                                   on_progress=on_progress)
