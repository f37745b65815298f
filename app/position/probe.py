"""POST /api/position/probe: where the residual stream keeps each token's position, mask on and off.

A few seconds per model (two dozen forwards of 64 tokens and a ridge fit per point of the stream), so
computed once per model and kept for the server's life (`Runtime.measured`). Each forward is its own
job on the model threads, so pages keep being answered between them; and one such computation runs at a
time per server (app/exclusive.py: another gets 503 with Retry-After at once).
"""

from __future__ import annotations

from labs.position_probe import WINDOW, feature_bytes, position_probe, stream_points
from model import LanguageModel

from ..errors import BadInput
from ..exclusive import exclusive
from ..runtime import Runtime
from ..wire import rounded
from . import text
from .schemas import ProbePoint, ProbeRequest, ProbeResponse

HOLD_S = 30.0  # what the lock tells a waiting client the measurement may take, at most


def position_probe_answer(rt: Runtime, req: ProbeRequest) -> bytes:
    lm = rt.lm(req.model)
    return rt.measured("position-probe", lm, req, lambda: build(rt, lm))


def build(rt: Runtime, lm: LanguageModel) -> ProbeResponse:
    check_limits(rt, lm)
    with exclusive("probe", hold_s=HOLD_S):
        p = position_probe(lm, run=lambda fn: rt.run(fn, "probe"))

    def points(curve):
        return [
            ProbePoint(name=x.name, hook=x.hook, r2=rounded(x.r2, 4), error=rounded(x.error, 2))
            for x in curve
        ]

    return ProbeResponse(
        model=lm.name, positional=lm.config.positional, window=p.window, windows=p.windows, text=text.STRETCH_TEXT,
        chance_error=rounded(p.chance_error, 2), causal=points(p.causal), no_mask=points(p.no_mask),
        sentence=text.probe_sentence(lm.config.positional, p), seconds=rounded(p.seconds, 2),
    )  # fmt: skip


def check_limits(rt: Runtime, lm: LanguageModel) -> None:
    """Windows within the model's context, and the stream vectors the probe holds (every point of
    every held-out token) within what one measurement may hold."""
    if lm.config.context_length < WINDOW:
        raise BadInput(
            f"The position probe reads windows of {WINDOW} tokens; {lm.name} reads at most "
            f"{lm.config.context_length} at once."
        )
    need, cap = feature_bytes(lm), rt.settings.max_timing_bytes
    if need > cap:
        raise BadInput(
            f"The position probe would hold {need / 2**20:,.0f} MiB of residual-stream vectors for {lm.name} "
            f"({len(stream_points(lm))} points x {lm.config.d_model:,} numbers per token); one measurement may "
            f"hold {cap / 2**20:,.0f} MiB here (limits.max_timing_bytes)."
        )
