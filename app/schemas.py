"""Request and response bodies shared by the areas of the JSON API. Requests forbid unknown fields
so typos fail loudly.

The pieces every area shares; each area's own bodies are in `app/<area>/schemas.py`. Limits that
depend on settings or on the model (prompt length, top_k cap, layer/head ranges) are checked by the
runtime and the handlers, which know them; here only what is true for every model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator
from pydantic import Strict as StrictMode

EXAMPLE_PROMPT = "The cat sat on the mat. The cat"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Body(Strict):
    """A JSON request body: types are strict, so "5" is not an integer, 3.0 is not a layer and "yes" is
    not a boolean (422, not a silent guess). Query-string models stay `Strict`: there every value is text."""

    model_config = ConfigDict(extra="forbid", strict=True)


def examples(*examples: dict) -> ConfigDict:
    return ConfigDict(extra="forbid", json_schema_extra={"examples": list(examples)})


# A JSON array of two integers: strict mode alone would want a Python tuple, so the pair is lax, its ints strict.
Pair = Annotated[tuple[StrictInt, StrictInt], StrictMode(False)]
Head = Pair  # (layer, head), both counted from 0


class PromptRequest(Body):
    prompt: str = Field(description="Text to analyse; tokenised by the model's own tokenizer.")
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("type some text to analyse (it is empty or only spaces)")
        return v


# ---- responses ----


class Params(Strict):
    embedding: int = Field(description="Token embedding (+ learned positions for GPT-2).")
    attention: int
    feed_forward: int
    norms: int
    unembedding: int = Field(description="0 when tied to the embedding: a shared matrix is counted once.")
    total: int
    tied: bool


class AttentionPayload(Strict):
    format: Literal["u8-tril", "u8-full"] = Field(
        description="Bytes layer-major, then head, then query row i: u8-tril rows hold keys 0..i (causal), "
        "u8-full rows hold all n keys. Each byte is round(p * 255)."
    )
    n_layer: int
    n_head: int
    n: int
    data: str = Field(description="Base64 of the bytes.")


class ThumbnailPayload(Strict):
    format: Literal["u8-tril", "u8-full"] = Field(
        description="As AttentionPayload's, for size x size matrices: pixel (a, b) of a head is the largest "
        "weight from queries a*block..(a+1)*block-1 to keys b*block..(b+1)*block-1."
    )
    n_layer: int
    n_head: int
    n: int = Field(description="Tokens.")
    size: int = Field(description="Pixels per side: ceil(n / block).")
    block: int = Field(description="Tokens per pixel side; 1 = the exact u8 pattern.")
    data: str = Field(description="Base64 of the bytes.")


class TokenProb(Strict):
    id: int
    token: str
    prob: float


class Compared(Strict):
    id: int
    token: str
    intact: float
    ablated: float


class ErrorResponse(BaseModel):
    detail: str = Field(description="A sentence saying what is wrong and how to fix it.")
    errors: list[dict] | None = Field(
        default=None, description="Schema errors in FastAPI's form, for programs."
    )


ERRORS = {
    404: {"model": ErrorResponse, "description": "No model of that name is loaded."},
    413: {"model": ErrorResponse, "description": "The request body is over limits.max_request_bytes."},
    422: {"model": ErrorResponse, "description": "Bad input: the detail says what and how to fix it."},
}
