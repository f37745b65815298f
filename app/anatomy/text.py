"""The anatomy page's words: the block diagram's stage labels and each pipeline step's name and job."""

from __future__ import annotations

from labs.anatomy import Step
from model.config import ModelConfig

STAGE_LABELS = {
    "x_in": "x (residual stream in)",
    "norm1": "after normalise",
    "attn_out": "multi-head attention out",
    "resid_mid": "after add: x + attention",
    "norm2": "after normalise",
    "mlp_out": "feed-forward out",
    "resid_post": "after add: x + feed-forward",
}


def step_text(step: Step, cfg: ModelConfig) -> tuple[str, str | None]:
    """(name, what it does) of one pipeline step, as the chapter draws it."""
    D, V = cfg.d_model, cfg.vocab_size
    return {
        "ids": ("token ids", None),
        "embed": ("embedding lookup", f"row of a [{V} x {D}] matrix per id"),
        "positions": ("+ learned positions", f"row of a [{cfg.context_length} x {D}] matrix"),
        "block": (
            f"transformer block L{step.layer or 0}",  # L0, L1, ...: the names every page uses
            "norm, attention, add, norm, feed-forward, add",
        ),
        "final_norm": ("final normalise", cfg.norm),
        "unembed": ("output layer (unembedding)", f"multiply by a [{D} x {V}] matrix"),
        "softmax": ("softmax", "probability of each word being next"),
    }[step.key]
