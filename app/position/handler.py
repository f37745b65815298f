"""The position lab: validate, run labs/position.py, build the response models."""

from __future__ import annotations

import math

import torch

from labs.position import (
    compare_orders,
    default_focus,
    inverse,
    learned_positions,
    make_permutation,
    match_tokens,
    model_qk,
    permutation_experiment,
    random_qk,
    rope_clock,
    rope_offset_scores,
)
from model import LanguageModel

from ..errors import BadInput, sentence
from ..predictions import token_probs
from ..runtime import Runtime
from ..wire import rounded, sig
from . import text
from .schemas import (
    MAX_CLOCK_POSITIONS,
    MAX_PERMUTATION_TOKENS,
    PermutationRequest,
    PermutationResponse,
    RopeRequest,
    RopeResponse,
    WordOrderRequest,
    WordOrderResponse,
)

CLOCK_SAMPLES = 1025  # slider stops sent for the clock; every position when the range is smaller
LEARNED_SAMPLES = 128  # position vectors drawn for a GPT-2-style model


def short_ids(rt: Runtime, lm: LanguageModel, prompt: str, what: str) -> list[int]:
    ids = rt.ids(lm, prompt)
    if len(ids) > MAX_PERMUTATION_TOKENS:
        raise BadInput(text.too_long(what, len(ids), MAX_PERMUTATION_TOKENS))
    return ids


# ---------------------------------------------------------------- /api/permutation


def permutation(rt: Runtime, req: PermutationRequest) -> bytes:
    lm = rt.lm(req.model)
    ids = short_ids(rt, lm, req.prompt, "The prompt")
    if len(ids) < 2:
        raise BadInput("The prompt has one token: type at least two, so there is an order to change.")
    rt.check_heads(lm, [(req.layer, req.head)])
    try:
        perm = make_permutation(len(ids), req.permutation, seed=req.seed, swap=req.swap, order=req.order)
    except ValueError as e:
        raise BadInput(sentence(e)) from e

    def build() -> PermutationResponse:
        r = permutation_experiment(lm, ids, perm, req.layer, req.head)
        return PermutationResponse(
            model=lm.name, positional=lm.config.positional, n=len(ids), tokens=r.tokens, token_ids=ids,
            permutation=perm, inverse=inverse(perm), permuted_tokens=[r.tokens[p] for p in perm],
            layer=req.layer, head=req.head, kv_head=req.head // lm.config.n_rep,
            conditions=[permuted_condition(c) for c in r.conditions], causal_note=text.CAUSAL_NOTE,
        )  # fmt: skip

    return rt.cached("permutation", lm, req, build)


def permuted_condition(c) -> dict:
    return {
        "position": c.position, "causal": c.causal, "original": rounded(c.original, 5),
        "reordered": rounded(c.reordered, 5), "diff": sig(c.diff), "head_max_diff": c.head_max_diff,
        "attention_max_diff": c.attention_max_diff, "probs_max_diff": c.probs_max_diff,
        "logits_max_diff": c.logits_max_diff, "resid_max_diff": c.resid_max_diff, "resid_scale": c.resid_scale,
        "equivariant": c.equivariant,
    }  # fmt: skip


# ---------------------------------------------------------------- /api/word-order


def word_order(rt: Runtime, req: WordOrderRequest) -> bytes:
    lm = rt.lm(req.model)
    ids_a = short_ids(rt, lm, req.prompt_a, "The first sentence")
    ids_b = short_ids(rt, lm, req.prompt_b, "The second sentence")
    try:
        match = match_tokens(ids_a, ids_b)
    except ValueError as e:
        raise BadInput(text.token_mismatch(lm, ids_a, ids_b)) from e
    focus = default_focus(match, lm.tokenizer.displays(ids_a)) if req.focus is None else req.focus
    if focus >= len(ids_a):
        raise BadInput(
            f"focus {focus} is outside the first sentence's {len(ids_a)} tokens (0-{len(ids_a) - 1})."
        )
    req = req.model_copy(update={"focus": focus})

    def build() -> WordOrderResponse:
        cmp = compare_orders(lm, ids_a, ids_b, focus)
        return WordOrderResponse(
            model=lm.name, positional=lm.config.positional, tokens_a=cmp.tokens_a, tokens_b=cmp.tokens_b,
            match=cmp.match, focus=focus, same_last_token=cmp.same_last_token,
            conditions=[order_condition(lm, c, req.top_k) for c in cmp.conditions], notes=text.order_notes(cmp),
        )  # fmt: skip

    return rt.cached("word-order", lm, req, build)


def order_condition(lm: LanguageModel, c, k: int) -> dict:
    def top(p: torch.Tensor) -> list:
        t = p.topk(min(k, p.shape[-1]))
        return token_probs(lm, t.indices.tolist(), [round(float(x), 6) for x in t.values])

    return {
        "position": c.position, "causal": c.causal, "token_diffs": sig(torch.tensor(c.token_diffs)),
        "focus": {"a": sig(c.focus_a, 4), "b": sig(c.focus_b, 4), "max_diff": c.focus_max_diff,
                  "cosine": c.focus_cosine},
        "next": {"a": top(c.next_a), "b": top(c.next_b), "max_diff": c.next_max_diff},
    }  # fmt: skip


# ---------------------------------------------------------------- /api/rope


def rope(rt: Runtime, req: RopeRequest) -> bytes:
    lm = rt.lm(req.model)
    cfg = lm.config
    if req.source == "random" or cfg.positional != "rope":
        rt.ids(lm, req.prompt)  # unused there, but part of the cache key: the same limits as everywhere
    if cfg.positional == "learned":
        return rt.cached("rope", lm, req, lambda: learned(lm))
    if cfg.positional == "none":
        return rt.cached("rope", lm, req, lambda: RopeResponse(
            model=lm.name, positional="none", message=text.NOPE_NOTE, clock=None, curves=None, learned=None))  # fmt: skip
    scale = req.scale or cfg.rope_scale
    span = req.positions or min(MAX_CLOCK_POSITIONS, round(cfg.context_length * scale))
    keys = req.key_positions or sorted({0, round(span / 8), round(span / 4), round(span / 2)})
    ids, query, key = qk_tokens(rt, lm, req) if req.source == "model" else ([], None, None)
    req = req.model_copy(
        update={"scale": scale, "positions": span, "key_positions": keys, "query": query, "key": key}
    )

    def build() -> RopeResponse:
        q, k, detail = query_key(lm, req, ids)
        stops = torch.linspace(0, span - 1, min(span, CLOCK_SAMPLES)).round().long().unique()
        clock = rope_clock(cfg, scale, stops)
        curves = rope_offset_scores(cfg, q, k, keys, req.max_offset, scale)
        reference = None
        if scale != cfg.rope_scale:
            reference = rounded(rope_offset_scores(cfg, q, k, keys[:1], req.max_offset).scores[0], 5)
        trained_end = cfg.context_length / cfg.rope_scale  # the last angle training ever saw, per unit speed
        return RopeResponse(
            model=lm.name, positional="rope", message=text.rope_message(cfg, clock), learned=None,
            clock={
                "head_dim": clock.head_dim, "base": clock.base, "scale": scale, "trained_scale": cfg.rope_scale,
                "context_length": cfg.context_length, "inv_freq": clock.inv_freq.double().tolist(),
                "periods": clock.periods.tolist(), "trained_positions": cfg.context_length * scale / cfg.rope_scale,
                "turns_in_context": [t / (2 * math.pi) for t in (clock.inv_freq.double() * trained_end).tolist()],
                "positions": stops.tolist(), "angles": rounded(clock.angles, 4),
            },
            curves={
                "source": req.source, "detail": detail, "offsets": curves.offsets.tolist(),
                "key_positions": curves.key_positions, "scores": rounded(curves.scores, 5),
                "spread": curves.spread, "reference": reference,
            },
        )  # fmt: skip

    return rt.cached("rope", lm, req, build)


def qk_tokens(rt: Runtime, lm: LanguageModel, req: RopeRequest) -> tuple[list[int], int, int]:
    """Check the prompt, head and tokens that give a real query/key pair (source=model)."""
    ids = short_ids(rt, lm, req.prompt, "The prompt")
    rt.check_heads(lm, [(req.layer, req.head)])
    query = len(ids) - 1 if req.query is None else req.query
    key = max(query - 1, 0) if req.key is None else req.key
    for name, i in (("query", query), ("key", key)):
        if i >= len(ids):
            raise BadInput(
                f"The {name} token {i} is outside the prompt's {len(ids)} tokens (0-{len(ids) - 1})."
            )
    return ids, query, key


def query_key(lm: LanguageModel, req: RopeRequest, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, str]:
    """The query/key pair whose score is drawn, before rotation, and where it came from in words."""
    if req.source == "random":
        q, k = random_qk(lm.config.hd, req.seed)
        return q, k, text.random_detail(lm.config.hd, req.seed)
    q, k = model_qk(lm, ids, req.layer, req.head, req.query, req.key)
    return q, k, text.model_detail(req.layer, req.head, req.query, req.key, lm.tokenizer.displays(ids))


def learned(lm: LanguageModel) -> RopeResponse:
    data = learned_positions(lm.net)
    P = len(data.positions)
    idx = torch.linspace(0, P - 1, min(P, LEARNED_SAMPLES)).round().long().unique()
    return RopeResponse(
        model=lm.name, positional="learned", message=text.LEARNED_NOTE, clock=None, curves=None,
        learned={
            "positions": idx.tolist(), "similarity": rounded(data.similarity[idx][:, idx], 3),
            "pca": rounded(data.pca[idx], 4), "explained": data.explained, "norms": rounded(data.norms[idx], 4),
        },
    )  # fmt: skip
