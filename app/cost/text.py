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
