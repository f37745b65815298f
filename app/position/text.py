"""What the position lab's page reads in words (the numbers come from labs/position.py)."""

from __future__ import annotations

from collections import Counter

from labs.position import OrderComparison, RopeClock
from labs.position_probe import Probe
from model import LanguageModel
from model.config import ModelConfig

CAUSAL_NOTE = (
    "With the causal mask, token i may only look at tokens 0..i, so shuffling changes what every token "
    "is allowed to see: the model can infer order from its visible context even with no position signal."
)
LEARNED_NOTE = (
    "This model adds a learned vector per absolute position to each token's embedding. Nothing rotates, "
    "so there are no clock hands, and nothing forces a query-key score to depend only on the distance m - n."
)

NOPE_NOTE = (
    "This model has no positional encoding at all: no clock turns its queries and keys, and no table adds "
    "a vector per position. The causal mask is its only source of order (the probe at the bottom of the "
    "page measures how much that gives back)."
)


def too_long(what: str, n: int, limit: int) -> str:
    return (
        f"{what} is {n} tokens long; the position lab takes at most {limit} "
        "tokens, because every head's map is sent in full. Shorten it."
    )


def token_mismatch(lm: LanguageModel, ids_a: list[int], ids_b: list[int]) -> str:
    ca, cb = Counter(ids_a), Counter(ids_b)
    only_a = [repr(lm.tokenizer.display(i)) for i in (ca - cb).elements()]
    only_b = [repr(lm.tokenizer.display(i)) for i in (cb - ca).elements()]
    return (
        "The two sentences must be made of the same tokens in another order. Only in the first: "
        f"{', '.join(only_a) or 'nothing'}; only in the second: {', '.join(only_b) or 'nothing'}. "
        "(A word at the start of a sentence is a different token from the same word after a space.)"
    )


def order_notes(cmp: OrderComparison) -> dict[str, str]:
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


def random_detail(head_dim: int, seed: int) -> str:
    return f"a random query and key (seed {seed}), {head_dim} numbers each"


def model_detail(layer: int, head: int, query: int, key: int, tokens: list[str]) -> str:
    return (
        f"layer {layer} head {head}: the query of token {query} ({tokens[query]}) and the key "
        f"of token {key} ({tokens[key]}), taken before RoPE and placed at every pair of positions"
    )


def rope_message(cfg: ModelConfig, clock: RopeClock) -> str:
    p = clock.periods
    return (
        f"{len(p)} hands, one per pair of the {cfg.hd} dimensions of a head (base {cfg.rope_base:g}). "
        f"The fastest turns once every {p[0]:.1f} positions: it tells neighbours apart. The slowest turns "
        f"once every {p[-1]:,.0f} positions: it tells roughly where in the text you are."
    )


# ---- /api/rope/stretch ----

STRETCH_TEXT = (
    "held-out stories: the validation documents of the generated stories (labs/stories.py), which the "
    "bundled classroom model never trained on, joined by blank lines as in training"
)
EPS_NATS = 0.05  # smaller differences are read as "about the same"


def learned_stretch(cfg: ModelConfig, T: int) -> str:
    C = cfg.context_length
    return (
        f"This model has learned positions: a table of {C:,} vectors, one per position 0-{C - 1:,}, added to "
        f"each token. Position {C:,} has no row in that table, so the model cannot read a window of "
        f"{T:,} tokens at all, and there is nothing to divide: interpolation is a RoPE idea (angles can be "
        "computed for any position, a learned table cannot)."
    )


def nope_stretch(cfg: ModelConfig, T: int) -> str:
    return (
        f"This model has no positional encoding: there are no angles to run out of past position "
        f"{cfg.context_length - 1:,} and nothing to divide, so interpolation does not apply. (It trained on "
        f"{cfg.context_length:,} tokens; a window of {T:,} is refused like any prompt past its context.)"
    )


def stretch_message(r) -> str:
    return (
        f"Next-token loss (cross-entropy, nats) at each position of {r.windows} windows of {r.length:,} "
        f"held-out tokens, {r.length // r.context_length}x the {r.context_length:,} the model trained on; "
        f"each point averages {r.bin_width} positions of every window. Measured on this server in "
        f"{r.seconds:.0f} s."
    )


def stretch_sentence(r) -> str:
    C, T = r.context_length, r.length
    none = next(c for c in r.curves if c.scale == 1)
    out = [
        f"Without scaling the loss is {none.inside:.2f} nats inside the training length and "
        f"{none.beyond:.2f} past it (positions {C:,}-{T - 2:,}): there the slow hands reach angles training "
        "never saw."
        if none.beyond > none.inside + EPS_NATS
        else f"Without scaling the loss is {none.inside:.2f} nats inside the training length and "
        f"{none.beyond:.2f} past it: this model reads past its training length without breaking."
    ]
    stretched = [c for c in r.curves if c.scale > 1]
    if not stretched:
        return out[0]
    best = min(stretched, key=lambda c: c.beyond)
    s = f"{best.scale:g}"
    if best.beyond < none.beyond - EPS_NATS:
        out.append(
            f"Interpolation by {s} brings the loss past it down to {best.beyond:.2f}: that is what it fixes."
        )
    else:
        out.append(f"Interpolation by {s} does not bring the loss past it down ({best.beyond:.2f}).")
    cost = best.inside - none.inside
    if cost > EPS_NATS:
        out.append(
            f"What it costs: inside the training length the loss rises from {none.inside:.2f} to "
            f"{best.inside:.2f}, because neighbouring tokens now sit 1/{s} of a position apart, closer than "
            "training ever put them; without fine-tuning the model reads them worse."
        )
    else:
        out.append(
            f"Inside the training length it costs about nothing ({best.inside:.2f} against {none.inside:.2f})."
        )
    for c in stretched:
        end = round(C * c.scale)
        if end < T - 1 and float(c.loss[end:].mean()) > c.inside + EPS_NATS:
            out.append(
                f"Scale {c.scale:g} keeps only positions 0-{end - 1:,} within the trained angles; past them its "
                f"loss climbs again ({float(c.loss[end:].mean()):.2f})."
            )
    return " ".join(out)


# ---- /api/position/probe ----

READS, LITTLE = 0.5, 0.25  # R² from which the probe "reads" position, and below which it finds little
MASK_GAVE = 0.25  # the mask "gave the order" when turning it off costs at least this much R²


def probe_sentence(positional: str, p: Probe) -> str:
    """Where this model keeps position, in words, from the probe's own numbers."""
    on, off = p.causal, p.no_mask
    best, best_off = max(on, key=lambda x: x.r2), max(off, key=lambda x: x.r2)
    read = f"R² {best.r2:.2f}, within {best.error:.1f} of {p.window} tokens (a guess of the middle is off by {p.chance_error:.1f})"
    out = []
    if positional == "learned":
        added = on[1]
        out.append(f"The position vectors write it into the stream before block 0: R² {added.r2:.2f} "
                   f"(token embeddings alone {on[0].r2:.2f}); after the last block it is {on[-1].r2:.2f}.")  # fmt: skip
        return " ".join(out)
    held = "hold no position" if on[0].r2 < LITTLE else "already hint at position"
    out.append(f"The token embeddings {held} (R² {on[0].r2:.2f}).")
    if best.r2 >= READS:
        out.append(f"The best read is {best.name}: {read}.")
    else:
        out.append(f"The best read finds little: {best.name}, {read}.")
    if best.r2 - best_off.r2 >= MASK_GAVE:
        out.append(f"With the causal mask off it falls to R² {best_off.r2:.2f}: the order came from the mask "
                   "(token i sees i + 1 tokens, so how its attention spreads tells how far in it is).")  # fmt: skip
    if positional == "rope":
        out.append("RoPE adds nothing to the stream: it turns each head's queries and keys, so attention feels "
                   + ("offsets while the vectors between blocks keep little of where a token is."
                      if best.r2 < READS else "offsets, and the blocks wrote position into the stream themselves."))  # fmt: skip
    return " ".join(out)
