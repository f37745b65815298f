"""Hook points named as TransformerLens names them, without module state.

A `HookPoint` is an identity module whose dotted module path *is* the hook name
(`blocks.0.attn.hook_pattern`). What to capture and which interventions to apply travel with
each call in a `Run`, never in the module, so one model serves many threads at once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import torch
from torch import nn

HookFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Run:
    """Per-call switches for the teaching experiments, and what to record."""

    position: bool = True  # False removes RoPE rotation / learned positions
    causal: bool = True  # False lets every token see every other (bidirectional)
    ablate: Collection[tuple[int, int]] = ()  # (layer, head) pairs whose output is knocked out
    ablate_mode: str = "zero"  # "zero", or "mean" (the head's mean output over positions)
    rope_scale: float | None = None  # overrides the config's position-interpolation scale
    capture: Collection[str] | None = None  # hook names to store; None stores nothing
    fns: dict[str, HookFn] = field(default_factory=dict)  # hook name -> replacement function
    cache: dict[str, torch.Tensor] = field(default_factory=dict)

    def ablated_heads(self, layer: int) -> list[int]:
        return [h for (lay, h) in self.ablate if lay == layer]


class HookPoint(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # set by `name_hook_points` to the module path

    def forward(self, x: torch.Tensor, run: Run | None) -> torch.Tensor:
        if run is None:
            return x
        fn = run.fns.get(self.name)
        if fn is not None:
            x = fn(x)
        if run.capture is not None and self.name in run.capture:
            run.cache[self.name] = x
        return x


def name_hook_points(model: nn.Module) -> list[str]:
    names = []
    for name, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = name
            names.append(name)
    return names
