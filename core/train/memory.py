"""How much memory a training step holds when the encoder trains, and bounding it.

A step keeps every layer's activations for the backward pass: they grow with the batch times the length, and
attention's with the length squared. The GAN-BERT presets' batch of 64 at 512 tokens holds about 23 GiB on
MiniLM, more than many laptops have. Gradient checkpointing keeps only each layer's input and recomputes the
rest during the backward pass: the same gradients (dropout masks are replayed) for about half again the time
(bench/speed/memory.py: 5.5 → 1.9 GiB, 1.53× the seconds, at 16 × 512), so a run turns it on only when the estimate
would not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil
import torch
from transformers import PretrainedConfig, PreTrainedModel

from core.calibration import measured

# The bytes a training step holds per sequence, per layer, for each token × hidden unit and for each token² × attention
# head, fitted by bench/speed/memory.py (`core/calibration.json`).
PER_TOKEN_UNIT = measured("per_token_unit")
PER_TOKEN_PAIR_HEAD = measured("per_token_pair_head")
# Checkpointing goes on when the estimate exceeds this share of the memory free at launch: the rest is left
# for the weights, the optimizer's state, the data and whatever else the machine runs.
SHARE = 0.5


def step_bytes(encoder: PretrainedConfig, sequences: int, length: int, trained_parameters: int,
               layers: int | None = None) -> float:
    """What one training step holds beyond the weights without checkpointing, for `sequences` texts of `length`
    tokens: the activations of the layers it trains (`layers`; default: all), and the fp32 gradients of the trained
    parameters."""
    layers = layers or encoder.num_hidden_layers
    hidden, heads = encoder.hidden_size, encoder.num_attention_heads
    per_sequence = layers * (PER_TOKEN_UNIT * length * hidden + PER_TOKEN_PAIR_HEAD * length ** 2 * heads)
    return sequences * per_sequence + 4 * trained_parameters


def free_bytes(device: torch.device) -> int:
    """Memory free for the run now: the GPU's, or the machine's available memory on a CPU."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return psutil.virtual_memory().available


@dataclass(frozen=True)
class MemoryPlan:
    estimate: float  # bytes a step holds without checkpointing
    free: float  # bytes free at launch
    sequences: int
    length: int

    @property
    def checkpointing(self) -> bool:
        return self.estimate > SHARE * self.free

    def message(self) -> str:
        """The estimate beside the rule it was judged by (the log had said "8.7 GiB; 17.3 GiB are free" alone)."""
        head = f"a step of {self.sequences} texts × {self.length} tokens holds about {self.estimate / 2**30:.1f} GiB"
        free = f"{SHARE:.0%} of the {self.free / 2**30:.1f} GiB free"
        if self.checkpointing:
            return (f"memory: gradient checkpointing on: {head}, more than {free} (it takes about half again the "
                    "time)")
        return f"memory: {head}, within {free}: no gradient checkpointing"


def shape_parameters(shape: PretrainedConfig) -> int:
    """A transformer encoder's parameters from its shape alone, for a plan made before it loads: 12·H² a
    layer (attention and feed-forward weights) and the token embeddings (MiniLM: 22.3M of its 22.7M)."""
    return shape.num_hidden_layers * 12 * shape.hidden_size ** 2 + shape.vocab_size * shape.hidden_size


def would_checkpoint(shape: PretrainedConfig, sequences: int, length: int, device: torch.device) -> bool:
    """Whether a run started here now would turn checkpointing on, as `bound_memory` will decide it, for time
    estimates made before the encoder loads."""
    return MemoryPlan(step_bytes(shape, sequences, length, shape_parameters(shape)), free_bytes(device), sequences,
                      length).checkpointing


def bound_memory(encoder: PreTrainedModel, sequences: int, length: int, device: torch.device,
                 layers: int | None = None) -> MemoryPlan:
    """Turn on the encoder's gradient checkpointing when a step's activations would not fit; the plan says
    what was estimated and chosen, for the run's log and record. `layers`: those a step runs with gradients (a
    top-K run's K; default: all)."""
    trained = sum(p.numel() for p in encoder.parameters() if p.requires_grad)
    plan = MemoryPlan(step_bytes(encoder.config, sequences, length, trained, layers), free_bytes(device), sequences,
                      length)
    if plan.checkpointing:
        encoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return plan
