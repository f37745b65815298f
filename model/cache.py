"""`ActivationCache`: what `LanguageModel.run_with_cache` returns, indexed as TransformerLens's is.

`cache["blocks.0.hook_resid_post"]`, `cache["resid_post", 0]`, `cache["pattern", -1]` and
`cache["scale", 2, "ln1"]` all work; it is also a read-only mapping (`keys()`, `items()`, `in`,
`len`). Every tensor keeps the batch dimension first. The residual-stream helpers follow
TransformerLens's definitions: `accumulated_resid`, `apply_ln_to_stack`, `stack_head_results`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch
from torch import nn

from .hooks import act_name


class ActivationCache(Mapping):
    def __init__(self, cache: dict[str, torch.Tensor], net: nn.Module) -> None:
        self.cache_dict, self.net = cache, net
        self.n_layer = net.cfg.n_layer

    def _name(self, key: str | tuple) -> str:
        if isinstance(key, str):
            return key if key in self.cache_dict else act_name(key)
        name, layer, *rest = key
        if layer is not None and layer < 0:  # cache["resid_post", -1] is the last layer, as in TL
            layer += self.n_layer
        return act_name(name, layer, *rest)

    def __getitem__(self, key: str | tuple) -> torch.Tensor:
        name = self._name(key)
        if name not in self.cache_dict:
            raise KeyError(f"{name!r} was not recorded; ask run_with_cache for it (names_filter)")
        return self.cache_dict[name]

    def __contains__(self, key: object) -> bool:
        try:
            return self._name(key) in self.cache_dict  # type: ignore[arg-type]
        except (ValueError, TypeError):
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.cache_dict)

    def __len__(self) -> int:
        return len(self.cache_dict)

    def __repr__(self) -> str:
        return f"ActivationCache with keys {list(self.cache_dict)}"

    @torch.inference_mode()  # the cache holds inference tensors; weights must not track grads here
    def accumulated_resid(
        self, layer: int | None = None, incl_mid: bool = False, apply_ln: bool = False,
        mlp_input: bool = False, return_labels: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, list[str]]:  # fmt: skip
        """The residual stream as it grows: resid_pre of each layer up to `layer` (None: every layer
        plus the final resid_post), stacked (components, B, T, D). `apply_ln` scales each by the norm
        that reads it (ln_final for the full stack), as the logit lens needs."""
        layer = self.n_layer if layer is None or layer == -1 else layer
        parts, labels = [], []
        for i in range(layer + 1):
            if i == self.n_layer:
                parts.append(self["resid_post", i - 1])
                labels.append("final_post")
                continue
            parts.append(self["resid_pre", i])
            labels.append(f"{i}_pre")
            if (incl_mid and i < layer) or (mlp_input and i == layer):
                parts.append(self["resid_mid", i])
                labels.append(f"{i}_mid")
        stack = torch.stack(parts)
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer, mlp_input)
        return (stack, labels) if return_labels else stack

    @torch.inference_mode()
    def apply_ln_to_stack(
        self, stack: torch.Tensor, layer: int | None = None, mlp_input: bool = False
    ) -> torch.Tensor:
        """Treat each component of `stack` (..., B, T, D) as input to the norm before `layer`
        (ln2 if `mlp_input`; ln_final for layer None or n_layer) and divide it by that norm's
        recorded scale (LayerNorm centres first). The weight is not applied, as in TL with folded norms."""
        if layer is None or layer == -1 or layer == self.n_layer:
            scale = self["scale"]
        else:
            scale = self["scale", layer, "ln2" if mlp_input else "ln1"]
        if self.net.cfg.arch == "gpt2":
            stack = stack - stack.mean(-1, keepdim=True)
        return stack / scale

    @torch.inference_mode()
    def stack_head_results(
        self, layer: int | None = None, return_labels: bool = False, incl_remainder: bool = False,
        apply_ln: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, list[str]]:  # fmt: skip
        """Every head's write to the residual stream in layers before `layer` (None: all), stacked
        (L*H, B, T, D) with labels "L0H0", ...: hook_result where it was recorded, else hook_z
        through that head's slice of o_proj (the output bias belongs to no head and is left out)."""
        layer = self.n_layer if layer is None or layer == -1 else layer
        H = self.net.cfg.n_head
        parts = [self._head_result(i).movedim(2, 0) for i in range(layer)]  # each (H, B, T, D)
        labels = [f"L{i}H{h}" for i in range(layer) for h in range(H)]
        if parts:
            stack = torch.cat(parts)
        else:
            stack = self["embed"].new_zeros((0, *self["embed"].shape))
        if incl_remainder:
            remainder = self["resid_post", layer - 1] - stack.sum(0) if layer else self["resid_pre", 0]
            stack, labels = torch.cat([stack, remainder[None]]), labels + ["remainder"]
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer)
        return (stack, labels) if return_labels else stack

    @torch.inference_mode()
    def _head_result(self, layer: int) -> torch.Tensor:
        if ("result", layer) in self:
            return self["result", layer]
        cfg = self.net.cfg
        W_O = self.net.blocks[layer].attn.o_proj.weight.view(cfg.d_model, cfg.n_head, cfg.hd)
        return torch.einsum("bthd,Dhd->bthD", self["z", layer], W_O)  # (B, T, H, D)
