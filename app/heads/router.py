"""The head atlas: what each head does (GET /api/heads), each head on its probe, and the evidence
(POST /api/heads/ablation: knock heads out, watch the behaviour go)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from ..deps import ModelName, Rt, json
from ..schemas import ERRORS
from . import handler
from .schemas import (
    HeadAblationRequest,
    HeadAblationResponse,
    HeadsResponse,
    ProbeKey,
    ProbeResponse,
    PromptRolesRequest,
    PromptRolesResponse,
)

router = APIRouter(tags=["heads"])
Probe = Annotated[ProbeKey, Query(description="prose, repeat or pronoun")]


@router.get("/api/heads", response_model=HeadsResponse, responses=ERRORS, summary="Head roles of a model")
def heads(rt: Rt, model: ModelName = None) -> Response:
    """Every head's score for every role (previous-token, induction, duplicate-token, first-token, local,
    pronoun -> name), measured once per model on fixed probes, with each role's threshold, the heads it
    labels, its short badge label and a one-line explanation, and what each summary score of
    POST /api/head means. Example: `GET /api/heads?model=classroom`."""
    return json(handler.roles(rt, model))


@router.get(
    "/api/heads/probe", response_model=ProbeResponse, responses=ERRORS, summary="Every head on a probe"
)
def probe(rt: Rt, probe: Probe, model: ModelName = None) -> Response:
    """The tokens of a role's probe and every head's attention on it (u8 payload as in /api/trace), to
    draw a head where its role shows: the stripe of an induction head on `repeat`, the sub-diagonal of a
    previous-token head on `prose`. Example: `GET /api/heads/probe?probe=repeat`."""
    return json(handler.probe(rt, model, probe))


@router.post(
    "/api/heads/prompt",
    response_model=PromptRolesResponse,
    responses=ERRORS,
    summary="Role scores on a prompt",
)
def prompt_roles(req: PromptRolesRequest, rt: Rt) -> Response:
    """The role scores that make sense on any text, measured on this prompt's attention."""
    return json(handler.prompt_roles(rt, req))


@router.post(
    "/api/heads/ablation", response_model=HeadAblationResponse, responses=ERRORS, summary="Knock out heads"
)
def ablation(req: HeadAblationRequest, rt: Rt) -> Response:
    """Knock out `heads` (or every head labelled `role`) by zero or mean ablation. Reports the change in
    next-token probabilities after the prompt, and the loss on the second copy of the repeated random
    sequence with every head, without these heads, and without the same number of random other heads
    (seeded), each as a sentence a class can read."""
    return json(handler.ablation(rt, req))
