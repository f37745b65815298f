"""GET /api/models, POST /api/trace (what the Explorer's first paint needs for one prompt), POST /api/head
(one head in full), POST /api/lens (the logit lens) and POST /api/ablation (the next-token distribution
with heads knocked out)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import Rt, json
from ..schemas import ERRORS
from . import handler
from .schemas import (
    AblationRequest,
    AblationResponse,
    HeadRequest,
    HeadResponse,
    LensRequest,
    LensResponse,
    ModelsResponse,
    TraceRequest,
    TraceResponse,
)

router = APIRouter()


@router.get("/api/models", response_model=ModelsResponse, tags=["models"], summary="Loaded models and limits")
def models(rt: Rt) -> ModelsResponse:
    """Every loaded model (the first is the default) with its architecture and parameter census by
    part, and the limits every request must respect."""
    return handler.models(rt)


@router.post(
    "/api/trace", response_model=TraceResponse, responses=ERRORS, tags=["trace"], summary="Trace one prompt"
)
def trace(req: TraceRequest, rt: Rt) -> Response:
    """What the first paint of a keystroke needs: tokens, residual-stream norms by stage, sub-layer
    write norms, top-k next-token predictions at every position (temperature applied), and every head's
    thumbnail as uint8 bytes (`thumbnails.format` says how to unpack them). One head's full matrix:
    POST /api/head; the logit lens: POST /api/lens (both reuse this forward while it is cached)."""
    return json(handler.trace(rt, req))


@router.post(
    "/api/head",
    response_model=HeadResponse,
    responses=ERRORS,
    tags=["trace"],
    summary="One head at full resolution",
)
def head(req: HeadRequest, rt: Rt) -> Response:
    """The float attention pattern of one head (fetched when a thumbnail is clicked; sliced from the
    keystroke's forward while it is cached) with summary scores (their meaning: `head_scores` of
    GET /api/heads)."""
    return json(handler.head(rt, req))


@router.post(
    "/api/lens", response_model=LensResponse, responses=ERRORS, tags=["trace"], summary="The logit lens"
)
def lens(req: LensRequest, rt: Rt) -> Response:
    """The residual stream after every layer read through the final norm and the unembedding, as if the
    model stopped there: the top `lens_k` tokens and probabilities per layer and position (no
    temperature). Fetched when the lens panel is opened: it costs several forwards on a large vocabulary."""
    return json(handler.lens(rt, req))


@router.post(
    "/api/ablation",
    response_model=AblationResponse,
    responses=ERRORS,
    tags=["ablation"],
    summary="Knock out heads",
)
def ablation(req: AblationRequest, rt: Rt) -> Response:
    """Zero ablation removes the heads' outputs; mean ablation replaces each with its mean over positions.
    Compares the distributions at `index` (default: the last token) and gives KL(intact || ablated)."""
    return json(handler.ablation(rt, req))
