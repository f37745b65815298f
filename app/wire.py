"""The wire format of the JSON API, importable without the server (no FastAPI):

    from app.wire import decode_attention, decode_thumbnails
    thumbs = decode_thumbnails(requests.post(url + "/api/trace", json={...}).json()["thumbnails"])
    probe = decode_attention(requests.get(url + "/api/heads/probe?probe=repeat").json()["attention"])

Attention travels as base64 bytes, one byte per probability (round(p * 255)); a keystroke's answer
carries each head's thumbnail in the same format (max-pooled, exact up to 48 tokens), and one head's
full matrix comes from POST /api/head. Float arrays travel rounded to a few digits, because JSON size,
not precision, is what matters for a page.
"""

from __future__ import annotations

import base64
import math

import numpy as np
import torch
import torch.nn.functional as F


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


def encode_u16(pattern: torch.Tensor, causal: bool) -> dict:
    """One (n, n) pattern as little-endian uint16 round(p * 65535), base64, row after row (keys 0..i of
    row i when causal): within 8e-6 of the model's, a quarter of the bytes of float JSON, and built in
    milliseconds where 262,144 rounded floats at n = 512 take longer to write than to slice."""
    n = pattern.shape[-1]
    q = (pattern.double() * 65535).round_().clamp_(0, 65535)
    if causal:
        rows, cols = torch.tril_indices(n, n)
        q = q[rows, cols]
    data = base64.b64encode(q.numpy().astype("<u2").tobytes()).decode("ascii")
    return {"format": "u16-tril" if causal else "u16-full", "n": n, "data": data}


def decode_u16(payload: dict) -> torch.Tensor:
    """(n, n) in [0, 1], the inverse of `encode_u16`."""
    n = payload["n"]
    raw = (
        torch.from_numpy(np.frombuffer(base64.b64decode(payload["data"]), dtype="<u2").astype(np.float64))
        / 65535
    )
    if payload["format"] == "u16-full":
        return raw.view(n, n).float()
    out = torch.zeros(n, n, dtype=torch.float64)
    rows, cols = torch.tril_indices(n, n)
    out[rows, cols] = raw
    return out.float()


# A head's thumbnail: its pattern max-pooled over square blocks of `block` x `block` tokens (averaging would
# wash a one-token stripe, the previous-token or induction diagonal, into the background) into at most
# THUMB_SIDE x THUMB_SIDE pixels; the thumbnails of one answer hold at most THUMB_PIXELS pixels, so 512
# heads get at most 33 x 33 each. Equal blocks make the pooling one max_pool2d call, and with the same
# blocks for rows and columns a block right of the diagonal lies wholly in a causal model's future.
THUMB_SIDE = 48
THUMB_PIXELS = 256 * THUMB_SIDE * THUMB_SIDE


def thumb_block(n: int, heads: int) -> int:
    """Tokens per side of a thumbnail's pixel: 1 (exact) while n fits, else the fewest that fit."""
    side = max(1, min(THUMB_SIDE, math.isqrt(THUMB_PIXELS // heads)))
    return -(-n // side)


def max_pool(attention: torch.Tensor, block: int) -> torch.Tensor:
    """(L, H, n, n) -> (L, H, s, s) with s = ceil(n / block): the largest weight of each block (the last
    block may be cut short by the end of the prompt)."""
    if block == 1:
        return attention
    L, H, n, _ = attention.shape
    pooled = F.max_pool2d(attention.float().reshape(L * H, n, n), block, block, ceil_mode=True)
    return pooled.view(L, H, *pooled.shape[-2:])


def encode_thumbnails(attention: torch.Tensor, causal: bool) -> dict:
    """(L, H, n, n) -> every head's thumbnail as the attention payload of an s x s matrix: pixel (a, b)
    is the largest weight from queries a*block.. to keys b*block.. (tokens: n). At block 1 these are
    exactly `encode_attention`'s bytes."""
    L, H, n, _ = attention.shape
    block = thumb_block(n, L * H)
    payload = encode_attention(max_pool(attention, block), causal)
    return {**payload, "size": payload["n"], "n": n, "block": block}


def decode_thumbnails(payload: dict) -> torch.Tensor:
    """(L, H, size, size) in [0, 1], the inverse of `encode_thumbnails`."""
    return decode_attention({**payload, "n": payload["size"]})
