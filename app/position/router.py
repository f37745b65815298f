"""The position lab: shuffle the tokens (POST /api/permutation), swap who bites whom
(POST /api/word-order), and RoPE's clock with its offset-only scores (POST /api/rope)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import Rt, json
from ..schemas import ERRORS
from . import handler
from .schemas import (
    PermutationRequest,
    PermutationResponse,
    RopeRequest,
    RopeResponse,
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
