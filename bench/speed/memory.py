"""How much memory a training step holds when the encoder trains, and what gradient checkpointing saves and
costs. Each point is one process (the peak is the process's high-water mark): MiniLM loaded, then training
steps (forward, loss, backward) on random token ids at a batch and length, in fp32 and in bf16 autocast.

Prints, per point, the peak above the loaded model, the seconds of the second step, and the estimate of
`core.train.memory`; fits the per-token and per-token² constants from the batch slopes at 128 and 512 tokens
(the figures `core.train.memory` carries); and measures checkpointing against none side by side at the
studio's default batch (16) at 512 tokens. Targets: the estimate within 25% of the measured fp32 peak at every
point (bf16 autocast holds less: within −25%/+50%), and checkpointing holding at most half the memory.
Run: .venv/bin/python -m bench.speed.memory [--threads N]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

from bench.calibrate import add_flag, record
from core.backbone.encode import load_encoder
from core.paths import REPO_ROOT
from core.train import memory

GIB = 2 ** 30
FIT = [(4, 128), (8, 128), (4, 512), (8, 512)]
CHECK = (16, 512)


def peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def one_point(batch: int, length: int, checkpointing: bool, precision: str, threads: int) -> dict:
    """Run in a child process: the peak of two training steps above the loaded model, and the second's time."""
    torch.set_num_threads(threads)
    encoder = load_encoder().train()
    if checkpointing:
        encoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    head = torch.nn.Linear(encoder.config.hidden_size, 6)
    ids = torch.randint(1000, 20000, (batch, length))
    mask = torch.ones(batch, length, dtype=torch.long)
    labels = torch.randint(0, 6, (batch,))
    base, seconds = peak_bytes(), 0.0
    for _ in range(2):
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            hidden = encoder(input_ids=ids, attention_mask=mask).last_hidden_state.mean(1).float()
        torch.nn.functional.cross_entropy(head(hidden), labels).backward()
        encoder.zero_grad(set_to_none=True)
        seconds = time.perf_counter() - started
    return {"peak": peak_bytes() - base, "seconds": seconds,
            "estimate": memory.step_bytes(encoder.config, batch, length, encoder.num_parameters())}


def measure(batch: int, length: int, checkpointing: bool, precision: str, threads: int) -> dict:
    args = [sys.executable, "-m", "bench.speed.memory", "--child",
            json.dumps([batch, length, checkpointing, precision, threads])]
    out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--child", help=argparse.SUPPRESS)
    add_flag(parser)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_point(*json.loads(args.child))))
        return

    config = load_encoder().config
    layers, hidden, heads = config.num_hidden_layers, config.hidden_size, config.num_attention_heads
    ok, fitted = True, {}
    for precision in ("fp32", "bf16"):
        points = {p: measure(*p, False, precision, args.threads) for p in FIT + [CHECK]}
        print(f"\n{precision}: batch × tokens, peak above the model, estimate, second step")
        for (batch, length), m in points.items():
            ratio = m["estimate"] / m["peak"]
            ok &= 0.75 <= ratio <= (1.25 if precision == "fp32" else 1.5)  # fitted on fp32; bf16 holds less
            print(f"  {batch:3d} × {length}: {m['peak'] / GIB:6.2f} GiB, estimate {m['estimate'] / GIB:6.2f} GiB "
                  f"({ratio:.2f}×), {m['seconds']:.1f} s")
        # per-sequence cost = the slope over the batch; a·L + b·L² through the two lengths
        slope = {length: (points[(8, length)]["peak"] - points[(4, length)]["peak"]) / 4 for length in (128, 512)}
        b = (slope[512] - 4 * slope[128]) / (512 ** 2 - 4 * 128 ** 2)
        a = (slope[128] - b * 128 ** 2) / 128
        if precision == "fp32":  # the estimate's own: bf16 holds less
            fitted = {"per_token_unit": a / (layers * hidden), "per_token_pair_head": b / (layers * heads)}
        print(f"  fitted: {a / (layers * hidden):.1f} bytes per token × hidden unit × layer, "
              f"{b / (layers * heads):.1f} per token² × head × layer "
              f"(core.train.memory carries {memory.PER_TOKEN_UNIT}, {memory.PER_TOKEN_PAIR_HEAD})")

    batch, length = CHECK
    plain = measure(batch, length, False, "fp32", args.threads)
    saved = measure(batch, length, True, "fp32", args.threads)
    memory_ratio, time_ratio = saved["peak"] / plain["peak"], saved["seconds"] / plain["seconds"]
    ok &= memory_ratio <= 0.5
    print(f"\ncheckpointing at {batch} × {length}, fp32, side by side: {plain['peak'] / GIB:.2f} → "
          f"{saved['peak'] / GIB:.2f} GiB ({memory_ratio:.2f}×), {plain['seconds']:.1f} → {saved['seconds']:.1f} s "
          f"a step ({time_ratio:.2f}×)")
    print("targets met" if ok else "TARGETS MISSED")
    if args.calibrate:
        record({**fitted, "checkpoint_slowdown": time_ratio}, "bench/speed/memory.py")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
