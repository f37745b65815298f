"""What attention costs: the chapter's n^2 arithmetic for any config, and timings of the live model.

Everything here is a pure function of a `ModelConfig` and a token count n, except `time_attention`,
which runs the live model's own modules and takes its clock as an argument so tests can fake it.

FLOPs count a multiply-add as 2. The score matrix is counted in full (n^2), as the chapter does and as
our explicit attention computes it; a kernel that skips the masked half would do about half of that.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from model.config import ModelConfig

from .census import attention_params, feed_forward_params, param_census

# Published shapes of the models the chapter and the issue name; only shapes matter, no weights.
REFERENCE: dict[str, ModelConfig] = {
    "gpt2-small": ModelConfig(
        arch="gpt2", name="GPT-2 small", vocab_size=50257, n_layer=12, n_head=12, n_kv_head=12,
        d_model=768, d_ff=3072, context_length=1024, tie_embeddings=True,
    ),
    "llama-2-7b": ModelConfig(
        arch="llama", name="Llama-2-7B", vocab_size=32000, n_layer=32, n_head=32, n_kv_head=32,
        d_model=4096, d_ff=11008, context_length=4096, tie_embeddings=False,
    ),
    "llama-2-70b": ModelConfig(
        arch="llama", name="Llama-2-70B", vocab_size=32000, n_layer=80, n_head=64, n_kv_head=8,
        d_model=8192, d_ff=28672, context_length=4096, tie_embeddings=False,
    ),
    "llama-3-8b": ModelConfig(
        arch="llama", name="Llama-3-8B", vocab_size=128256, n_layer=32, n_head=32, n_kv_head=8,
        d_model=4096, d_ff=14336, context_length=8192, rope_base=500000.0, tie_embeddings=False,
    ),
}  # fmt: skip

CHAPTER_NS = (100, 1_000, 100_000)
SMALL_N_EXPONENT = 1.5  # a fitted exponent below this means overhead or contention was measured
BYTES = {"fp32": 4, "fp16": 2}


def scores_per_head(n: int) -> int:
    """One head in one layer scores every query against every key: n^2 numbers."""
    return n * n


def chapter_table() -> list[dict]:
    return [
        {"n": n, "scores": scores_per_head(n), "fp32_bytes": scores_per_head(n) * BYTES["fp32"]}
        for n in CHAPTER_NS
    ]


def score_counts(cfg: ModelConfig, n: int) -> dict:
    per_head = scores_per_head(n)
    per_layer = per_head * cfg.n_head
    total = per_layer * cfg.n_layer
    materialised = {
        dtype: {"per_head": per_head * b, "per_layer": per_layer * b, "total": total * b}
        for dtype, b in BYTES.items()
    }
    return {"per_head": per_head, "per_layer": per_layer, "total": total, "bytes": materialised}


def ff_matrices(cfg: ModelConfig) -> int:
    """SwiGLU has gate, up and down projections; GPT-2's MLP has up and down."""
    return 3 if cfg.arch == "llama" else 2


def flops(cfg: ModelConfig, n: int) -> dict:
    """Forward FLOPs per layer for n tokens, split the way the chapter's argument needs."""
    H, K, d, D = cfg.n_head, cfg.n_kv_head, cfg.hd, cfg.d_model
    projections = 2 * n * D * (H * d + 2 * K * d) + 2 * n * H * d * D  # q, k, v in; o out
    scores = 2 * n * n * H * d  # Q K^T
    weighted_sum = 2 * n * n * H * d  # pattern @ V
    feed_forward = 2 * n * D * cfg.d_ff * ff_matrices(cfg)
    per_layer = {
        "attention_projections": projections,
        "attention_scores": scores,
        "attention_weighted_sum": weighted_sum,
        "attention_quadratic": scores + weighted_sum,
        "attention": projections + scores + weighted_sum,
        "feed_forward": feed_forward,
    }
    return {"per_layer": per_layer, "total": {k: v * cfg.n_layer for k, v in per_layer.items()}}


def crossover_n(cfg: ModelConfig) -> float:
    """The n where attention's n^2 part (4 n^2 H d) equals the feed-forward (2 n D F m):
    below it the feed-forward dominates, above it the quadratic part does."""
    return cfg.d_model * cfg.d_ff * ff_matrices(cfg) / (2 * cfg.n_head * cfg.hd)


def kv_cache_bytes(cfg: ModelConfig, n: int, bytes_per: int = 2) -> int:
    """Keys and values of every layer for n cached tokens: 2 * layers * kv_heads * head_dim * n * bytes."""
    return 2 * cfg.n_layer * cfg.n_kv_head * cfg.hd * n * bytes_per


def kv_cache(cfg: ModelConfig, n: int, bytes_per: int = 2) -> dict:
    """The cache as the model has it (GQA when n_kv_head < n_head) and as plain multi-head would."""
    gqa = kv_cache_bytes(cfg, n, bytes_per)
    mha = 2 * cfg.n_layer * cfg.n_head * cfg.hd * n * bytes_per
    return {"bytes": gqa, "mha_bytes": mha, "saving": mha / gqa, "groups": cfg.n_kv_head}


def feed_forward_share(cfg: ModelConfig) -> float:
    """The feed-forward's share of one block's parameters (the chapter: roughly two thirds)."""
    norms = 2 * (cfg.d_model if cfg.arch == "llama" else 2 * cfg.d_model)
    ff = feed_forward_params(cfg)
    return ff / (attention_params(cfg) + ff + norms)


def curve_ns(lo: int = 16, hi: int = 131_072) -> list[int]:
    """Half-octave steps (x sqrt 2) from lo to hi: smooth enough on log axes, small enough to send."""
    ns, k = [], 0
    while (n := round(lo * 2 ** (k / 2))) <= hi:
        ns.append(n)
        k += 1
    return ns


def arch(cfg: ModelConfig) -> dict:
    return {
        "arch": cfg.arch, "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_kv_head": cfg.n_kv_head,
        "head_dim": cfg.hd, "d_model": cfg.d_model, "d_ff": cfg.d_ff, "vocab_size": cfg.vocab_size,
        "context_length": cfg.context_length,
    }  # fmt: skip


def report(cfg: ModelConfig, n: int) -> dict:
    """Everything the cost lab shows about one config at n tokens."""
    f = flops(cfg, n)
    return {
        "config": arch(cfg), "params": param_census(cfg), "scores": score_counts(cfg, n), "flops": f,
        "quadratic_to_feed_forward": f["per_layer"]["attention_quadratic"] / f["per_layer"]["feed_forward"],
        "crossover_n": crossover_n(cfg), "kv_cache": kv_cache(cfg, n),
    }  # fmt: skip


def curves(cfg: ModelConfig, ns: Sequence[int]) -> dict:
    """Per-layer FLOPs by part and KV-cache bytes (GQA as configured, and as plain MHA) along ns."""
    per = [flops(cfg, n)["per_layer"] for n in ns]
    kv = [kv_cache(cfg, n) for n in ns]
    return {
        "attention_quadratic": [f["attention_quadratic"] for f in per],
        "attention_projections": [f["attention_projections"] for f in per],
        "feed_forward": [f["feed_forward"] for f in per],
        "kv_bytes": [k["bytes"] for k in kv],
        "kv_mha_bytes": [k["mha_bytes"] for k in kv],
    }


# --- measured ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    ns: list[int]
    seconds: dict[str, list[float]]  # series name -> median seconds per n
    repeats: int
    skipped: list[int]  # sizes left out because the time budget would have been exceeded


def ladder(cap: int, start: int = 16) -> list[int]:
    """Powers of two from `start` up to `cap` (inclusive when cap is a power of two)."""
    ns, n = [], start
    while n <= cap:
        ns.append(n)
        n *= 2
    return ns


def measure(
    series: dict[str, Callable[[int], Callable[[], object]]],
    ns: Sequence[int],
    repeats: int = 3,
    budget_s: float = 8.0,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Median seconds of each series at each n. `series[name](n)` prepares inputs and returns the call
    to time. Climbing stops when the next size, predicted at 4x the last (doubling n, n^2 work),
    would overrun the budget, so one request stays bounded on any machine."""
    for make in series.values() if ns else ():
        make(ns[0])()  # one-time costs (thread pools, lazy kernels) would otherwise poison the forecast
    start = clock()
    out: dict[str, list[float]] = {name: [] for name in series}
    done: list[int] = []
    last = 0.0
    for n in ns:
        if done and clock() - start + 4 * last > budget_s:
            break
        t0 = clock()
        for name, make in series.items():
            call = make(n)
            call()  # warm-up: first-call allocations are not what we are measuring
            runs = []
            for _ in range(repeats):
                t = clock()
                call()
                runs.append(clock() - t)
            out[name].append(statistics.median(runs))
        last = clock() - t0
        done.append(n)
    return Timing(ns=done, seconds=out, repeats=repeats, skipped=[n for n in ns if n not in done])


def fit_exponent(ns: Sequence[int], seconds: Sequence[float], upper: int = 4) -> dict:
    """Least-squares slope of log t against log n over the largest `upper` sizes, where the n^2 work
    has overtaken the fixed per-call overhead that flattens the small sizes."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(ns, seconds, strict=True) if t > 0][-upper:]
    if len(pts) < 2:
        raise ValueError("need at least two timed sizes to fit an exponent")
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    fit_ns = [round(math.exp(x)) for x, _ in pts]
    fitted = [math.exp(my + slope * (x - mx)) for x, _ in pts]  # the line, to draw over the points
    return {"exponent": slope, "doubling_factor": 2**slope, "fit_from": fit_ns[0], "fit_ns": fit_ns,
            "fitted": fitted}  # fmt: skip


def model_series(net: torch.nn.Module, layer: int = 0, seed: int = 0) -> dict:
    """Timed calls on the live model's own modules: one layer's attention (projections, RoPE, scores,
    causal mask, softmax, weighted sum, output projection) and the whole block around it."""
    block = net.blocks[layer]
    p = next(net.parameters())
    D = net.cfg.d_model

    def inputs(n: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed)
        return torch.randn(1, n, D, generator=g).to(device=p.device, dtype=p.dtype)

    def attention(n: int):
        x = inputs(n)
        return lambda: _no_grad(block.attn, x)

    def whole_block(n: int):
        x = inputs(n)
        return lambda: _no_grad(block, x)

    return {"attention": attention, "block": whole_block}


def _no_grad(module: torch.nn.Module, x: torch.Tensor) -> None:
    with torch.inference_mode():
        module(x, None)
    if x.device.type == "cuda":
        torch.cuda.synchronize()


def timing_bytes(cfg: ModelConfig, n: int) -> int:
    """What timing attention at n holds at once: every head's n x n scores and as many probabilities,
    in float32 (the explicit path materialises both; the rest of a block is O(n))."""
    return 2 * cfg.n_head * n * n * BYTES["fp32"]


def timing_cap(cfg: ModelConfig, max_bytes: int, cap: int) -> int:
    """The largest n of the ladder up to `cap` whose timing fits in `max_bytes` (0 if none does)."""
    fits = [n for n in ladder(cap) if timing_bytes(cfg, n) <= max_bytes]
    return fits[-1] if fits else 0


def time_attention(net: torch.nn.Module, cap: int, repeats: int = 3, budget_s: float = 8.0,
                   clock: Callable[[], float] = time.perf_counter) -> dict:  # fmt: skip
    timing = measure(model_series(net), ladder(cap), repeats, budget_s, clock)
    fits = {name: fit_exponent(timing.ns, s) for name, s in timing.seconds.items() if len(s) >= 2}
    return {"timing": timing, "fits": fits}


def cost_report(live: ModelConfig, live_name: str, n: int) -> dict:
    """The whole cost lab at n tokens: the chapter's table, the live model then the reference configs,
    and the curves over n for the charts."""
    configs = [("live", live_name, True, live)] + [(k, c.name, False, c) for k, c in REFERENCE.items()]
    ns = curve_ns()
    return {
        "n": n, "model": live_name, "chapter": chapter_table(),
        "models": [{"key": k, "name": name, "live": is_live, **report(c, n)} for k, name, is_live, c in configs],
        "ns": ns,
        "curves": [{"key": k, "name": name, **curves(c, ns)} for k, name, _, c in configs],
    }  # fmt: skip
