"""Request and response bodies of POST /api/score (how one attention score is made)."""

from __future__ import annotations

from pydantic import Field

from ..schemas import EXAMPLE_PROMPT, PromptRequest, Strict
from ..schemas import examples as _examples

MAX_VECTORS = 32  # key/value vectors per answer: beyond this a view could not show them anyway


class ScoreRequest(PromptRequest):
    model_config = _examples(
        {"prompt": EXAMPLE_PROMPT, "layer": 1, "head": 0},
        {"prompt": EXAMPLE_PROMPT, "layer": 2, "head": 3, "index": 4, "position": False, "vectors": 6},
    )
    layer: int = Field(ge=0, description="Layer index, from 0.")
    head: int = Field(ge=0, description="Query-head index within the layer, from 0.")
    index: int | None = Field(default=None, description="The query position; null = the last token.")
    position: bool = Field(default=True, description="False removes position information (RoPE or learned).")
    causal: bool = Field(default=True, description="False lets every token attend to every other.")
    vectors: int = Field(
        default=12, ge=1, le=MAX_VECTORS,
        description="Keys whose k and v vectors are sent: all visible keys if they fit, else the heaviest.",
    )  # fmt: skip


class KeyStep(Strict):
    position: int
    token: str
    dot: float = Field(description="q . k (after RoPE on a rotary model), before scaling.")
    scaled: float = Field(description="dot / sqrt(d_head), before the mask.")
    masked: bool = Field(description="The causal mask hides this key (a later token): its score is -inf.")
    weight: float = Field(description="The softmax of the scaled, masked scores: the head's attention.")
    k: list[float] | None = Field(default=None, description="The key vector before RoPE; null: not sent.")
    k_rot: list[float] | None = Field(default=None, description="After RoPE (rotary models).")
    v: list[float] | None = Field(default=None, description="The value vector; null: not sent.")


class ScoreResponse(Strict):
    model: str
    n: int
    tokens: list[str]
    layer: int
    head: int
    kv_head: int = Field(description="The K/V head this query head reads (grouped-query attention).")
    group: list[int] = Field(description="The query heads that share that K/V head.")
    n_head: int
    n_kv_head: int
    index: int
    d_head: int
    sqrt_d: float
    rotary: bool = Field(description="q and k are rotated by RoPE before the dot product.")
    position: bool
    causal: bool
    q: list[float] = Field(description="The query vector (before RoPE on a rotary model).")
    q_rot: list[float] | None = Field(description="The query after RoPE; null without rotary positions.")
    keys: list[KeyStep] = Field(description="Every key position, 0..n-1.")
    shown: list[int] = Field(description="Positions whose k and v vectors are sent.")
    hidden_weight: float = Field(description="Total attention on visible keys whose vectors are not sent.")
    z: list[float] = Field(description="sum of weight * v over all keys: the head's output here (hook_z).")
    z_check: float = Field(description="Largest |our weighted sum - the model's hook_z|.")
    notes: list[str] = Field(description="What this head's arithmetic involves, in sentences.")
