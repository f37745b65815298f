"""The chapter's block diagram and whole-model pipeline, filled in with one prompt's live numbers.

`block_stages` measures the residual stream at each step of every block (x, norm, attention, add,
norm, feed-forward, add) for every position; `pipeline` gives the shape at each arrow of the whole
model (token ids -> embedding -> blocks -> final norm -> unembedding -> softmax) with the numbers
that flow through it. Both run one forward pass of the model's own modules.
"""

from __future__ import annotations

import torch

from model.config import ModelConfig
from model.hooks import Run
from model.lm import LanguageModel

from .census import param_census
from .cost import REFERENCE, arch, feed_forward_share

# One row per arrow of the chapter's block diagram, in order.
BLOCK_STAGES = (
    ("x_in", "x (residual stream in)"),
    ("norm1", "after normalise"),
    ("attn_out", "multi-head attention out"),
    ("resid_mid", "after add: x + attention"),
    ("norm2", "after normalise"),
    ("mlp_out", "feed-forward out"),
    ("resid_post", "after add: x + feed-forward"),
)


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


@torch.inference_mode()
def forward_capture(
    lm: LanguageModel, ids: list[int], run: Run
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """One forward pass recording every block's residual steps; returns (cache without batch, logits)."""
    L = lm.config.n_layer
    names = {"hook_embed", "hook_pos_embed", "ln_final.hook_normalized"}
    for i in range(L):
        names |= {f"blocks.{i}.{h}" for h in ("hook_resid_pre", "hook_attn_out", "hook_resid_mid",
                                              "hook_mlp_out", "hook_resid_post")}  # fmt: skip
    run.capture = names
    logits = lm.net(torch.tensor([ids], device=lm.device), run)[0].float()  # (n, V)
    return {k: v[0] for k, v in run.cache.items()}, logits


@torch.inference_mode()
def block_stages(lm: LanguageModel, cache: dict[str, torch.Tensor]) -> torch.Tensor:
    """(L, 7, n) L2 norms at each stage of BLOCK_STAGES. The norm outputs are recomputed with the
    block's own norm modules, because they are not hook points."""
    rows = []
    for i, block in enumerate(lm.net.blocks):
        x, attn, mid, mlp, post = (cache[f"blocks.{i}.{h}"] for h in (
            "hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"))  # fmt: skip
        stages = [x, block.ln1(x), attn, mid, block.ln2(mid), mlp, post]
        rows.append(torch.stack([s.float().norm(dim=-1) for s in stages]))
    return torch.stack(rows).cpu()


def pipeline(lm: LanguageModel, ids: list[int], cache: dict[str, torch.Tensor], logits: torch.Tensor,
             k: int = 5) -> list[dict]:  # fmt: skip
    """The whole model as the chapter draws it: each step's name, what it does, the shape it hands on,
    and per-position numbers (norms, top logit, top-k next tokens)."""
    cfg, n = lm.config, len(ids)
    D, V = cfg.d_model, cfg.vocab_size

    def norms(t: torch.Tensor) -> list[float]:
        return t.float().norm(dim=-1).cpu().tolist()

    steps = [
        {"name": "token ids", "shape": [n], "dims": ["n"], "ids": list(ids)},
        {"name": "embedding lookup", "op": f"row of a [{V} x {D}] matrix per id", "shape": [n, D],
         "dims": ["n", "d_model"], "norms": norms(cache["hook_embed"])},
    ]  # fmt: skip
    if "hook_pos_embed" in cache:
        steps.append({"name": "+ learned positions", "op": f"row of a [{cfg.context_length} x {D}] matrix",
                      "shape": [n, D], "dims": ["n", "d_model"],
                      "norms": norms(cache["blocks.0.hook_resid_pre"])})  # fmt: skip
    for i in range(cfg.n_layer):
        steps.append({"name": f"transformer block {i + 1}", "op": "norm, attention, add, norm, feed-forward, add",
                      "shape": [n, D], "dims": ["n", "d_model"], "layer": i,
                      "norms": norms(cache[f"blocks.{i}.hook_resid_post"])})  # fmt: skip
    probs = torch.softmax(logits, dim=-1)
    top = probs.topk(min(k, V), dim=-1)
    steps += [
        {"name": "final normalise", "op": cfg.norm, "shape": [n, D], "dims": ["n", "d_model"],
         "norms": norms(cache["ln_final.hook_normalized"])},
        {"name": "output layer (unembedding)", "op": f"multiply by a [{D} x {V}] matrix", "shape": [n, V],
         "dims": ["n", "vocab"], "max_logit": logits.max(dim=-1).values.cpu().tolist()},
        {"name": "softmax", "op": "probability of each word being next", "shape": [n, V], "dims": ["n", "vocab"],
         "top_ids": top.indices.cpu().tolist(), "top_probs": top.values.cpu().tolist()},
    ]  # fmt: skip
    return steps


def anatomy_report(lm: LanguageModel, ids: list[int], top_k: int = 5) -> dict:
    """Everything the anatomy page draws for one prompt, as plain numbers and display strings."""
    cfg = lm.config
    cache, logits = forward_capture(lm, ids, lm.make_run())
    steps = pipeline(lm, ids, cache, logits, top_k)
    for step in steps:
        for key in ("norms", "max_logit"):
            if key in step:
                step[key] = [round(x, 4) for x in step[key]]
        if "top_ids" in step:
            step["top"] = [
                [
                    {"id": i, "token": lm.tokenizer.display(i), "prob": round(p, 6)}
                    for i, p in zip(ids_, ps, strict=True)
                ]
                for ids_, ps in zip(step.pop("top_ids"), step.pop("top_probs"), strict=True)
            ]
    configs = [("live", lm.name, True, cfg)] + [(k, c.name, False, c) for k, c in REFERENCE.items()]
    return {
        "model": lm.name, "n": len(ids), "tokens": lm.tokenizer.displays(ids), "token_ids": list(ids),
        "config": arch(cfg), "norm": cfg.norm, "mlp": cfg.mlp_kind, "positional": cfg.positional,
        "block": {
            "stages": [{"key": k, "label": label} for k, label in BLOCK_STAGES],
            "norms": [[[round(x, 4) for x in row] for row in layer] for layer in block_stages(lm, cache).tolist()],
            "shapes": block_shapes(cfg, len(ids)),
        },
        "pipeline": steps,
        "census": [
            {"key": k, "name": name, "live": live, "params": param_census(c), "feed_forward_share": feed_forward_share(c)}
            for k, name, live, c in configs
        ],
    }  # fmt: skip
