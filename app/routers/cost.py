"""The cost lab (GET/POST /api/cost, POST /api/cost/timing) and the block anatomy (POST /api/anatomy)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response

from ..deps import Service
from ..exclusive import Busy
from ..schemas import ERRORS, ErrorResponse
from ..schemas_cost import (
    AnatomyRequest,
    AnatomyResponse,
    CostRequest,
    CostResponse,
    TimingRequest,
    TimingResponse,
)

router = APIRouter(tags=["cost"])
BUSY = {
    503: {"model": ErrorResponse, "description": "Another measurement is running; retry in a few seconds."}
}


@router.get(
    "/api/cost", response_model=CostResponse, responses=ERRORS, summary="Attention's cost at n tokens"
)
def cost_get(service: Service, query: Annotated[CostRequest, Query()]) -> Response:
    """The chapter's arithmetic for n tokens, for the live model and for GPT-2 small, Llama-2-7B,
    Llama-2-70B and Llama-3-8B: n^2 scores per head and in total, their bytes if materialised,
    attention FLOPs (projections vs the n^2 part) against the feed-forward with the crossover n,
    the KV cache with and without grouped-query attention, the chapter's table, and curves over n.
    Example: `GET /api/cost?n=4096`."""
    return Response(service.cost(query), media_type="application/json")


@router.post(
    "/api/cost", response_model=CostResponse, responses=ERRORS, summary="Attention's cost at n tokens"
)
def cost_post(req: CostRequest, service: Service) -> Response:
    """The same as `GET /api/cost`, with a JSON body."""
    return Response(service.cost(req), media_type="application/json")


@router.post(
    "/api/cost/timing", response_model=TimingResponse, responses=ERRORS | BUSY, summary="Time attention here"
)
def timing(req: TimingRequest, service: Service) -> Response:
    """Times the live model's own attention module (one layer: projections, scores, causal mask,
    softmax, weighted sum) and one whole block at n = 16, 32, ... max_n on this server, median of
    `repeats` runs, and fits the exponent of time against n over the largest sizes. Takes a few
    seconds; one measurement runs at a time."""
    try:
        return Response(service.cost_timing(req), media_type="application/json")
    except Busy as e:
        raise HTTPException(503, str(e), headers={"Retry-After": "5"}) from e


@router.post("/api/anatomy", response_model=AnatomyResponse, responses=ERRORS, summary="One block, live")
def anatomy(req: AnatomyRequest, service: Service) -> Response:
    """The chapter's block diagram with this prompt's numbers: the norm of the residual vector at each
    step (x, normalise, attention, add, normalise, feed-forward, add) for every layer and position;
    the whole model from token ids to softmax with the shape at each arrow; and the parameter census
    of the live model and the reference configs."""
    return Response(service.anatomy(req), media_type="application/json")
