"""The trace of one prompt: everything the app shows, captured in one forward pass."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .hooks import Run, act_name
from .transformer import Transformer


@dataclass(frozen=True)
class Trace:
    token_ids: list[int]
    tokens: list[str]  # display strings, see tokenizer.make_visible
    attention: torch.Tensor  # (L, H, n, n) softmax probabilities, float32
    resid_norms: torch.Tensor  # (2L+1, n) |x| after embedding, then after each attention and MLP add
    stage_names: list[str]  # 2L+1 names for the rows of resid_norms
    attn_write_norms: torch.Tensor  # (L, n) |what attention added|
    mlp_write_norms: torch.Tensor  # (L, n) |what the feed-forward added|
    logits: torch.Tensor  # (n, V); with last_logits_only, (1, V): the last position's alone
    lens_ids: torch.Tensor | None  # (L, n, k) logit lens: top-k tokens read off the residual after each layer
    lens_probs: torch.Tensor | None  # (L, n, k); both None when lens_k = 0
    resid: torch.Tensor | None = None  # (L+1, n, D) residual stream after embedding and each block

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)


def stage_names(n_layer: int) -> list[str]:
    names = ["embed"]
    for i in range(n_layer):
        names += [f"L{i} +attn", f"L{i} +mlp"]
    return names


TRACED = ("resid_pre", "pattern", "attn_out", "resid_mid", "mlp_out", "resid_post")


def capture_names(n_layer: int) -> list[str]:
    return [act_name(short, i) for i in range(n_layer) for short in TRACED]


@torch.inference_mode()
def run_trace(
    net: Transformer,
    ids: list[int],
    tokens: list[str],
    run: Run,
    lens_k: int = 5,
    keep_resid: bool = False,
    last_logits_only: bool = False,
) -> Trace:
    """`last_logits_only` unembeds the last position alone: on an 8k vocabulary the unembedding of every
    position is a third of a 4-layer model's forward, and a keystroke's view needs only the last one."""
    if run.impl != "explicit":
        raise ValueError("a trace shows attention patterns, which only impl='explicit' computes")
    if last_logits_only and lens_k > 0:
        raise ValueError("the logit lens reads every position's logits: use lens_k=0 with last_logits_only")
    L = net.cfg.n_layer
    run.capture = set(capture_names(L))
    device = next(net.parameters()).device
    idx = torch.tensor([ids], dtype=torch.long, device=device)
    final = net.residual_stream(idx, run)
    logits = net.unembed(net.ln_final(final[:, -1:] if last_logits_only else final, run))[0].float()
    c = {k: v[0] for k, v in run.cache.items()}  # drop the batch dimension: views, no copies

    def per_layer(short: str) -> list[torch.Tensor]:
        return [c[act_name(short, i)] for i in range(L)]

    def norms(short: str) -> torch.Tensor:
        return torch.stack([x.float().norm(dim=-1) for x in per_layer(short)])

    posts = per_layer("resid_post")
    stages = [c[act_name("resid_pre", 0)]]
    for mid, post in zip(per_layer("resid_mid"), posts, strict=True):
        stages += [mid, post]
    # The lens costs L-1 extra unembeddings (5x a whole forward on a 50k vocabulary), so lens_k = 0 skips
    # it. The last layer's lens is the model's own prediction: reuse the logits instead of recomputing.
    lens = None
    if lens_k > 0:
        lens = [top_k(net.unembed(net.ln_final(x, None)), lens_k) for x in posts[:-1]] + [
            top_k(logits, lens_k)
        ]
    return Trace(
        token_ids=list(ids),
        tokens=tokens,
        attention=torch.stack(per_layer("pattern")).float().cpu(),
        resid_norms=torch.stack([s.float().norm(dim=-1) for s in stages]).cpu(),
        stage_names=stage_names(L),
        attn_write_norms=norms("attn_out").cpu(),
        mlp_write_norms=norms("mlp_out").cpu(),
        logits=logits.cpu(),
        lens_ids=torch.stack([i for i, _ in lens]).cpu() if lens else None,
        lens_probs=torch.stack([p for _, p in lens]).cpu() if lens else None,
        resid=torch.stack([stages[0], *posts]).float().cpu() if keep_resid else None,
    )


def top_k(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k token ids and probabilities of (n, V) logits. Called one layer at a time for the logit
    lens, so a 50k vocabulary never materialises (L, n, V) at once."""
    top = torch.softmax(logits.float(), dim=-1).topk(min(k, logits.shape[-1]), dim=-1)
    return top.indices, top.values
