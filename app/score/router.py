"""POST /api/score: how one attention score is made, from the query and key vectors to the output."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import Rt, json
from ..schemas import ERRORS
from . import handler
from .schemas import ScoreRequest, ScoreResponse

router = APIRouter(tags=["trace"])


@router.post("/api/score", response_model=ScoreResponse, responses=ERRORS, summary="How one score is made")
def score(req: ScoreRequest, rt: Rt) -> Response:
    """For one head and query position, from the model's hooks: the query vector, every key vector
    (before and after RoPE; under grouped-query attention from the head's K/V group), q.k, the scaling
    by sqrt(d_head), the mask, the softmax row (equal to the head's attention row) and the weighted sum
    of the value vectors (the head's output, hook_z)."""
    return json(handler.score(rt, req))
