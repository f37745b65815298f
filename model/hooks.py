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


# Short names, as TransformerLens's `get_act_name` takes them, and where each hook lives in a block.
_BLOCK_HOOKS = {
    "resid_pre": "hook_resid_pre", "resid_mid": "hook_resid_mid", "resid_post": "hook_resid_post",
    "attn_out": "hook_attn_out", "mlp_out": "hook_mlp_out",
    "q": "attn.hook_q", "k": "attn.hook_k", "v": "attn.hook_v", "z": "attn.hook_z",
    "rot_q": "attn.hook_rot_q", "rot_k": "attn.hook_rot_k",
    "attn_scores": "attn.hook_attn_scores", "scores": "attn.hook_attn_scores",
    "pattern": "attn.hook_pattern", "attn": "attn.hook_pattern",
    "pre": "mlp.hook_pre", "post": "mlp.hook_post", "mlp_pre": "mlp.hook_pre", "mlp_post": "mlp.hook_post",
}  # fmt: skip
_MODEL_HOOKS = {"embed": "hook_embed", "pos_embed": "hook_pos_embed"}


def act_name(name: str, layer: int | None = None) -> str:
    """The full hook name for a short one, like TransformerLens's `get_act_name`:
    `act_name("pattern", 0)` is `"blocks.0.attn.hook_pattern"`, `act_name("embed")` is `"hook_embed"`.
    Every hook name in the repo is built here, so a typo is an error, not an empty cache."""
    if name in _MODEL_HOOKS and layer is None:
        return _MODEL_HOOKS[name]
    if name in _BLOCK_HOOKS and layer is not None:
        return f"blocks.{layer}.{_BLOCK_HOOKS[name]}"
    where = (
        "needs a layer"
        if name in _BLOCK_HOOKS
        else "takes no layer"
        if name in _MODEL_HOOKS
        else "is unknown"
    )
    raise ValueError(
        f"hook {name!r} {where}; known: {sorted(_MODEL_HOOKS)} and, with a layer, {sorted(_BLOCK_HOOKS)}"
    )


def name_hook_points(model: nn.Module) -> list[str]:
    names = []
    for name, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = name
            names.append(name)
    return names
