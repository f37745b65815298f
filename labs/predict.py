"""Next-token distributions: temperature, top-k and how far one distribution moved from another."""

from __future__ import annotations

import torch


def temper(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits / temperature. A temperature so small that this overflows (5e-324 is a valid float > 0)
    gets its limit instead of inf/inf = NaN: all probability on the top logit(s). The floor of -1e4
    changes no probability (exp(-1e4) is exactly 0) but keeps log-probabilities and KL finite."""
    scaled = logits.float() / temperature
    # The extremes are finite only if every value is (NaN propagates): two reductions, no mask tensor.
    if torch.isfinite(scaled.amax()) and torch.isfinite(scaled.amin()):
        return scaled
    shifted = (logits.double() - logits.double().amax(-1, keepdim=True)) / temperature
    return shifted.clamp(min=-1e4).float()


def top_k(logits: torch.Tensor, k: int, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k ids and probabilities of softmax(logits / temperature) along the last axis."""
    probs = torch.softmax(temper(logits, temperature), dim=-1)
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)
    return top.indices, top.values


def kl_divergence(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """KL(p || q) in nats between the softmax distributions of two logit vectors (V,); never below 0."""
    lp, lq = torch.log_softmax(p_logits.float(), -1), torch.log_softmax(q_logits.float(), -1)
    return max((lp.exp() * (lp - lq)).sum().item(), 0.0)
