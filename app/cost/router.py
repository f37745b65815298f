"""The cost lab: GET/POST /api/cost (the chapter's arithmetic), POST /api/cost/timing and
POST /api/cost/memory (measured)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from ..deps import Rt, json
from ..schemas import ERRORS, ErrorResponse
from . import handler
from .schemas import (
    CostBody,
    CostRequest,
    CostResponse,
    MemoryRequest,
    MemoryResponse,
    TimingRequest,
    TimingResponse,
)

router = APIRouter(tags=["cost"])
BUSY = {
    503: {
        "model": ErrorResponse,
        "description": "Another measurement is running: retry after Retry-After seconds.",
    }
}


@router.get(
    "/api/cost", response_model=CostResponse, responses=ERRORS, summary="Attention's cost at n tokens"
)
def cost_get(rt: Rt, query: Annotated[CostRequest, Query()]) -> Response:
    """The chapter's arithmetic for n tokens, for the live model and for GPT-2 small, Llama-2-7B,
    Llama-2-70B and Llama-3-8B: n^2 scores per head and in total, their bytes if materialised,
    attention FLOPs (projections vs the n^2 part) against the feed-forward with the crossover n,
    the KV cache with and without grouped-query attention, the chapter's table, and curves over n.
    Example: `GET /api/cost?n=4096`."""
    return json(handler.cost(rt, query))


@router.post(
    "/api/cost", response_model=CostResponse, responses=ERRORS, summary="Attention's cost at n tokens"
)
def cost_post(req: CostBody, rt: Rt) -> Response:
    """The same as `GET /api/cost`, with a JSON body."""
    return json(handler.cost(rt, req))


@router.post(
    "/api/cost/timing", response_model=TimingResponse, responses=ERRORS | BUSY, summary="Time attention here"
)
def timing(req: TimingRequest, rt: Rt) -> Response:
    """Times the live model's own attention module (one layer: projections, scores, causal mask,
    softmax, weighted sum) and one whole block at n = 16, 32, ... max_n on this server, median of
    `repeats` runs, and fits the exponent of time against n over the largest sizes. Takes a few
    seconds; one measurement runs at a time."""
    return json(handler.timing(rt, req))  # a Busy lock is a 503 with Retry-After (app/errors.py)


@router.post(
    "/api/cost/memory",
    response_model=MemoryResponse,
    responses=ERRORS | BUSY,
    summary="Measure attention's memory",
)
def memory(req: MemoryRequest, rt: Rt) -> Response:
    """Peak memory of one layer of the live model's attention (its shapes), explicit (every head's
    n x n scores and probabilities materialised) and fused (`F.scaled_dot_product_attention`), at
    n = 64, 128, ... max_n on this server, measured in a fresh child process, with the exponent of
    bytes against n. Within limits.max_timing_bytes; one measurement (timing or memory) at a time;
    then cached per model and ladder (peaks do not depend on the server's load)."""
    return json(handler.memory(rt, req))
