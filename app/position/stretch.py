"""POST /api/rope/stretch: loss by position past the training length, without and with interpolation.

Expensive (a few dozen forwards of 4x the context), so computed once per (model, request) and kept
for the server's life (`Runtime.measured`), apart from the response cache a class's traces churn through. Each forward is
its own job on the model threads, so pages keep being answered between them; and one computation
runs at a time per server (app/exclusive.py: another gets 503 with Retry-After at once).
"""

from __future__ import annotations

import math

from labs.stretch import stretch
from model import LanguageModel

from ..errors import BadInput
from ..exclusive import exclusive
from ..runtime import Runtime
from ..wire import rounded
from . import text
from .schemas import StretchRequest, StretchResponse

HOLD_S = 60.0  # what the lock tells a waiting client the measurement may take, at most


def rope_stretch(rt: Runtime, req: StretchRequest) -> bytes:
    lm = rt.lm(req.model)
    return rt.measured("rope-stretch", lm, req, lambda: build(rt, lm, req))


def build(rt: Runtime, lm: LanguageModel, req: StretchRequest) -> StretchResponse:
    cfg = lm.config
    C, T = cfg.context_length, req.factor * cfg.context_length
    common = {"model": lm.name, "positional": cfg.positional, "context_length": C, "length": T,
              "windows": req.windows, "tokens": req.windows * T, "text": text.STRETCH_TEXT}  # fmt: skip
    if cfg.positional != "rope":
        why = text.learned_stretch(cfg, T) if cfg.positional == "learned" else text.nope_stretch(cfg, T)
        return StretchResponse(**common, applies=False, message=why, bin_width=0,
                               bin_starts=[], curves=[], sentence="", seconds=0.0)  # fmt: skip
    check_limits(rt, lm, T)
    with exclusive("stretch", hold_s=HOLD_S):
        r = stretch(lm, req.factor, req.scales, req.windows, run=lambda fn: rt.run(fn, "stretch"))
    curves = [
        {"scale": c.scale, "covers": round(C * c.scale), "bins": rounded(c.bins, 4),
         "inside": rounded(c.inside, 4), "beyond": None if math.isnan(c.beyond) else rounded(c.beyond, 4)}
        for c in r.curves
    ]  # fmt: skip
    return StretchResponse(
        **common, applies=True, message=text.stretch_message(r), bin_width=r.bin_width,
        bin_starts=r.bin_starts, curves=curves, sentence=text.stretch_sentence(r), seconds=rounded(r.seconds, 2),
    )  # fmt: skip


def check_limits(rt: Runtime, lm: LanguageModel, T: int) -> None:
    """A window's length within the cost lab's cap, and its logits (T x vocab floats, the largest
    tensor of a fused forward) within what one measurement may hold."""
    s = rt.settings
    if T > s.max_cost_n:
        raise BadInput(
            f"A window of {T:,} tokens is longer than this server runs (limits.max_cost_n = {s.max_cost_n:,}); "
            "ask for a smaller factor."
        )
    logits = T * lm.config.vocab_size * 4
    if logits > s.max_timing_bytes:
        raise BadInput(
            f"A window of {T:,} tokens would hold {logits / 2**20:,.0f} MiB of logits ({lm.config.vocab_size:,} "
            f"per token); one measurement may hold {s.max_timing_bytes / 2**20:,.0f} MiB here "
            "(limits.max_timing_bytes). Ask for a smaller factor."
        )
