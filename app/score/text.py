"""The score view's sentences: what this head's arithmetic involves (numbers from the model)."""

from __future__ import annotations

from model.config import ModelConfig


def notes(cfg: ModelConfig, head: int, kv_head: int, group: list[int], rotary: bool, position: bool,
          causal: bool, n_shown: int, n_visible: int) -> list[str]:  # fmt: skip
    out = [f"Each vector has d_head = {cfg.hd} numbers; scores are divided by sqrt({cfg.hd}) = "
           f"{cfg.hd**0.5:.3g} so they do not grow with the vector length."]  # fmt: skip
    if cfg.n_rep > 1:
        out.append(
            f"Grouped-query attention: query head {head} reads keys and values from K/V head {kv_head}, "
            f"shared by query heads {group[0]}-{group[-1]} ({cfg.n_head} query heads, {cfg.n_kv_head} K/V heads)."
        )
    if rotary and position:
        out.append(
            "RoPE rotates q and k by their positions before the dot product: the score sees their distance."
        )
    elif rotary:
        out.append("Position is switched off: q and k are not rotated, so the score cannot see order.")
    else:
        out.append("This model adds learned position vectors to the input, so q and k are not rotated.")
    if causal:
        out.append("The causal mask hides later tokens: their score is -inf and their weight 0.")
    if n_shown < n_visible:
        out.append(f"Vectors shown for the {n_shown} heaviest of {n_visible} visible keys; scores for all.")
    return out
