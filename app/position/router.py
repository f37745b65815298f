"""The position lab: shuffle the tokens (POST /api/permutation), swap who bites whom
(POST /api/word-order), RoPE's clock with its offset-only scores (POST /api/rope), and RoPE run past
its training length with and without interpolation (POST /api/rope/stretch), and where the residual stream
keeps position (POST /api/position/probe)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import Rt, json
from ..schemas import ERRORS
from . import handler, probe, stretch
from .schemas import (
    PermutationRequest,
    PermutationResponse,
    ProbeRequest,
    ProbeResponse,
    RopeRequest,
    RopeResponse,
    StretchRequest,
    StretchResponse,
    WordOrderRequest,
    WordOrderResponse,
)

router = APIRouter(tags=["position"])


@router.post(
    "/api/permutation", response_model=PermutationResponse, responses=ERRORS, summary="Shuffle the tokens"
)
def permutation(req: PermutationRequest, rt: Rt) -> Response:
    """Runs the prompt and a permutation of its tokens with position off/on and the causal mask off/on,
    puts the permuted run back in the original order (its attention[inverse[i], inverse[j]] beside the
    original's attention[i, j]) and reports what changed: with neither position nor mask only float
    rounding (~1e-7) is left, because attention alone is permutation-equivariant."""
    return json(handler.permutation(rt, req))


@router.post("/api/word-order", response_model=WordOrderResponse, responses=ERRORS, summary="Dog bites man")
def word_order(req: WordOrderRequest, rt: Rt) -> Response:
    """Two sentences made of the same tokens in different orders ("The dog bites the man." and "The man
    bites the dog."): each token's final representation and the next-token prediction, compared with
    position off/on and the causal mask off/on."""
    return json(handler.word_order(rt, req))


@router.post("/api/rope", response_model=RopeResponse, responses=ERRORS, summary="The RoPE clock")
def rope(req: RopeRequest, rt: Rt) -> Response:
    """RoPE models: every hand's angle over the positions (at a position-interpolation scale), and the
    score of one query/key pair against the offset m - n at several absolute positions. GPT-2-style
    models: their learned position embeddings (similarity and principal components) instead."""
    return json(handler.rope(rt, req))


@router.post(
    "/api/rope/stretch", response_model=StretchResponse, responses=ERRORS, summary="RoPE stretched, measured"
)
def rope_stretch(req: StretchRequest, rt: Rt) -> Response:
    """Next-token loss (nats) by position on held-out text run to `factor` x the model's context length,
    with no scaling and with position interpolation (positions divided by each of `scales`), averaged
    over `windows` windows and binned by position. Computed once per model and request (tens of
    seconds on 2 CPU cores), then answered at once; while another computation runs, 503 with
    Retry-After. GPT-2-style models: `applies` is false and `message` says why."""
    return json(stretch.rope_stretch(rt, req))


@router.post(
    "/api/position/probe", response_model=ProbeResponse, responses=ERRORS, summary="Where position lives"
)
def position_probe(req: ProbeRequest, rt: Rt) -> Response:
    """A linear probe (ridge regression) reads each token's position in 64-token windows of held-out text
    from every point of the residual stream, with the causal mask on and off: held-out R² and mean error
    in tokens. Learned positions put it there from the start; with no positional encoding only the mask
    can give it back; RoPE keeps it inside attention. Computed once per model (seconds), then answered at
    once; while another computation runs, 503 with Retry-After."""
    return json(probe.position_probe_answer(rt, req))
