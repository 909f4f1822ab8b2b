"""A backbone's encoder as the studio runs it: cut after the layer its pooling reads, and for a run that trains only
its top K layers, cut in two at a boundary below them.

The layers below the boundary are frozen, so their output for a text never changes: `below` computes it once (in
eval mode, without gradients), the state store keeps it (`core.train.state_store`), and every step, epoch, seed and
method reads it back through `above`, which runs the top layers alone. The states cross the boundary in bf16, the
store's format, on every path (training, evaluation, a reloaded model's predictions), so a run predicts after a
reload exactly what it scored.

Both halves run the model's own forward on a view of it: a shallow copy that shares every module and parameter but
holds a slice of the layer stack, and, above the boundary, passes the states through where the model embeds its
inputs. Nothing of the model is changed, so a cached predictor can serve two sessions at once. A family whose
forward the views do not reproduce is refused when the cut is made (`check`).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import nn
from transformers import PreTrainedModel

from core.backbone.families import FAMILIES, Family, family
from core.errors import InputError

STATE_DTYPE = torch.bfloat16  # what crosses the boundary, and what the store keeps: 2 bytes a number


def family_of_model(model: nn.Module) -> Family | None:
    """A loaded model's entry in the families table (`core.backbone.families`), None for a family it lacks."""
    return FAMILIES.get(getattr(getattr(model, "config", None), "model_type", None))


def layer_stack(model: nn.Module) -> nn.ModuleList | None:
    """The encoder's layers, where its family keeps them."""
    owner, name = stack_owner(model)
    stack = getattr(owner, name, None) if owner is not None else None
    return stack if isinstance(stack, nn.ModuleList) else None


def stack_owner(model: nn.Module) -> tuple[nn.Module | None, str]:
    """The module that holds the layer stack, and the stack's attribute name on it."""
    found = family_of_model(model)
    if found is None or not found.stack:
        return None, ""
    owner = model
    for part in found.stack[:-1]:
        owner = getattr(owner, part, None)
    if owner is not None and isinstance(getattr(owner, found.stack[-1], None), nn.ModuleList):
        return owner, found.stack[-1]
    return None, ""


class NoPositions(nn.Module):
    """Stands for a position table, in the view above the boundary: the states carry their positions already."""

    def forward(self, positions: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return torch.zeros((), device=positions.device)


class Passthrough(nn.Module):
    """Stands where a model embeds its inputs, in the view above the boundary: the states given as `inputs_embeds`
    (or a projection's one input) go on unchanged."""

    def forward(self, *args, **kwargs) -> torch.Tensor:
        given = kwargs.get("inputs_embeds")
        if given is None:
            given = next(a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point())
        return given


def view(model: PreTrainedModel, layers: list[nn.Module], skip_embeddings: bool, final_norm: bool
         ) -> PreTrainedModel:
    """A shallow copy of `model` that runs `layers` (the model's own modules) in place of its stack, without its
    embedding of the inputs (`skip_embeddings`) and without a final norm (`final_norm` off): parameters, buffers and
    hooks are the model's; only the copied module tables differ."""
    clone = copy.copy(model)
    clone._modules = dict(model._modules)
    owner, name = stack_owner(model)
    if owner is model:
        clone._modules[name] = nn.ModuleList(layers)
    else:  # BERT's kin: the stack sits in an encoder module, copied the same way
        holder = next(k for k, m in model._modules.items() if m is owner)
        inner = copy.copy(owner)
        inner._modules = dict(owner._modules)
        inner._modules[name] = nn.ModuleList(layers)
        clone._modules[holder] = inner
    parts = family(model.config.model_type)
    if skip_embeddings:
        for key in parts.embeddings:
            if key in clone._modules:
                clone._modules[key] = Passthrough()
        for key in parts.positions:
            if key in clone._modules:
                clone._modules[key] = NoPositions()
        for key in parts.on_embeddings:  # the states crossed them below the boundary already
            if key in clone._modules:
                clone._modules[key] = nn.Identity()
    if not final_norm and parts.final_norm in clone._modules:
        clone._modules[parts.final_norm] = nn.Identity()
    return clone


@contextmanager
def evaluating(modules: list[nn.Module]) -> Iterator[None]:
    """These modules in eval mode for the block (no dropout), their modes restored after it."""
    modes = [(m, m.training) for module in modules for m in module.modules()]
    for module in modules:
        module.eval()
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode


@dataclass(frozen=True)
class Cut:
    """A loaded encoder (or a causal LM with its head, whose `base_model` is the encoder) with what the studio did to
    it: `layers`, where it was cut (`cut_after`; None: whole), and `boundary`, the layers below the trained ones
    (0: none, every layer trains or the encoder is frozen whole)."""

    model: PreTrainedModel
    layers: int | None = None
    boundary: int = 0

    @property
    def encoder(self) -> PreTrainedModel:
        """The bare encoder: a causal LM's base model, else the model itself."""
        return self.model.base_model if hasattr(self.model, "get_output_embeddings") and \
            self.model.get_output_embeddings() is not None else self.model

    @property
    def depth(self) -> int:
        stack = layer_stack(self.encoder)
        return len(stack) if stack is not None else 0

    @property
    def trained_layers(self) -> int:
        """The layers above the boundary."""
        return self.depth - self.boundary

    def lower(self) -> list[nn.Parameter]:
        """The parameters the inputs pass through before the boundary: the embeddings (words, positions, their norm)
        and the first `boundary` layers; not the layers above, nor what follows the last layer (`Family.after`)."""
        stack = layer_stack(self.encoder)
        above = {id(p) for layer in stack[self.boundary:] for p in layer.parameters()}
        above |= {id(p) for name in family(self.encoder.config.model_type).after
                  if isinstance(getattr(self.encoder, name, None), nn.Module)
                  for p in getattr(self.encoder, name).parameters()}
        return [p for p in self.encoder.parameters() if id(p) not in above]

    def freeze_below(self) -> None:
        """No gradient reaches the layers below the boundary or the embeddings: their output is stored."""
        for p in self.lower():
            p.requires_grad_(False)

    def below(self, input_ids: torch.Tensor | None, attention_mask: torch.Tensor,
              inputs_embeds: torch.Tensor | None = None, rounded: bool = True) -> torch.Tensor:
        """The states at the boundary (batch × tokens × width, in `STATE_DTYPE` unless `rounded` is off): the layers
        below run in eval mode, as the store computes them, whatever mode the model is in."""
        stack = layer_stack(self.encoder)
        lower = view(self.encoder, list(stack[:self.boundary]), skip_embeddings=False, final_norm=False)
        with evaluating([lower]):
            states = lower(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds)
        return states.last_hidden_state.to(STATE_DTYPE) if rounded else states.last_hidden_state

    def above(self, states: torch.Tensor, attention_mask: torch.Tensor, **kwargs):
        """The encoder's outputs from the states at the boundary: the layers above it, and what the model applies
        after its last layer (a pooler, a final norm when it was not cut). The states join the residual stream in
        the weights' precision, as a whole pass carries it (fp32 under bf16 autocast)."""
        stack = layer_stack(self.encoder)
        upper = view(self.encoder, list(stack[self.boundary:]), skip_embeddings=True, final_norm=True)
        return upper(inputs_embeds=states.to(self.encoder.dtype), attention_mask=attention_mask, **kwargs)

    def outputs(self, inputs: dict, **kwargs):
        """The encoder's outputs for a tokenized batch (`input_ids` or `inputs_embeds`, `attention_mask`, and what
        else the tokenizer gave): one pass of the whole model, or for a cut with layers below its boundary, the pass
        through the states as training runs it."""
        if not self.boundary:
            return self.encoder(**inputs, **kwargs)
        states = self.below(inputs.get("input_ids"), inputs["attention_mask"], inputs.get("inputs_embeds"))
        return self.above(states, inputs["attention_mask"], **kwargs)

    def check(self) -> None:
        """The two halves give what the whole model gives, on one short text: a family whose forward the views
        do not reproduce (positions added after the embeddings, layers that read a model-level table) is refused
        here rather than trained wrong."""
        if not self.boundary:
            return
        if not 0 < self.boundary < self.depth:
            raise InputError(f"a top-K run trains 1 to {self.depth - 1} of this encoder's {self.depth} layers; "
                             f"{self.trained_layers} leaves nothing to train or nothing below")
        vocab = self.encoder.get_input_embeddings().num_embeddings
        ids = (torch.arange(5, device=self.encoder.device) * 7 + 3) % vocab
        ids, mask = ids[None], torch.ones(1, 5, dtype=torch.long, device=self.encoder.device)
        with torch.no_grad(), evaluating([self.encoder]):
            whole = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
            split = self.above(self.below(ids, mask, rounded=False), mask).last_hidden_state
        if not torch.allclose(whole, split, atol=1e-4 * float(whole.abs().max()) + 1e-5):
            raise InputError(f"training the top layers alone is not supported for {self.encoder.config.model_type} "
                             "models (their layers cannot be run apart from the embeddings); train every layer")


def cut_after(model: PreTrainedModel, layers: int) -> Cut:
    """The encoder with its layers after the first `layers` removed, and a causal LM's final norm with them, so its
    last hidden state is what the whole model's `hidden_states[layers]` holds. SmolLM2's features read layer 20 of
    30: a third of every pass was thrown away, and every layer's states were kept to pick one. Whole where `layers`
    is the model's depth or more, or its family shares one layer's weights between its layers (ALBERT)."""
    parts = family(model.config.model_type)
    stack = layer_stack(model)
    if stack is None or layers >= len(stack):
        return Cut(model)
    del stack[layers:]
    if parts.final_norm and hasattr(model, parts.final_norm):  # after the last layer only: the cut's is un-normed
        setattr(model, parts.final_norm, nn.Identity())
    model.config.num_hidden_layers = layers
    return Cut(model, layers)


def split_at(cut: Cut, trained: int) -> Cut:
    """The cut with only its top `trained` layers training (0, or as many as it has: every layer), the layers below
    frozen and checked to run apart (`Cut.check`)."""
    if trained and not cut.depth:
        raise InputError(f"training the top layers alone is not supported for {cut.encoder.config.model_type} "
                         "models (their layers share one set of weights); train every layer")
    if not trained or trained >= cut.depth:
        return cut
    split = Cut(cut.model, cut.layers, cut.depth - trained)
    split.check()
    split.freeze_below()
    return split
