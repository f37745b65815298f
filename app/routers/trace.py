"""POST /api/trace (everything the Explorer draws for one prompt) and POST /api/head (one head in full)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import Service
from ..schemas import ERRORS, HeadRequest, HeadResponse, TraceRequest, TraceResponse

router = APIRouter(tags=["trace"])


@router.post("/api/trace", response_model=TraceResponse, responses=ERRORS, summary="Trace one prompt")
def trace(req: TraceRequest, service: Service) -> Response:
    """Tokens, residual-stream norms by stage, sub-layer write norms, top-k next-token predictions at
    every position (temperature applied), the logit lens, and every head's attention as uint8 bytes
    (`attention.format` says how to unpack them)."""
    return Response(service.trace(req), media_type="application/json")


@router.post(
    "/api/head", response_model=HeadResponse, responses=ERRORS, summary="One head at full resolution"
)
def head(req: HeadRequest, service: Service) -> Response:
    """The float attention pattern of one head (fetched when a thumbnail is clicked) with summary scores."""
    return Response(service.head(req), media_type="application/json")
