"""POST /api/ablation: the next-token distribution with some heads knocked out, next to the intact one."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import Service
from ..schemas import ERRORS, AblationRequest, AblationResponse

router = APIRouter(tags=["ablation"])


@router.post("/api/ablation", response_model=AblationResponse, responses=ERRORS, summary="Knock out heads")
def ablation(req: AblationRequest, service: Service) -> Response:
    """Zero ablation removes the heads' outputs; mean ablation replaces each with its mean over positions.
    Compares the distributions at `index` (default: the last token) and gives KL(intact || ablated)."""
    return Response(service.ablation(req), media_type="application/json")
