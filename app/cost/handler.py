"""The cost lab: the chapter's arithmetic for any n (cached) and a fresh timing of the live model."""

from __future__ import annotations

import torch

from labs.cost import cost_report, ladder, time_attention, timing_cap
from labs.memory import MeasurementFailed, peak_memory, unsupported
from model import LanguageModel

from ..errors import BadInput, Busy, sentence
from ..exclusive import exclusive
from ..runtime import Runtime
from ..wire import rounded
from . import text
from .schemas import CostRequest, CostResponse, MemoryRequest, MemoryResponse, TimingRequest, TimingResponse

TIMING_DEFAULT_N = 2048  # top of the cost lab's timing ladder unless asked: ~2-4 s on 2 CPU cores
TIMING_BUDGET_S = 8.0  # a timing request stops climbing the ladder before it would take longer
MEMORY_HOLD_S = 30.0  # a memory measurement: a fresh process importing torch, then the ladder twice


def cost(rt: Runtime, req: CostRequest) -> bytes:
    lm = rt.lm(req.model)
    return rt.cached("cost", lm, req, lambda: CostResponse(**cost_report(lm.config, lm.name, req.n)))


def timing(rt: Runtime, req: TimingRequest) -> bytes:
    """Not cached: each call is a fresh measurement. One at a time per server (app/exclusive.py): while
    another runs, a 503 "try again in N s" at once."""
    lm = rt.lm(req.model)
    max_n = ladder_top(rt, lm, req.max_n)
    with exclusive("timing", hold_s=TIMING_BUDGET_S + 2):
        r = rt.run(lambda: time_attention(lm.net, max_n, req.repeats, TIMING_BUDGET_S), "timing")
    t, fits = r["timing"], r["fits"]
    return TimingResponse(
        model=lm.name, device=next(lm.net.parameters()).device.type, threads=torch.get_num_threads(),
        repeats=t.repeats, ns=t.ns, seconds={k: [rounded(x, 7) for x in v] for k, v in t.seconds.items()},
        skipped=t.skipped,
        fits={k: fit_json(f) for k, f in fits.items()},
        sentence=text.timing_sentence(fits, t.ns),
    ).model_dump_json().encode()  # fmt: skip


def ladder_top(rt: Runtime, lm: LanguageModel, asked: int | None) -> int:
    """The top of a measurement's ladder: asked or the default, within limits.max_cost_n and within the
    memory one measurement may hold (limits.max_timing_bytes), else a 422 that says which."""
    cap = rt.settings.max_cost_n
    fits = timing_cap(lm.config, rt.settings.max_timing_bytes, cap)
    max_n = asked or min(TIMING_DEFAULT_N, fits)
    if max_n > cap:
        raise BadInput(
            f"max_n is {max_n}; this server measures attention up to n = {cap} (limits.max_cost_n)."
        )
    if max_n > fits:
        raise BadInput(text.too_much_memory(lm.config, lm.name, max_n, rt.settings.max_timing_bytes, fits))
    return max_n


def memory(rt: Runtime, req: MemoryRequest) -> bytes:
    """Measured in a child process under the same one-at-a-time lock as timings, then cached per model
    and ladder: unlike a time, a peak does not depend on what else the server is doing."""
    lm = rt.lm(req.model)
    top = ladder(ladder_top(rt, lm, req.max_n))[-1]  # 1000 measures what 512 does: one cache entry
    device = next(lm.net.parameters()).device.type
    if why := unsupported(device):
        raise BadInput(sentence(ValueError(why)))
    req = req.model_copy(update={"max_n": top})
    return rt.measured("cost-memory", lm, req, lambda: measure_memory(rt, lm, top, device))


def measure_memory(rt: Runtime, lm: LanguageModel, top: int, device: str) -> MemoryResponse:
    with exclusive("timing", hold_s=MEMORY_HOLD_S):
        try:
            m = rt.run(lambda: peak_memory(lm.config, top, device), "timing")
        except MeasurementFailed as e:  # the child failed or ran out of time: say so, try again later
            raise Busy(f"{sentence(e)} Try again in a minute.", retry_after=60) from e
    fits = {"explicit": m.fit("explicit"), "fused": m.fit("sdpa")}
    return MemoryResponse(
        model=lm.name, device=m.device, threads=m.threads, method=m.method, ns=m.ns, explicit=m.peak["explicit"],
        fused=m.peak["sdpa"], predicted=m.predicted, fits={k: fit_json(f) for k, f in fits.items()},
        sentence=text.memory_sentence(m, fits), seconds=rounded(m.seconds, 2),
    )  # fmt: skip


def fit_json(f: dict) -> dict:
    return {"exponent": rounded(f["exponent"], 4), "doubling_factor": rounded(f["doubling_factor"], 4),
            "fit_from": f["fit_from"], "fit_ns": f["fit_ns"], "fitted": [rounded(x, 7) for x in f["fitted"]]}  # fmt: skip
