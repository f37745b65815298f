"""The position lab's part of the model service: validate, run `labs/position.py`, answer JSON bytes.

Kept beside `service.py` (same pattern: check with the service's `lm()/ids()/heads()`, compute under
`slot()`, return `cached(...)`) so the lab's conversions do not crowd the core service.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import torch

from labs.position import (
    CAUSAL_NOTE,
    LEARNED_NOTE,
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

from .schemas_position import (
    MAX_CLOCK_POSITIONS,
    MAX_PERMUTATION_TOKENS,
    PermutationRequest,
    RopeRequest,
    WordOrderRequest,
)
from .service import BadInput, ModelService, rounded, token_probs

CLOCK_SAMPLES = 1025  # slider stops sent for the clock; every position when the range is smaller
LEARNED_SAMPLES = 128  # position vectors drawn for a GPT-2-style model


def sentence(e: Exception) -> str:
    msg = str(e)
    return f"{msg[0].upper()}{msg[1:]}." if msg else "The request is invalid."


def sig(t: torch.Tensor, digits: int = 3) -> list:
    """Nested lists with a few significant digits: a 1e-8 difference stays 1e-8, not 0."""
    a = t.detach().double().cpu().numpy()
    return np.vectorize(lambda x: float(f"{x:.{digits}g}"), otypes=[float])(a).tolist()


def short_ids(svc: ModelService, lm: LanguageModel, prompt: str, what: str) -> list[int]:
    ids = svc.ids(lm, prompt)
    if len(ids) > MAX_PERMUTATION_TOKENS:
        raise BadInput(
            f"{what} is {len(ids)} tokens long; the position lab takes at most {MAX_PERMUTATION_TOKENS} "
            "tokens, because every head's map is sent in full. Shorten it."
        )
    return ids


# ---------------------------------------------------------------- /api/permutation


def permutation(svc: ModelService, req: PermutationRequest) -> bytes:
    lm = svc.lm(req.model)
    ids = short_ids(svc, lm, req.prompt, "The prompt")
    if len(ids) < 2:
        raise BadInput("The prompt has one token: type at least two, so there is an order to change.")
    svc.heads(lm, [(req.layer, req.head)])
    try:
        perm = make_permutation(len(ids), req.permutation, seed=req.seed, swap=req.swap, order=req.order)
    except ValueError as e:
        raise BadInput(sentence(e)) from e

    def compute() -> dict:
        with svc.slot():
            r = permutation_experiment(lm, ids, perm, req.layer, req.head)
        return {
            "model": lm.name, "positional": lm.config.positional, "n": len(ids), "tokens": r.tokens,
            "token_ids": ids, "permutation": perm, "inverse": inverse(perm),
            "permuted_tokens": [r.tokens[p] for p in perm], "layer": req.layer, "head": req.head,
            "kv_head": req.head // lm.config.n_rep,
            "conditions": [permuted_condition(c) for c in r.conditions], "causal_note": CAUSAL_NOTE,
        }  # fmt: skip

    return svc.cached("permutation", lm, req, compute)


def permuted_condition(c) -> dict:
    return {
        "position": c.position, "causal": c.causal, "original": rounded(c.original, 5),
        "reordered": rounded(c.reordered, 5), "diff": sig(c.diff), "head_max_diff": c.head_max_diff,
        "attention_max_diff": c.attention_max_diff, "probs_max_diff": c.probs_max_diff,
        "logits_max_diff": c.logits_max_diff, "resid_max_diff": c.resid_max_diff, "resid_scale": c.resid_scale,
        "equivariant": c.equivariant,
    }  # fmt: skip


# ---------------------------------------------------------------- /api/word-order


def word_order(svc: ModelService, req: WordOrderRequest) -> bytes:
    lm = svc.lm(req.model)
    ids_a = short_ids(svc, lm, req.prompt_a, "The first sentence")
    ids_b = short_ids(svc, lm, req.prompt_b, "The second sentence")
    try:
        match = match_tokens(ids_a, ids_b)
    except ValueError as e:
        raise BadInput(token_mismatch(lm, ids_a, ids_b)) from e
    focus = default_focus(match) if req.focus is None else req.focus
    if focus >= len(ids_a):
        raise BadInput(
            f"focus {focus} is outside the first sentence's {len(ids_a)} tokens (0-{len(ids_a) - 1})."
        )
    req = req.model_copy(update={"focus": focus})

    def compute() -> dict:
        with svc.slot():
            cmp = compare_orders(lm, ids_a, ids_b, focus)
        return {
            "model": lm.name, "positional": lm.config.positional, "tokens_a": cmp.tokens_a,
            "tokens_b": cmp.tokens_b, "match": cmp.match, "focus": focus, "same_last_token": cmp.same_last_token,
            "conditions": [order_condition(lm, c, req.top_k) for c in cmp.conditions],
            "notes": order_notes(cmp),
        }  # fmt: skip

    return svc.cached("word-order", lm, req, compute)


def token_mismatch(lm: LanguageModel, ids_a: list[int], ids_b: list[int]) -> str:
    ca, cb = Counter(ids_a), Counter(ids_b)
    only_a = [repr(lm.tokenizer.display(i)) for i in (ca - cb).elements()]
    only_b = [repr(lm.tokenizer.display(i)) for i in (cb - ca).elements()]
    return (
        "The two sentences must be made of the same tokens in another order. Only in the first: "
        f"{', '.join(only_a) or 'nothing'}; only in the second: {', '.join(only_b) or 'nothing'}. "
        "(A word at the start of a sentence is a different token from the same word after a space.)"
    )


def order_condition(lm: LanguageModel, c, k: int) -> dict:
    def top(p: torch.Tensor) -> list[dict]:
        t = p.topk(min(k, p.shape[-1]))
        return token_probs(lm, t.indices.tolist(), [round(float(x), 6) for x in t.values])

    return {
        "position": c.position, "causal": c.causal, "token_diffs": sig(torch.tensor(c.token_diffs)),
        "focus": {"a": sig(c.focus_a, 4), "b": sig(c.focus_b, 4), "max_diff": c.focus_max_diff,
                  "cosine": c.focus_cosine},
        "next": {"a": top(c.next_a), "b": top(c.next_b), "max_diff": c.next_max_diff},
    }  # fmt: skip


def order_notes(cmp) -> dict:
    f, fb = cmp.focus, cmp.match[cmp.focus]
    word = cmp.tokens_a[f]
    before_a, before_b = "".join(cmp.tokens_a[:f]) or "nothing", "".join(cmp.tokens_b[:fb]) or "nothing"
    causal = (
        f"With the causal mask, {word} sees only the tokens before it: {before_a} in the first sentence, "
        f"{before_b} in the second. Different words before it give a different representation even with no "
        "position at all; switch the mask off to see the effect of order alone."
        if before_a != before_b
        else f"With the causal mask, {word} sees the same tokens before it in both sentences ({before_a}), "
        "but the tokens it attends to were themselves built from different prefixes."
    )
    last = (
        "Both sentences end with the same token, so the next-token prediction is read at the same token."
        if cmp.same_last_token
        else f"The sentences end with different tokens ({cmp.tokens_a[-1]} and {cmp.tokens_b[-1]}), so their "
        "next-token predictions are read at different tokens and differ even without position."
    )
    return {"causal": causal, "last": last}


# ---------------------------------------------------------------- /api/rope


def rope(svc: ModelService, req: RopeRequest) -> bytes:
    lm = svc.lm(req.model)
    cfg = lm.config
    if cfg.positional == "learned":
        return svc.cached("rope", lm, req, lambda: learned_payload(svc, lm))
    scale = req.scale or cfg.rope_scale
    span = req.positions or min(MAX_CLOCK_POSITIONS, round(cfg.context_length * scale))
    keys = req.key_positions or sorted({0, round(span / 8), round(span / 4), round(span / 2)})
    ids, query, key = qk_tokens(svc, lm, req) if req.source == "model" else ([], None, None)
    req = req.model_copy(
        update={"scale": scale, "positions": span, "key_positions": keys, "query": query, "key": key}
    )

    def compute() -> dict:
        with svc.slot():
            q, k, detail = query_key(lm, req, ids)
            stops = torch.linspace(0, span - 1, min(span, CLOCK_SAMPLES)).round().long().unique()
            clock = rope_clock(cfg, scale, stops)
            curves = rope_offset_scores(cfg, q, k, keys, req.max_offset, scale)
            reference = None
            if scale != cfg.rope_scale:
                reference = rounded(rope_offset_scores(cfg, q, k, keys[:1], req.max_offset).scores[0], 5)
        periods = clock.periods.tolist()
        trained_end = cfg.context_length / cfg.rope_scale  # the last angle training ever saw, per unit speed
        return {
            "model": lm.name, "positional": "rope", "message": rope_message(cfg, clock), "learned": None,
            "clock": {
                "head_dim": clock.head_dim, "base": clock.base, "scale": scale, "trained_scale": cfg.rope_scale,
                "context_length": cfg.context_length, "inv_freq": clock.inv_freq.double().tolist(),
                "periods": periods, "trained_positions": cfg.context_length * scale / cfg.rope_scale,
                "turns_in_context": [t / (2 * math.pi) for t in (clock.inv_freq.double() * trained_end).tolist()],
                "positions": stops.tolist(), "angles": rounded(clock.angles, 4),
            },
            "curves": {
                "source": req.source, "detail": detail, "offsets": curves.offsets.tolist(),
                "key_positions": curves.key_positions, "scores": rounded(curves.scores, 5),
                "spread": curves.spread, "reference": reference,
            },
        }  # fmt: skip

    return svc.cached("rope", lm, req, compute)


def qk_tokens(svc: ModelService, lm: LanguageModel, req: RopeRequest) -> tuple[list[int], int, int]:
    """Check the prompt, head and tokens that give a real query/key pair (source=model)."""
    ids = short_ids(svc, lm, req.prompt, "The prompt")
    svc.heads(lm, [(req.layer, req.head)])
    query = len(ids) - 1 if req.query is None else req.query
    key = max(query - 1, 0) if req.key is None else req.key
    for name, i in (("query", query), ("key", key)):
        if i >= len(ids):
            raise BadInput(
                f"The {name} token {i} is outside the prompt's {len(ids)} tokens (0-{len(ids) - 1})."
            )
    return ids, query, key


def query_key(lm: LanguageModel, req: RopeRequest, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, str]:
    """The query/key pair whose score is drawn, before rotation, and a sentence saying where it came from."""
    if req.source == "random":
        q, k = random_qk(lm.config.hd, req.seed)
        return q, k, f"a random query and key (seed {req.seed}), {lm.config.hd} numbers each"
    q, k = model_qk(lm, ids, req.layer, req.head, req.query, req.key)
    tokens = lm.tokenizer.displays(ids)
    detail = (
        f"layer {req.layer} head {req.head}: the query of token {req.query} ({tokens[req.query]}) and the key "
        f"of token {req.key} ({tokens[req.key]}), taken before RoPE and placed at every pair of positions"
    )
    return q, k, detail


def rope_message(cfg, clock) -> str:
    p = clock.periods
    return (
        f"{len(p)} hands, one per pair of the {cfg.hd} dimensions of a head (base {cfg.rope_base:g}). "
        f"The fastest turns once every {p[0]:.1f} positions: it tells neighbours apart. The slowest turns "
        f"once every {p[-1]:,.0f} positions: it tells roughly where in the text you are."
    )


def learned_payload(svc: ModelService, lm: LanguageModel) -> dict:
    with svc.slot():
        data = learned_positions(lm.net)
    P = len(data.positions)
    idx = torch.linspace(0, P - 1, min(P, LEARNED_SAMPLES)).round().long().unique()
    return {
        "model": lm.name, "positional": "learned", "message": LEARNED_NOTE, "clock": None, "curves": None,
        "learned": {
            "positions": idx.tolist(), "similarity": rounded(data.similarity[idx][:, idx], 3),
            "pca": rounded(data.pca[idx], 4), "explained": data.explained, "norms": rounded(data.norms[idx], 4),
        },
    }  # fmt: skip
