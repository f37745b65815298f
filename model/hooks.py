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

# An intervention, called as TransformerLens calls one: fn(activation, hook) with the HookPoint (its
# `.name` is the hook name); it returns the replacement activation, or None to leave it unchanged.
HookFn = Callable[[torch.Tensor, "HookPoint"], "torch.Tensor | None"]


@dataclass
class Run:
    """Per-call switches for the teaching experiments, the interventions, and what to record."""

    position: bool = True  # False removes RoPE rotation / learned positions
    causal: bool = True  # False lets every token see every other (bidirectional)
    rope_scale: float | None = None  # overrides the config's position-interpolation scale
    impl: str = "explicit"  # "explicit" materialises scores and pattern; "sdpa" is fused and shows neither
    capture: Collection[str] | None = None  # hook names to store; None stores nothing
    hooks: dict[str, list[HookFn]] = field(default_factory=dict)  # hook name -> interventions, in order
    cache: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.impl not in ("explicit", "sdpa"):
            raise ValueError(f"impl must be 'explicit' or 'sdpa', not {self.impl!r}")

    def add_hook(self, name: str, fn: HookFn) -> Run:
        self.hooks.setdefault(name, []).append(fn)
        return self

    def wants(self, name: str) -> bool:
        """Whether this call records or intervenes on `name`: what optional hooks (hook_result) ask."""
        return name in self.hooks or (self.capture is not None and name in self.capture)


class HookPoint(nn.Module):
    """Identity, except that a Run's interventions for this name run first and the cache then keeps
    what flows on: a captured activation is the one the rest of the model saw (as in TransformerLens,
    where `run_with_cache` inside a hooks context records the hooked values)."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # set by `name_hook_points` to the module path

    def forward(self, x: torch.Tensor, run: Run | None) -> torch.Tensor:
        if run is None:
            return x
        for fn in run.hooks.get(self.name, ()):
            out = fn(x, self)
            x = x if out is None else out
        if run.capture is not None and self.name in run.capture:
            run.cache[self.name] = x
        return x


ABLATE_MODES = ("zero", "mean")


def ablate_heads(heads: Collection[int], mode: str) -> HookFn:
    """An intervention on `hook_z` (B, T, H, d) that knocks out the given heads of that layer: "zero"
    sets their output to 0, "mean" replaces it by its mean over positions (so the head still adds its
    average, position-independent contribution)."""
    if mode not in ABLATE_MODES:
        raise ValueError("ablate_mode must be 'zero' or 'mean'")
    heads = sorted(heads)

    def knock_out(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        z = z.clone()  # never write into a tensor another hook may have cached
        for h in heads:
            z[:, :, h] = z[:, :, h].mean(dim=1, keepdim=True) if mode == "mean" else 0.0
        return z

    return knock_out


# Short names, as TransformerLens's `get_act_name` takes them, and where each hook lives in a block.
_BLOCK_HOOKS = {
    "resid_pre": "hook_resid_pre", "resid_mid": "hook_resid_mid", "resid_post": "hook_resid_post",
    "attn_out": "hook_attn_out", "mlp_out": "hook_mlp_out",
    "q": "attn.hook_q", "k": "attn.hook_k", "v": "attn.hook_v", "z": "attn.hook_z",  # q, k before RoPE
    "rot_q": "attn.hook_rot_q", "rot_k": "attn.hook_rot_k", "result": "attn.hook_result",
    "attn_scores": "attn.hook_attn_scores", "scores": "attn.hook_attn_scores",
    "pattern": "attn.hook_pattern", "attn": "attn.hook_pattern",
    "pre": "mlp.hook_pre", "post": "mlp.hook_post", "mlp_pre": "mlp.hook_pre", "mlp_post": "mlp.hook_post",
    "pre_linear": "mlp.hook_pre_linear",
}  # fmt: skip
_MODEL_HOOKS = {"embed": "hook_embed", "pos_embed": "hook_pos_embed"}
_NORM_HOOKS = ("scale", "normalized")  # ln1/ln2 of a block with a layer, ln_final without one


def act_name(name: str, layer: int | None = None, layer_type: str | None = None) -> str:
    """The full hook name for a short one, like TransformerLens's `get_act_name`:
    `act_name("pattern", 0)` is `"blocks.0.attn.hook_pattern"`, `act_name("embed")` is `"hook_embed"`,
    `act_name("scale", 2, "ln1")` is `"blocks.2.ln1.hook_scale"`, `act_name("normalized")` is
    `"ln_final.hook_normalized"`; a full name comes back as it is. Every hook name in the repo is
    built here, so a typo is an error, not an empty cache."""
    if layer is None and layer_type is None and ("." in name or name.startswith("hook_")):
        return name
    if name in _NORM_HOOKS:
        if layer is None:
            return f"ln_final.hook_{name}"
        if layer_type in ("ln1", "ln2"):
            return f"blocks.{layer}.{layer_type}.hook_{name}"
        raise ValueError(f"hook {name!r} with a layer needs layer_type 'ln1' or 'ln2'")
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
        f"hook {name!r} {where}; known: {sorted(_MODEL_HOOKS)}, {list(_NORM_HOOKS)} and, with a layer, "
        f"{sorted(_BLOCK_HOOKS)}"
    )


def name_hook_points(model: nn.Module) -> list[str]:
    names = []
    for name, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = name
            names.append(name)
    return names
