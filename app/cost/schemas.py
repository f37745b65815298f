"""Request and response bodies of the cost lab (/api/cost, /api/cost/timing)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from ..schemas import Body, Params, Strict
from ..schemas import examples as _examples

# Pure arithmetic, so it could go further; 2^20 keeps every count below 2^53, exact in JavaScript.
MAX_ARITHMETIC_N = 2**20


class CostRequest(Strict):
    model_config = _examples({"n": 4096}, {"n": 100_000, "model": "classroom"})
    n: int = Field(default=1024, ge=1, le=MAX_ARITHMETIC_N, description="Sequence length in tokens.")
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")


class CostBody(CostRequest):
    """POST /api/cost: the same fields as JSON, with strict types (the GET form reads them from text)."""

    model_config = ConfigDict(strict=True)


class TimingRequest(Body):
    model_config = _examples({}, {"max_n": 1024, "repeats": 3})
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")
    max_n: int | None = Field(
        default=None, ge=32,
        description="Largest n of the 16, 32, 64 ... ladder (at most limits.max_cost_n); null = the server's default.",
    )  # fmt: skip
    repeats: int = Field(default=3, ge=1, le=7, description="Timed runs per size; the median is reported.")


# ---- responses ----


class Arch(Strict):
    arch: str
    n_layer: int
    n_head: int
    n_kv_head: int
    head_dim: int
    d_model: int
    d_ff: int
    vocab_size: int
    context_length: int


class ByteCounts(Strict):
    per_head: int
    per_layer: int
    total: int


class Scores(Strict):
    per_head: int = Field(description="n^2: one head, one layer.")
    per_layer: int = Field(description="n^2 x heads.")
    total: int = Field(description="n^2 x heads x layers.")
    bytes: dict[str, ByteCounts] = Field(description="If the scores were materialised: 'fp32' and 'fp16'.")


class FlopSplit(Strict):
    attention_projections: int = Field(description="q, k, v and output projections: linear in n.")
    attention_scores: int = Field(description="Q K^T: n^2.")
    attention_weighted_sum: int = Field(description="pattern @ V: n^2.")
    attention_quadratic: int = Field(description="Scores + weighted sum.")
    attention: int
    feed_forward: int = Field(description="The MLP: linear in n.")


class Flops(Strict):
    per_layer: FlopSplit
    total: FlopSplit


class KVCache(Strict):
    bytes: int = Field(
        description="2 x layers x kv_heads x head_dim x n x 2 bytes (fp16), as the model has it."
    )
    mha_bytes: int = Field(description="The same with one K/V head per query head (plain multi-head).")
    saving: float = Field(description="mha_bytes / bytes = n_head / n_kv_head.")
    groups: int = Field(description="Number of K/V heads.")


class CostModel(Strict):
    key: str = Field(description="'live' or a reference key such as 'llama-2-7b'.")
    name: str
    live: bool
    config: Arch
    params: Params
    scores: Scores
    flops: Flops
    quadratic_to_feed_forward: float = Field(description="Attention's n^2 FLOPs / the feed-forward's, at n.")
    crossover_n: float = Field(description="n where attention's n^2 FLOPs equal the feed-forward's.")
    kv_cache: KVCache


class ChapterRow(Strict):
    n: int
    scores: int = Field(description="n^2 scores per head, per layer.")
    fp32_bytes: int = Field(description="Those scores held in float32.")


class Curve(Strict):
    key: str
    name: str
    attention_quadratic: list[int] = Field(description="Per-layer n^2 FLOPs at each n of `ns`.")
    attention_projections: list[int]
    feed_forward: list[int]
    kv_bytes: list[int] = Field(description="KV cache at each n (fp16), as the model has it.")
    kv_mha_bytes: list[int] = Field(description="KV cache at each n if every query head had its own K/V.")


class CostResponse(Strict):
    n: int
    model: str = Field(description="The live model the 'live' entry describes.")
    chapter: list[ChapterRow] = Field(description="The chapter's table, computed.")
    models: list[CostModel] = Field(description="The live model first, then the reference configs.")
    ns: list[int] = Field(description="The n grid of `curves` (log-spaced, 16 .. 131,072).")
    curves: list[Curve]


class Fit(Strict):
    exponent: float = Field(description="Least-squares slope of log time against log n over the top sizes.")
    doubling_factor: float = Field(description="2 ** exponent: what doubling n multiplies the time by.")
    fit_from: int = Field(description="Smallest n in the fit.")
    fit_ns: list[int] = Field(description="The sizes the line was fitted to.")
    fitted: list[float] = Field(description="The fitted line's seconds at each of fit_ns.")


class TimingResponse(Strict):
    model: str
    device: str
    threads: int = Field(description="torch threads used.")
    repeats: int
    ns: list[int]
    seconds: dict[str, list[float]] = Field(
        description="Median seconds per n: 'attention' (one layer's attention module) and 'block' (the whole block)."
    )
    skipped: list[int] = Field(description="Sizes left out so the request stays within its time budget.")
    fits: dict[str, Fit]
    sentence: str


class MemoryRequest(Body):
    model_config = _examples({}, {"max_n": 1024})
    model: str | None = Field(default=None, description="A name from /api/models; null = the default model.")
    max_n: int | None = Field(
        default=None, ge=128,
        description="Largest n of the 64, 128 ... ladder (within limits.max_timing_n); null = the server's default.",
    )  # fmt: skip


class MemoryResponse(Strict):
    model: str
    device: str
    threads: int = Field(description="torch threads the measuring process used.")
    method: str = Field(description="What was measured, in words.")
    ns: list[int]
    explicit: list[int] = Field(description="Peak bytes one layer's explicit attention added at each n.")
    fused: list[int] = Field(description="The same for F.scaled_dot_product_attention.")
    predicted: list[int] = Field(
        description="Every head's n x n scores and probabilities in float32: 8 x heads x n^2."
    )
    fits: dict[str, Fit] = Field(description="'explicit' and 'fused': exponent of bytes against n.")
    sentence: str
    seconds: float
