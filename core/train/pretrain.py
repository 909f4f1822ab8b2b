"""Masked-LM pretraining continued on a dataset's texts (TAPT), for `core.train.adaptation`'s configs.

Reads top to bottom: device and seed → the texts (train's, an unlabeled file's, and val's or test's only when
named) → the backbone with an MLM head → a fixed masked sample to measure the loss on before and after → the loop
→ the adapted encoder saved as a backbone folder with its record. A sentence-transformers export such as MiniLM
has no MLM head: `AutoModelForMaskedLM` builds BERT's own (a transform layer, then a decoder tied to the input
embeddings) and it trains with the encoder. The saved encoder keeps the base's pooler, which masked-LM training
never reads, so a method pooling with it sees what it saw before.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from transformers import (
    AutoModel,
    AutoModelForMaskedLM,
    DataCollatorForLanguageModeling,
    get_linear_schedule_with_warmup,
)

from core.backbone.device import pick_device, use_bf16
from core.backbone.encode import load_tokenizer
from core.errors import InputError
from core.paths import replace_durably
from core.train.adaptation import RECORD, AdaptConfig, texts_for, texts_hash
from core.train.dropout import cheap_dropout
from core.train.inputs import bucketed_batches
from core.train.methods.base import Cancelled
from core.train.optim import adamw

Event = Callable[[dict], None]
PROBE = 256  # training texts the loss is measured on before and after, with one fixed masking
CURVE_POINTS = 20  # loss points over the run, for its curve


def adapt(config: AdaptConfig, out: Path, home: Path, on_event: Event = lambda e: None,
          should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Continue the backbone's masked-LM pretraining on the config's texts and save the encoder at `out` (written
    beside it, then moved into place whole). Returns the record kept with it."""
    started, cpu_started = time.perf_counter(), time.process_time()
    # -- device and seed
    device = pick_device(config.device)
    bf16 = use_bf16(config.precision, device)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)

    # -- the texts, tokenized once with what whole-word masking needs
    base = config.base
    tokenizer = load_tokenizer(base)
    texts, counts = texts_for(config, home)
    if config.texts is not None and texts_hash(texts) != config.texts:
        raise InputError("the texts changed since this adaptation was launched (their SHA-1 named its backbone); "
                         "launch it again to adapt to them as they are now")
    on_event({"type": "status", "message": f"reading {len(texts):,} texts: " +
              ", ".join(f"{n:,} {name}" for name, n in counts.items())})
    encoded = tokenizer(texts, truncation=True, max_length=config.max_len, return_special_tokens_mask=True,
                        return_offsets_mapping=True, verbose=False)
    rows = [{k: encoded[k][i] for k in encoded.keys()} for i in range(len(texts))]
    lengths = np.array([len(r["input_ids"]) for r in rows])
    collate = masker(tokenizer, config, config.seed)

    # -- the model: the encoder with an MLM head (a new one where the export has none)
    model = AutoModelForMaskedLM.from_pretrained(str(base.folder), local_files_only=True).to(device)
    cheap_dropout(model, None)  # the same dropout, its masks drawn cheaply (`core.train.dropout`)
    per_epoch = math.ceil(len(rows) / config.batch_size)
    total = min(config.epochs * per_epoch, config.max_steps or config.epochs * per_epoch)
    optimizer = adamw(list(model.named_parameters()), config.lr, eps=1e-6, decay_norms=False)
    schedule = get_linear_schedule_with_warmup(optimizer, int(config.warmup * total), total)
    probe = probe_batches(rows, lengths, tokenizer, config, rng)
    before = probe_loss(model, probe, device, bf16)
    on_event({"type": "status", "message": f"masked-LM loss before: {before:.3f} on {PROBE} training texts; "
                                           f"{total:,} steps of {config.batch_size}"})

    # -- the loop
    model.train()
    curve, since, seen, step = [], [], 0, 0
    every = max(1, total // CURVE_POINTS)
    clock = time.perf_counter()
    while step < total:
        for idx in bucketed_batches(lengths, config.batch_size, rng):
            if step >= total:
                break
            if should_stop():
                raise Cancelled("cancelled by request")
            batch = {k: v.to(device) for k, v in collate([rows[i] for i in idx]).items()}
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = masked_loss(model, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            step, seen = step + 1, seen + len(idx)
            since.append(loss.item())
            speed = seen / (time.perf_counter() - clock)
            if step % 10 == 0 or step == total:
                on_event({"type": "progress", "step": step, "total_steps": total, "samples_per_s": speed})
            if step % every == 0 or step == total:
                curve.append({"step": step, "mlm_loss": float(np.mean(since))})
                on_event({"type": "evaluation", "index": len(curve), "step": step, "total_steps": total,
                          "losses": {"mlm_loss": curve[-1]["mlm_loss"]}, "val": None, "val_fake_prob": None,
                          "best": False, "samples_per_s": speed})
                since = []
    after = probe_loss(model, probe, device, bf16)

    # -- the adapted encoder as a backbone folder, with the base's pooler, and its record
    record = {"kind": "tapt", "base": base.describe() | {"identity": base.identity}, "dataset": config.data.short_name,
              "data": json.loads(config.to_json())["data"], "splits": list(config.splits),
              "reads_test": "test" in config.splits, "reads_val": "val" in config.splits, "texts": counts,
              "texts_sha1": texts_hash(texts), "epochs": config.epochs, "max_steps": config.max_steps, "steps": step,
              "mask": config.mask, "whole_word_mask": True, "mask_token_share": 1.0, "lr": config.lr,
              "max_len": config.max_len, "batch_size": config.batch_size, "warmup": config.warmup, "seed": config.seed,
              "precision": "bf16" if bf16 else "fp32", "device": str(device),
              "mlm_loss_before": before, "mlm_loss_after": after, "curve": curve,
              "cpu_seconds": time.process_time() - cpu_started, "seconds": time.perf_counter() - started,
              "threads": torch.get_num_threads(), "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "config": json.loads(config.to_json())}
    save(model, base.folder, tokenizer, record, out)
    on_event({"type": "status", "message": f"masked-LM loss {before:.3f} → {after:.3f}; saved {out.name}"})
    return record


def masker(tokenizer, config: AdaptConfig, seed: int) -> Callable[[list[dict]], dict]:
    """transformers' collator: `config.mask` of the words masked whole (all their pieces), each replaced by the mask
    token, the one replacement the library supports with whole words (asked for explicitly: its default of 80% then
    warns with a malformed call in 4.57). It finds words by their offsets, which the tokenizer's `pad` leaves
    ragged, so they are padded here, on the tokenizer's own side."""
    collate = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mask, whole_word_mask=True,
                                              mask_replace_prob=1.0, random_replace_prob=0.0, seed=seed)

    def padded(rows: list[dict]) -> dict:
        width = max(len(r["input_ids"]) for r in rows)
        out = []
        for r in rows:
            pad = [(0, 0)] * (width - len(r["offset_mapping"]))
            offsets = (pad + list(r["offset_mapping"]) if tokenizer.padding_side == "left"
                       else list(r["offset_mapping"]) + pad)
            out.append({**r, "offset_mapping": offsets})
        return collate(out)
    return padded


def probe_batches(rows: list[dict], lengths: np.ndarray, tokenizer, config: AdaptConfig, rng: np.random.Generator
                  ) -> list[dict]:
    """Up to `PROBE` training texts, masked once (by their own seed), so the loss before and after compares like
    with like."""
    chosen = np.sort(rng.permutation(len(rows))[:PROBE])
    collate = masker(tokenizer, config, config.seed + 1)
    return [collate([rows[i] for i in chosen[start:start + 32]]) for start in range(0, len(chosen), 32)]


def masked_loss(model, batch: dict) -> torch.Tensor:
    """The masked-LM loss with the head run on the masked positions only: its decoder over the whole vocabulary
    costs about as much per token as MiniLM's six layers, and 85% of the tokens have no loss. BERT's head (`cls`)
    and RoBERTa's (`lm_head`) are one module each; a family whose head is not takes the model's own loss."""
    head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
    if head is None:
        return model(**batch).loss
    labels = batch["labels"]
    hidden = model.base_model(**{k: v for k, v in batch.items() if k != "labels"}).last_hidden_state
    picked = labels != -100
    logits = head(hidden[picked])
    return torch.nn.functional.cross_entropy(logits.float(), labels[picked])


@torch.no_grad()
def probe_loss(model, batches: list[dict], device: torch.device, bf16: bool) -> float:
    """The mean masked-LM loss over the probe's masked tokens."""
    model.eval()
    total, tokens = 0.0, 0
    for batch in batches:
        masked = int((batch["labels"] != -100).sum())
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = masked_loss(model, {k: v.to(device) for k, v in batch.items()})
        total, tokens = total + float(loss) * masked, tokens + masked
    model.train()
    return total / max(tokens, 1)


def save(mlm, base_folder: Path, tokenizer, record: dict, out: Path) -> None:
    """The trained encoder in the base's own class (its pooler kept), in safetensors, with the tokenizer and the
    record; written beside `out` and moved into place, so a half-written folder is never a backbone."""
    encoder = AutoModel.from_pretrained(str(base_folder), local_files_only=True)
    missing, unexpected = encoder.load_state_dict(mlm.base_model.state_dict(), strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise RuntimeError(f"the adapted encoder does not fit its base: missing {missing[:3]}, unexpected "
                           f"{unexpected[:3]}")
    tmp = out.parent / f".{out.name}.{os.getpid()}.partial"  # this process's own
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        encoder.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        (tmp / RECORD).write_text(json.dumps(record, indent=2))
        if (out / RECORD).is_file():
            return  # another job made it first: runs may be reading it, so it stays as it is
        shutil.rmtree(out, ignore_errors=True)  # a folder without its record is one a killed job left
        replace_durably(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
