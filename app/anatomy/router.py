"""POST /api/anatomy: the chapter's block diagram with one prompt's live numbers."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import Rt, json
from ..schemas import ERRORS
from . import handler
from .schemas import AnatomyRequest, AnatomyResponse

router = APIRouter(tags=["cost"])


@router.post("/api/anatomy", response_model=AnatomyResponse, responses=ERRORS, summary="One block, live")
def anatomy(req: AnatomyRequest, rt: Rt) -> Response:
    """The chapter's block diagram with this prompt's numbers: the norm of the residual vector at each
    step (x, normalise, attention, add, normalise, feed-forward, add) for every layer and position;
    the whole model from token ids to softmax with the shape at each arrow; and the parameter census
    of the live model and the reference configs."""
    return json(handler.report(rt, req))
