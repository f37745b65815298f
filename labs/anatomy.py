"""The chapter's block diagram and whole-model pipeline, filled in with one prompt's live numbers.

`block_stages` measures the residual stream at each step of every block (x, norm, attention, add,
norm, feed-forward, add) for every position; `pipeline` gives the shape at each arrow of the whole
model (token ids -> embedding -> blocks -> final norm -> unembedding -> softmax) with the numbers
that flow through it. Both run one forward pass of the model's own modules.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model import LanguageModel, act_name
from model.config import ModelConfig

from .cost import REFERENCE

# One row per arrow of the chapter's block diagram, in order (their labels: app/anatomy/text.py).
BLOCK_STAGES = ("x_in", "norm1", "attn_out", "resid_mid", "norm2", "mlp_out", "resid_post")
RESID_HOOKS = ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post")


def block_shapes(cfg: ModelConfig, n: int) -> dict[str, list[int]]:
    """Tensor shapes inside one block for n tokens (batch dimension left out)."""
    return {
        "x": [n, cfg.d_model],
        "q": [n, cfg.n_head, cfg.hd],
        "k": [n, cfg.n_kv_head, cfg.hd],
        "v": [n, cfg.n_kv_head, cfg.hd],
        "scores": [cfg.n_head, n, n],
        "heads_concat": [n, cfg.n_head * cfg.hd],
        "ff_hidden": [n, cfg.d_ff],
    }


def forward_capture(lm: LanguageModel, ids: list[int]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """One forward pass recording every block's residual steps; returns (cache without batch, logits)."""
    names = [act_name("embed")] + [act_name(h, i) for i in range(lm.config.n_layer) for h in RESID_HOOKS]
    if act_name("pos_embed") in lm.net.hook_names:
        names.append(act_name("pos_embed"))
    logits, cache = lm.run_with_cache(ids, names)
    return {k: v[0] for k, v in cache.items()}, logits[0].float()  # (n, V)


@torch.inference_mode()
def block_stages(lm: LanguageModel, cache: dict[str, torch.Tensor]) -> torch.Tensor:
    """(L, 7, n) L2 norms at each stage of BLOCK_STAGES. The norm outputs are recomputed with the
    block's own norm modules, because they are not hook points."""
    rows = []
    for i, block in enumerate(lm.net.blocks):
        x, attn, mid, mlp, post = (cache[act_name(h, i)] for h in RESID_HOOKS)
        stages = [x, block.ln1(x), attn, mid, block.ln2(mid), mlp, post]
        rows.append(torch.stack([s.float().norm(dim=-1) for s in stages]))
    return torch.stack(rows).cpu()


@torch.inference_mode()
def final_norm_out(lm: LanguageModel, cache: dict[str, torch.Tensor]) -> torch.Tensor:
    """(n, D) what the final norm hands the unembedding, its weight applied: recomputed with the model's
    own module, since ln_final.hook_normalized is (as in TransformerLens) the value before the weight."""
    return lm.net.ln_final(cache[act_name("resid_post", lm.config.n_layer - 1)][None], None)[0]


@dataclass(frozen=True)
class Step:
    """One arrow of the whole-model pipeline; its name and what it does are display text (app/anatomy)."""

    key: str  # "ids", "embed", "positions", "block", "final_norm", "unembed", "softmax"
    shape: list[int]
    dims: list[str]
    layer: int | None = None
    ids: list[int] | None = None
    norms: torch.Tensor | None = None  # (n,) L2 norm of what leaves this step
    max_logit: torch.Tensor | None = None  # (n,)
    top_ids: torch.Tensor | None = None  # (n, k) next-token candidates at the softmax
    top_probs: torch.Tensor | None = None  # (n, k)


def pipeline(lm: LanguageModel, ids: list[int], cache: dict[str, torch.Tensor], logits: torch.Tensor,
             k: int = 5) -> list[Step]:  # fmt: skip
    """The whole model as the chapter draws it: the shape each step hands on and per-position numbers."""
    cfg, n = lm.config, len(ids)
    D, V = cfg.d_model, cfg.vocab_size

    def norms(t: torch.Tensor) -> torch.Tensor:
        return t.float().norm(dim=-1).cpu()

    steps = [Step("ids", [n], ["n"], ids=list(ids)),
             Step("embed", [n, D], ["n", "d_model"], norms=norms(cache[act_name("embed")]))]  # fmt: skip
    if act_name("pos_embed") in cache:
        steps.append(
            Step("positions", [n, D], ["n", "d_model"], norms=norms(cache[act_name("resid_pre", 0)]))
        )
    for i in range(cfg.n_layer):
        steps.append(
            Step("block", [n, D], ["n", "d_model"], layer=i, norms=norms(cache[act_name("resid_post", i)]))
        )
    top = torch.softmax(logits, dim=-1).topk(min(k, V), dim=-1)
    steps += [
        Step("final_norm", [n, D], ["n", "d_model"], norms=norms(final_norm_out(lm, cache))),
        Step("unembed", [n, V], ["n", "vocab"], max_logit=logits.max(dim=-1).values.cpu()),
        Step("softmax", [n, V], ["n", "vocab"], top_ids=top.indices.cpu(), top_probs=top.values.cpu()),
    ]
    return steps


@dataclass(frozen=True)
class CensusEntry:
    key: str  # "live" or a REFERENCE key
    name: str
    live: bool
    config: ModelConfig


@dataclass(frozen=True)
class Anatomy:
    ids: list[int]
    block_norms: torch.Tensor  # (L, len(BLOCK_STAGES), n)
    pipeline: list[Step]
    census: list[CensusEntry]  # the live model, then the reference configs


def anatomy(lm: LanguageModel, ids: list[int], top_k: int = 5) -> Anatomy:
    """Everything the anatomy page draws for one prompt, from one forward pass."""
    cache, logits = forward_capture(lm, ids)
    census = [CensusEntry("live", lm.name, True, lm.config)]
    census += [CensusEntry(k, c.name, False, c) for k, c in REFERENCE.items()]
    return Anatomy(list(ids), block_stages(lm, cache), pipeline(lm, ids, cache, logits, top_k), census)
