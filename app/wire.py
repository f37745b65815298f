"""The wire format of the JSON API, importable without the server (no FastAPI):

    from app.wire import decode_attention
    attention = decode_attention(requests.post(url + "/api/trace", json={...}).json()["attention"])

Attention travels as base64 bytes, one byte per probability (round(p * 255)); float arrays travel
rounded to a few digits, because JSON size, not precision, is what matters for a page.
"""

from __future__ import annotations

import base64

import numpy as np
import torch


def encode_attention(attention: torch.Tensor, causal: bool) -> dict:
    """(L, H, n, n) probabilities -> the u8 payload of the contract: round(p * 255), layer-major, then
    head, then query row; causal rows keep only keys 0..i, because the rest is exactly 0."""
    L, H, n, _ = attention.shape
    q = (attention.float() * 255).round_().clamp_(0, 255).to(torch.uint8)
    if causal:
        rows, cols = torch.tril_indices(n, n)  # row-major: (0,0), (1,0), (1,1), (2,0), ...
        q = q[:, :, rows, cols]
    data = base64.b64encode(q.contiguous().numpy().tobytes()).decode("ascii")
    return {"format": "u8-tril" if causal else "u8-full", "n_layer": L, "n_head": H, "n": n, "data": data}


def decode_attention(payload: dict) -> torch.Tensor:
    """The inverse of `encode_attention`, as a user's script would write it: (L, H, n, n) in [0, 1]."""
    L, H, n = payload["n_layer"], payload["n_head"], payload["n"]
    raw = torch.frombuffer(bytearray(base64.b64decode(payload["data"])), dtype=torch.uint8).float() / 255
    if payload["format"] == "u8-full":
        return raw.view(L, H, n, n)
    out = torch.zeros(L, H, n, n)
    rows, cols = torch.tril_indices(n, n)
    out[:, :, rows, cols] = raw.view(L, H, -1)
    return out


def rounded(t: torch.Tensor | float, decimals: int) -> list | float:
    """Nested lists of floats (or one float) with few decimals."""
    if not isinstance(t, torch.Tensor):
        return round(float(t), decimals) + 0.0  # + 0.0: no -0.0 on the wire
    return np.round(t.detach().float().cpu().numpy().astype(np.float64), decimals).tolist()


def sig(t: torch.Tensor, digits: int = 3) -> list:
    """Nested lists with a few significant digits: a 1e-8 difference stays 1e-8, not 0."""
    a = t.detach().double().cpu().numpy()
    return np.vectorize(lambda x: float(f"{x:.{digits}g}"), otypes=[float])(a).tolist()
