"""Request and response bodies of the block anatomy (/api/anatomy)."""

from __future__ import annotations

from pydantic import Field, model_serializer

from ..cost.schemas import Arch
from ..schemas import EXAMPLE_PROMPT, Params, PromptRequest, Strict, TokenProb
from ..schemas import examples as _examples


class AnatomyRequest(PromptRequest):
    model_config = _examples({"prompt": EXAMPLE_PROMPT}, {"prompt": "The cat sat", "top_k": 3})
    top_k: int = Field(
        default=5, ge=1, le=20, description="Next-token candidates per position at the softmax."
    )


# ---- responses ----


class BlockStage(Strict):
    key: str
    label: str


class Block(Strict):
    stages: list[BlockStage] = Field(description="x, norm, attention, add, norm, feed-forward, add.")
    norms: list[list[list[float]]] = Field(description="[layer][stage][position] L2 norm of the vector.")
    shapes: dict[str, list[int]] = Field(description="Tensor shapes inside one block (no batch).")


class Step(Strict):
    name: str
    op: str | None = None
    shape: list[int]
    dims: list[str] = Field(description="Names of the shape's axes.")
    layer: int | None = None
    ids: list[int] | None = None
    norms: list[float] | None = Field(
        default=None, description="[position] L2 norm of what leaves this step."
    )
    max_logit: list[float] | None = None
    top: list[list[TokenProb]] | None = Field(default=None, description="[position] next-token candidates.")

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler):  # a step sends only what it has: no "top": null on an embedding
        return {k: v for k, v in handler(self).items() if v is not None}


class CensusEntry(Strict):
    key: str
    name: str
    live: bool
    params: Params
    feed_forward_share: float = Field(
        description="Feed-forward / (attention + feed-forward + norms) in the blocks."
    )


class AnatomyResponse(Strict):
    model: str
    n: int
    tokens: list[str]
    token_ids: list[int]
    config: Arch
    norm: str
    mlp: str
    positional: str
    block: Block
    pipeline: list[Step]
    census: list[CensusEntry]
