"""Request and response bodies of /api/models, /api/trace, /api/head, /api/lens and /api/ablation."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..schemas import (
    EXAMPLE_PROMPT,
    Compared,
    Head,
    Params,
    PromptRequest,
    Strict,
    ThumbnailPayload,
    TokenProb,
)
from ..schemas import examples as _examples


class Switches(PromptRequest):
    position: bool = Field(default=True, description="False removes position information (RoPE or learned).")
    causal: bool = Field(default=True, description="False lets every token attend to every other.")
    ablate: list[Head] = Field(
        default=[], max_length=4096, description="Heads knocked out, as [layer, head]."
    )


class TraceRequest(Switches):
    model_config = _examples(
        {"prompt": EXAMPLE_PROMPT},
        {"prompt": EXAMPLE_PROMPT, "temperature": 0.7, "top_k": 5, "position": False, "ablate": [[1, 0]]},
    )
    temperature: float = Field(default=1.0, gt=0, le=100, description="Divides the logits before softmax.")
    top_k: int = Field(default=10, ge=1, description="Predictions per position (at most limits.max_top_k).")
    predict: Literal["all", "last"] = Field(
        default="all",
        description="all: top-k next tokens at every position; last: at the last position only (what the page "
        "asks for while typing: it skips unembedding every other position, a third of the forward on an "
        "8k vocabulary, and two thirds of the answer's bytes).",
    )


class LensRequest(Switches):
    model_config = _examples({"prompt": EXAMPLE_PROMPT})


class HeadRequest(Switches):
    model_config = _examples(
        {"prompt": EXAMPLE_PROMPT, "layer": 1, "head": 0},
        {"prompt": EXAMPLE_PROMPT, "layer": 1, "head": 0, "encoding": "u16"},
    )
    layer: int = Field(ge=0, description="Layer index, from 0.")
    head: int = Field(ge=0, description="Query-head index within the layer, from 0.")
    encoding: Literal["float", "u16"] = Field(
        default="float",
        description="float: `pattern` as JSON numbers (5 decimals); u16: `exact` as base64 uint16 "
        "(within 8e-6; what the page asks for: fast at n = 512).",
    )


class AblationRequest(PromptRequest):
    model_config = _examples(
        {"prompt": EXAMPLE_PROMPT, "ablate": [[1, 0], [1, 1]]},
        {"prompt": EXAMPLE_PROMPT, "ablate": [[0, 2]], "mode": "mean", "index": 3, "top_k": 5},
    )
    ablate: list[Head] = Field(
        min_length=1, max_length=4096, description="Heads to knock out, as [layer, head]."
    )
    mode: Literal["zero", "mean"] = Field(
        default="zero",
        description="zero: the head writes nothing; mean: it writes its mean output over positions.",
    )
    index: int | None = Field(
        default=None, description="Position whose next-token distribution is compared; null = the last token."
    )
    temperature: float = Field(default=1.0, gt=0, le=100)
    top_k: int = Field(default=10, ge=1)


# ---- responses ----


class ModelInfo(Strict):
    name: str
    arch: Literal["llama", "gpt2"]
    n_layer: int
    n_head: int
    n_kv_head: int
    d_model: int
    d_ff: int
    head_dim: int
    vocab_size: int
    context_length: int
    max_tokens: int = Field(description="Longest prompt accepted, in tokens, for this model.")
    positional: Literal["rope", "learned", "none"]
    norm: str
    mlp: str
    rope_base: float
    rope_scale: float
    params: Params
    has_card: bool
    max_timing_n: int = Field(
        description="Largest n the cost lab times for this model (limits.max_timing_bytes)."
    )


class Limits(Strict):
    max_prompt_chars: int
    max_tokens: int = Field(description="Longest prompt in tokens for the default model (see each model).")
    max_cost_n: int
    max_timing_n: int = Field(description="Largest timed n for the default model within max_timing_bytes.")
    max_timing_bytes: int = Field(description="Memory one cost timing may hold (heads x n² x 4 bytes x 2).")
    max_request_bytes: int
    max_top_k: int
    max_waiting: int = Field(description="Model jobs that may wait per worker; beyond, 503 with Retry-After.")


class ModelsResponse(Strict):
    default: str
    models: list[ModelInfo]
    limits: Limits


class Resid(Strict):
    stages: list[str] = Field(description="2L+1 names: embed, then L{i} +attn and L{i} +mlp.")
    norms: list[list[float]] = Field(description="[stage][position] L2 norm of the residual stream.")


class Writes(Strict):
    attn: list[list[float]] = Field(description="[layer][position] norm of what attention added.")
    mlp: list[list[float]] = Field(description="[layer][position] norm of what the feed-forward added.")


class Prediction(Strict):
    position: int
    top: list[TokenProb]


class Lens(Strict):
    k: int
    tokens: list[list[list[str]]] = Field(
        description="[layer][position][rank] after each layer, no temperature."
    )
    probs: list[list[list[float]]]


class CharGroup(Strict):
    start: int = Field(description="First token of the run.")
    end: int = Field(description="One past its last token.")
    text: str = Field(description="The character(s) the run's bytes spell, as a display string.")
    pieces: list[str] = Field(description="Each token's own display string, e.g. <F0>, <9F>, <99>, <82>.")


class Showcase(Strict):
    layer: int
    head: int
    score: float = Field(
        description="Mean over queries i >= 2 of the largest weight on one key j with 0 < j < i "
        "(labs/showcase.py): the head that most sharply picks out one earlier token."
    )


class TraceResponse(Strict):
    model: str
    n: int
    tokens: list[str]
    token_ids: list[int]
    groups: list[CharGroup] = Field(
        description="Runs of tokens that are each part of one character (an emoji's UTF-8 bytes), with "
        "the character they spell; tokens not listed are text on their own."
    )
    showcase: Showcase | None = Field(
        description="The head to open first on this prompt; null for fewer than 3 tokens."
    )
    thumbnails: ThumbnailPayload = Field(
        description="Every head's pattern max-pooled to at most 48 x 48 (exact at n <= 48); the full matrix "
        "of one head: POST /api/head."
    )
    resid: Resid
    writes: Writes
    predictions: list[Prediction] = Field(
        description="Top-k next tokens at every position (predict=all) or at the last (predict=last), "
        "temperature applied."
    )


class LensResponse(Strict):
    model: str
    n: int
    tokens: list[str]
    lens: Lens


class HeadScores(Strict):
    previous_token: float | None = Field(
        description="Mean attention from token i to i-1 (labs/roles/detectors.py); null for 1 token."
    )
    first_token: float | None = Field(
        description="Mean attention from tokens 1..n-1 to token 0, where 'sink' heads rest "
        "(labs/roles/detectors.py); null for 1 token."
    )
    self: float = Field(description="Mean attention of a token to itself.")
    entropy: float = Field(description="Mean entropy of a row in bits: 0 = sharp, log2(n) = uniform.")


class U16Payload(Strict):
    format: Literal["u16-tril", "u16-full"] = Field(
        description="Little-endian uint16 round(p * 65535), row after row: u16-tril rows hold keys 0..i."
    )
    n: int
    data: str = Field(description="Base64 of the bytes.")


class HeadResponse(Strict):
    model: str
    layer: int
    head: int
    kv_head: int = Field(description="The key/value head this query head reads (GQA groups).")
    n: int
    tokens: list[str]
    pattern: list[list[float]] | None = Field(
        default=None, description="[query][key] attention probabilities (encoding float)."
    )
    exact: U16Payload | None = Field(default=None, description="The same as uint16 (encoding u16).")
    scores: HeadScores


class AblationResponse(Strict):
    model: str
    n: int
    tokens: list[str]
    index: int
    ablate: list[Head]
    mode: Literal["zero", "mean"]
    intact: list[TokenProb] = Field(description="Top-k with every head working.")
    ablated: list[TokenProb] = Field(description="Top-k with the heads knocked out.")
    rows: list[Compared] = Field(description="Union of both top-k lists with both probabilities.")
    next_token: Compared | None = Field(
        description="The prompt's actual next token, when index is not the last."
    )
    kl: float = Field(description="KL(intact || ablated) in nats (as labs/roles/knockout.py).")
