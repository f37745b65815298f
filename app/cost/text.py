"""What the cost lab's page reads in words about a timing (the numbers come from labs/cost.py)."""

from __future__ import annotations

from labs.cost import SMALL_N_EXPONENT, timing_bytes
from model.config import ModelConfig


def timing_sentence(fits: dict, ns: list[int]) -> str:
    """The chapter's claim (doubling n quadruples attention's time) checked on this server's numbers."""
    if "attention" not in fits:
        return "Only one size fitted in the time budget, so there is no exponent to fit."
    f = fits["attention"]
    sentence = (
        f"Doubling n multiplied the attention time by {f['doubling_factor']:.1f} on this server "
        f"(fitted exponent {f['exponent']:.2f} over n = {f['fit_from']:,}-{ns[-1]:,}; "
        f"pure n² work would give 4)."
    )
    if f["exponent"] < SMALL_N_EXPONENT:
        sentence += (
            " Something hides the n² work here: at small n the fixed cost of every call, or other work"
            " running on this server at the same time. Measure up to a larger n, or again."
        )
    return sentence


def too_much_memory(cfg: ModelConfig, name: str, n: int, max_bytes: int, fits: int) -> str:
    mib = 2**20
    return (
        f"Timing n = {n:,} would hold {timing_bytes(cfg, n) / mib:,.0f} MiB at once ({cfg.n_head} heads x "
        f"{n:,}² scores and as many probabilities, 4 bytes each); one measurement may use "
        f"{max_bytes / mib:,.0f} MiB on this shared server (limits.max_timing_bytes), so model {name!r} is "
        f"timed up to n = {fits:,}. The arithmetic above covers any n."
    )


def human_bytes(b: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(b) < 1000 or unit == "PB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.3g} {unit}"
        b /= 1000
    raise AssertionError("unreachable")


def memory_sentence(m, fits: dict) -> str:
    """The chapter's claim (a fused kernel does the n² work without n² memory) checked on this server."""
    i = len(m.ns) - 1
    e, f = fits["explicit"], fits["fused"]
    n, ex, fu = m.ns[i], m.peak["explicit"][i], m.peak["sdpa"][i]
    sentence = (
        f"At n = {n:,} one layer's explicit attention held {human_bytes(ex)} at its peak and the fused kernel "
        f"{human_bytes(fu)} ({ex / max(fu, 1):,.0f}x less). Doubling n multiplied the explicit peak by "
        f"{e['doubling_factor']:.1f} (n² gives 4) and the fused one by {f['doubling_factor']:.1f} (n gives 2)."
    )
    if f["exponent"] >= 1.5:
        sentence += (
            f" On this device ({m.device}) the fused call still grows like n²: PyTorch picked a kernel that "
            "materialises the scores here, so it saves no memory."
        )
    else:
        sentence += " Both compute all n² scores; the fused kernel never keeps the n x n matrix."
    return sentence
