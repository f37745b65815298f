"""Request and response bodies of the position lab: /api/permutation, /api/word-order, /api/rope,
/api/rope/stretch and /api/position/probe."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..schemas import Body, Pair, PromptRequest, Strict, TokenProb
from ..schemas import examples as _examples

# Four n x n matrices per condition travel as JSON floats; beyond this a map is unreadable anyway.
MAX_PERMUTATION_TOKENS = 64
MAX_CLOCK_POSITIONS = 131_072  # the slider's range; the angles are sampled at most 1025 times over it
MAX_OFFSET = 1024
MAX_KEY_POSITION = 100_000
MIN_RESCALE, MAX_RESCALE = 0.01, 64.0  # below 0.01 the angles of far positions stop being finite
PERMUTATION_PROMPT = "The dog bites the man."
SENTENCE_A, SENTENCE_B = "The dog bites the man.", "The man bites the dog."


class PermutationRequest(PromptRequest):
    model_config = _examples(
        {"prompt": PERMUTATION_PROMPT, "layer": 0, "head": 0, "permutation": "reverse"},
        {"prompt": PERMUTATION_PROMPT, "permutation": "shuffle", "seed": 3},
        {"prompt": PERMUTATION_PROMPT, "permutation": "swap", "swap": [1, 4], "layer": 1, "head": 2},
        {"prompt": PERMUTATION_PROMPT, "permutation": "explicit", "order": [0, 4, 2, 3, 1, 5]},
    )
    layer: int = Field(default=0, ge=0, description="Layer of the head whose attention is drawn, from 0.")
    head: int = Field(default=0, ge=0, description="Query head within the layer, from 0.")
    permutation: Literal["shuffle", "reverse", "swap", "explicit"] = Field(
        default="shuffle",
        description="How to reorder the tokens: a seeded shuffle, reverse, swap two positions, or an explicit order.",
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="Seed of the shuffle.")
    swap: Pair | None = Field(default=None, description="For 'swap': the two token positions, from 0.")
    order: list[int] | None = Field(
        default=None,
        max_length=MAX_PERMUTATION_TOKENS,
        description="For 'explicit': new position k holds the original token order[k].",
    )

    @model_validator(mode="after")
    def _needs_its_argument(self) -> PermutationRequest:
        if self.permutation == "swap" and self.swap is None:
            raise ValueError("a swap needs 'swap': the two token positions to exchange, e.g. [1, 4]")
        if self.permutation == "explicit" and self.order is None:
            raise ValueError("an explicit permutation needs 'order', e.g. [2, 0, 1] for three tokens")
        return self


class PermutedCondition(Strict):
    position: bool = Field(description="Whether position information (RoPE / learned) was on.")
    causal: bool = Field(description="Whether the causal mask was on.")
    original: list[list[float]] = Field(description="[query][key] the head on the original order.")
    reordered: list[list[float]] = Field(
        description="[query][key] the head on the permuted input, rows and columns put back in the original order."
    )
    diff: list[list[float]] = Field(
        description="reordered - original, from unrounded values (3 significant digits)."
    )
    head_max_diff: float = Field(description="Largest |diff| for this head.")
    attention_max_diff: float = Field(description="Largest attention difference over every layer and head.")
    probs_max_diff: float = Field(
        description="Largest change in any next-token probability at any token: the headline output difference."
    )
    logits_max_diff: float
    resid_max_diff: float = Field(
        description="Largest difference in the final residual stream, token by token."
    )
    resid_scale: float = Field(description="Largest |value| of the final residual stream, for scale.")
    equivariant: bool = Field(
        description="True when shuffling the input only shuffled the outputs (<= 1e-5)."
    )


class PermutationResponse(Strict):
    model: str
    positional: Literal["rope", "learned", "none"]
    n: int
    tokens: list[str]
    token_ids: list[int]
    permutation: list[int] = Field(description="New position k holds original token permutation[k].")
    inverse: list[int] = Field(description="Original token i sits at new position inverse[i].")
    permuted_tokens: list[str]
    layer: int
    head: int
    kv_head: int
    conditions: list[PermutedCondition] = Field(description="Position off/on x causal off/on.")
    causal_note: str = Field(description="Why the causal mask alone breaks equivariance.")


class WordOrderRequest(Body):
    model_config = _examples(
        {"prompt_a": SENTENCE_A, "prompt_b": SENTENCE_B},
        {
            "prompt_a": "Lily gave Tom the ball.",
            "prompt_b": "Tom gave Lily the ball.",
            "focus": 1,
            "top_k": 3,
        },
    )
    prompt_a: str = Field(default=SENTENCE_A, description="A sentence.")
    prompt_b: str = Field(default=SENTENCE_B, description="The same tokens in another order.")
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")
    focus: int | None = Field(
        default=None,
        ge=0,
        description="Token of prompt A to compare; null = the unmoved token nearest the middle.",
    )
    top_k: int = Field(default=5, ge=1, le=20, description="Next-token candidates shown per prompt.")

    @field_validator("prompt_a", "prompt_b")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("type a sentence (it is empty or only spaces)")
        return v


class FocusCompare(Strict):
    a: list[float] = Field(
        description="Final residual stream of the focus token in prompt A (4 significant digits)."
    )
    b: list[float] = Field(description="The same token's final residual stream in prompt B.")
    max_diff: float
    cosine: float


class NextCompare(Strict):
    a: list[TokenProb] = Field(description="Top-k next tokens after prompt A.")
    b: list[TokenProb] = Field(description="Top-k next tokens after prompt B.")
    max_diff: float = Field(description="Largest change in any next-token probability.")


class OrderCondition(Strict):
    position: bool
    causal: bool
    token_diffs: list[float] = Field(
        description="Per token of prompt A: largest difference of its final residual stream vs the same token in B."
    )
    focus: FocusCompare
    next: NextCompare


class WordOrderResponse(Strict):
    model: str
    positional: Literal["rope", "learned", "none"]
    tokens_a: list[str]
    tokens_b: list[str]
    match: list[int] = Field(description="Token i of prompt A is token match[i] of prompt B.")
    focus: int = Field(description="Index into prompt A of the compared token.")
    same_last_token: bool = Field(
        description="Both prompts end with the same token, so their next-token predictions are read at the same token."
    )
    conditions: list[OrderCondition] = Field(description="Position off/on x causal off/on.")
    notes: dict[str, str]


class RopeRequest(Body):
    model_config = _examples(
        {},
        {"scale": 4.0, "prompt": "The cat sat on the mat. The cat", "layer": 1, "head": 0},
        {"source": "random", "seed": 1, "key_positions": [0, 100, 1000], "max_offset": 64},
    )
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")
    scale: float | None = Field(
        default=None, ge=MIN_RESCALE, le=MAX_RESCALE,
        description="Position-interpolation scale (positions are divided by it); null = the model's own.",
    )  # fmt: skip
    positions: int | None = Field(
        default=None, ge=2, le=MAX_CLOCK_POSITIONS,
        description="Range of the clock's position slider; null = the context length times the scale.",
    )  # fmt: skip
    source: Literal["model", "random"] = Field(
        default="model",
        description="The query/key pair: a real one from the model on `prompt`, or seeded random.",
    )
    prompt: str = Field(default="The cat sat on the mat. The cat", description="For source=model.")
    layer: int = Field(default=0, ge=0)
    head: int = Field(default=0, ge=0)
    query: int | None = Field(default=None, ge=0, description="Token giving the query; null = the last.")
    key: int | None = Field(
        default=None, ge=0, description="Token giving the key; null = the one before the query."
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="For source=random.")
    key_positions: list[int] | None = Field(
        default=None, min_length=1, max_length=8,
        description="Absolute key positions n, one curve each; null = spread over the context.",
    )  # fmt: skip
    max_offset: int = Field(default=128, ge=1, le=MAX_OFFSET, description="Offsets m - n from 0 to this.")

    @field_validator("key_positions")
    @classmethod
    def _positions_in_range(cls, v: list[int] | None) -> list[int] | None:
        if v is not None:
            bad = [p for p in v if not 0 <= p <= MAX_KEY_POSITION]
            if bad:
                raise ValueError(f"key positions must be between 0 and {MAX_KEY_POSITION}; got {bad}")
        return v


class Clock(Strict):
    head_dim: int
    base: float
    scale: float
    trained_scale: float = Field(description="The model's own interpolation scale (its config).")
    context_length: int
    inv_freq: list[float] = Field(description="Radians per position of each hand, fastest first (scale 1).")
    periods: list[float] = Field(description="Positions per full turn of each hand at this scale.")
    turns_in_context: list[float] = Field(
        description="Full turns each hand made across the context during training: below 1, training never "
        "saw the hand go all the way round."
    )
    trained_positions: float = Field(
        description="At this scale, the position where the hands reach the last angles training saw."
    )
    positions: list[int] = Field(description="The sampled slider positions.")
    angles: list[list[float]] = Field(description="[position sample][hand] angle in radians, in [-pi, pi].")


class OffsetCurves(Strict):
    source: Literal["model", "random"]
    detail: str = Field(description="Where the query and key came from, in words.")
    offsets: list[int]
    key_positions: list[int]
    scores: list[list[float]] = Field(description="[curve][offset] q_m . k_n / sqrt(d) after RoPE.")
    spread: float = Field(
        description="Largest disagreement between the curves at one offset: 0 = only m - n matters."
    )
    reference: list[float] | None = Field(
        description="The first curve at the model's trained scale, when the request asks for another scale."
    )


class Learned(Strict):
    positions: list[int] = Field(description="The positions drawn, spread over the whole context.")
    similarity: list[list[float]] = Field(description="[i][j] cosine similarity of position vectors i and j.")
    pca: list[list[float]] = Field(description="[i] position vector i on the top three principal components.")
    explained: list[float] = Field(description="Share of the variance each component explains.")
    norms: list[float]


class RopeResponse(Strict):
    model: str
    positional: Literal["rope", "learned", "none"]
    message: str
    clock: Clock | None = Field(description="RoPE models only.")
    curves: OffsetCurves | None = Field(description="RoPE models only.")
    learned: Learned | None = Field(description="GPT-2-style models only: learned position embeddings.")
    # A model with no positional encoding (positional "none") has neither: `message` says so.


# ---- /api/rope/stretch ----

MAX_STRETCH_FACTOR = 4  # windows up to 4x the trained length
MAX_STRETCH_WINDOWS = 8
MAX_STRETCH_SCALE = 16.0


class StretchRequest(Body):
    model_config = _examples({}, {"factor": 2, "scales": [1, 2], "windows": 2})
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")
    factor: int = Field(
        default=4, ge=2, le=MAX_STRETCH_FACTOR,
        description="Each window is this many times the model's context length.",
    )  # fmt: skip
    scales: list[float] = Field(
        default=[1.0, 2.0, 4.0], min_length=1, max_length=4,
        description="Position-interpolation scales (positions divided by each, on top of the model's own); "
        "1 = no scaling, always computed.",
    )  # fmt: skip
    windows: int = Field(
        default=4, ge=1, le=MAX_STRETCH_WINDOWS, description="Held-out windows averaged per position."
    )

    @field_validator("scales")
    @classmethod
    def _scales_in_range(cls, v: list[float]) -> list[float]:
        bad = [s for s in v if not 1 <= s <= MAX_STRETCH_SCALE]
        if bad:
            raise ValueError(
                f"each scale must be between 1 (no scaling) and {MAX_STRETCH_SCALE:g}; got {bad}"
            )
        return sorted({1.0, *(float(s) for s in v)})


class StretchCurve(Strict):
    scale: float = Field(description="1 = no interpolation; s = positions divided by s.")
    covers: int = Field(description="Positions 0..covers-1 stay within the angles training saw: C x scale.")
    bins: list[float] = Field(
        description="Mean loss (nats) over each bin of positions, averaged over windows."
    )
    inside: float = Field(description="Mean loss over positions 0..C-1 (inside the training length).")
    beyond: float | None = Field(description="Mean loss over positions C.. (past it).")


class StretchResponse(Strict):
    model: str
    positional: Literal["rope", "learned", "none"]
    applies: bool = Field(description="False for learned positions or none: there is nothing to stretch.")
    message: str = Field(description="What was measured, or why it does not apply, in words.")
    context_length: int = Field(description="C: the length the model trained on.")
    length: int = Field(description="Tokens per window (factor x C).")
    windows: int
    tokens: int = Field(description="Held-out tokens read: windows x length.")
    text: str = Field(description="Which held-out text, in words.")
    unit: Literal["nats"] = "nats"
    bin_width: int = Field(description="Positions averaged per curve point.")
    bin_starts: list[int] = Field(description="First position of each bin.")
    curves: list[StretchCurve]
    sentence: str = Field(description="What interpolation fixes and what it costs, from these numbers.")
    seconds: float = Field(description="Time the measurement took on this server.")


# ---- /api/position/probe ----


class ProbeRequest(Body):
    model_config = _examples({}, {"model": "classroom-nope"})
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")


class ProbePoint(Strict):
    name: str = Field(description='"token embeddings", "embeddings + position vectors", "after block i".')
    hook: str = Field(description="The residual-stream hook read (TransformerLens name).")
    r2: float = Field(
        description="Held-out R² of the position probe: 1 = read exactly, 0 = a guess of the middle."
    )
    error: float = Field(description="Held-out mean absolute error, in tokens.")


class ProbeResponse(Strict):
    model: str
    positional: Literal["rope", "learned", "none"]
    window: int = Field(description="Tokens per window: the probe reads positions 0..window-1.")
    windows: int = Field(description="Held-out windows: half fit the probe, the other half score it.")
    text: str = Field(description="Which held-out text, in words.")
    chance_error: float = Field(description="Mean error (tokens) of always guessing the average position.")
    causal: list[ProbePoint] = Field(description="Every point of the stream, causal mask on (as trained).")
    no_mask: list[ProbePoint] = Field(description="The same with the causal mask off.")
    sentence: str = Field(description="What these numbers say about where this model keeps position.")
    seconds: float = Field(description="Time the measurement took on this server.")
