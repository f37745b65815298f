"""Detail on demand: a keystroke's answer carries thumbnails, one head's full matrix comes from
POST /api/head (sliced from the cached forward), and the answer stays small at 144 and 512 heads."""

from __future__ import annotations

import gzip

import pytest
import torch

from app.wire import decode_thumbnails, decode_u16, encode_thumbnails, max_pool, thumb_block
from model import act_name, load
from tests.api_helpers import client_for, save_tiny

WORDS = "The cat sat on the mat. The dog bites the man. Lily had a red ball. She gave it to Tom.".split()


def prompt_of(lm, n: int) -> str:
    """Words until the prompt is exactly n tokens (the tiny tokenizer splits words the same way alone)."""
    words = []
    while len(lm.encode(" ".join(words))) < n:
        words.append(WORDS[len(words) % len(WORDS)])
    text = " ".join(words)
    while len(lm.encode(text)) > n:
        text = text[:-1]
    assert len(lm.encode(text)) == n
    return text


def test_thumbnail_max_pool_keeps_a_one_token_stripe():
    n = 128
    prev = torch.zeros(1, 1, n, n)
    prev[0, 0, 0, 0] = 1
    prev[0, 0, range(1, n), range(n - 1)] = 1  # a previous-token head: one weight per row
    payload = encode_thumbnails(prev, causal=True)
    block = payload["block"]
    thumb = decode_thumbnails(payload)[0, 0]
    assert payload["size"] == thumb.shape[-1] <= 48 and block == thumb_block(n, 1) == 3
    for i in range(1, n):  # the pixel holding each weight is full, never averaged with its dark neighbours
        assert thumb[i // block, (i - 1) // block] == 1
    assert thumb.sum() == (thumb == 1).sum()  # nothing else lit
    assert torch.equal(max_pool(prev, 1), prev)


def test_thumbnail_shape_for_many_heads_and_exact_at_short_prompts():
    assert thumb_block(48, 512) == 2 and thumb_block(33, 512) == 1 and thumb_block(48, 144) == 1
    att = torch.softmax(torch.randn(2, 3, 40, 40), -1)
    payload = encode_thumbnails(att, causal=False)
    assert (payload["block"], payload["size"], payload["n"]) == (1, 40, 40)
    assert (decode_thumbnails(payload) - att).abs().max() <= 0.5 / 255 + 1e-6


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("m") / "tiny", context_length=128)


def test_api_head_equals_run_with_cache_and_reuses_the_traced_forward(folder):
    lm = load(folder)
    prompt = prompt_of(lm, 100)
    with client_for(folder, cache_bytes=0) as client:
        served = client.app.state.runtime.lm(None)
        forwards = []
        run = served.trace
        served.trace = lambda *a, **kw: forwards.append(a) or run(*a, **kw)  # counts the forwards
        body = {"prompt": prompt, "causal": False, "ablate": [[0, 1]]}
        thumbs = client.post("/api/trace", json=body).json()["thumbnails"]
        assert (thumbs["block"], thumbs["size"]) == (3, 34) and len(forwards) == 1
        head = client.post("/api/head", json={**body, "layer": 1, "head": 2}).json()
        assert len(forwards) == 1  # sliced from the trace's forward, not run again
        client.post("/api/head", json={**body, "causal": True, "layer": 1, "head": 2}).raise_for_status()
        assert len(forwards) == 2  # another forward: the key holds the switches
    _, cache = lm.run_with_cache(prompt, [act_name("pattern", 1)], causal=False, ablate=[(0, 1)])
    ref = cache["pattern", 1][0, 2]
    torch.testing.assert_close(torch.tensor(head["pattern"]), ref, atol=1e-5, rtol=0)
    # The thumbnail is that matrix max-pooled, to the byte.
    pooled = decode_thumbnails(thumbs)[1, 2]
    want = (torch.nn.functional.max_pool2d(ref[None], 3, 3, ceil_mode=True)[0] * 255).round() / 255
    torch.testing.assert_close(pooled, want, atol=1e-6, rtol=0)


def keystroke_bytes(folder, n: int) -> tuple[int, int, dict]:
    lm = load(folder)
    with client_for(folder) as client:
        r = client.post("/api/trace", json={"prompt": prompt_of(lm, n)}, headers={"accept-encoding": "gzip"})
        assert r.status_code == 200, r.text
        return len(r.content), len(gzip.compress(r.content)), r.json()


def test_keystroke_answer_fits_at_gpt2_small_heads_n128(tmp_path):
    folder = save_tiny(tmp_path / "gpt2", arch="gpt2", n_layer=12, n_head=12, n_kv_head=12, d_model=48,
                       d_ff=96, context_length=128)  # fmt: skip
    raw, wire, body = keystroke_bytes(folder, 128)
    assert body["thumbnails"]["size"] <= 48 and len(body["predictions"]) == 128
    print(f"GPT-2-small heads, n = 128: {raw} bytes, {wire} gzipped")
    assert raw <= 300_000, (raw, wire)  # even before gzip


def test_keystroke_answer_fits_at_llama_1b_heads_n512(tmp_path):
    # Llama-3.2-1B's head layout (16 layers x 32 heads, 8 K/V heads) with a tiny d_head, so it runs fast.
    folder = save_tiny(tmp_path / "llama", n_layer=16, n_head=32, n_kv_head=8, d_model=64, d_ff=64,
                       context_length=512)  # fmt: skip
    raw, wire, body = keystroke_bytes(folder, 512)
    assert body["thumbnails"]["size"] <= 33
    print(f"Llama-3.2-1B heads, n = 512: {raw} bytes, {wire} gzipped")
    assert raw <= 1_000_000, (raw, wire)  # even before gzip


def test_api_head_u16_is_the_float_pattern_within_8e6(folder):
    with client_for(folder) as client:
        body = {"prompt": "The cat sat on the mat. The dog", "layer": 1, "head": 3}
        floats = client.post("/api/head", json=body).json()
        packed = client.post("/api/head", json={**body, "encoding": "u16"}).json()
        loose = client.post("/api/head", json={**body, "encoding": "u16", "causal": False}).json()
    assert packed["pattern"] is None and floats["exact"] is None and packed["scores"] == floats["scores"]
    assert packed["exact"]["format"] == "u16-tril" and loose["exact"]["format"] == "u16-full"
    # half a u16 step plus the floats' own rounding to 5 decimals
    torch.testing.assert_close(
        decode_u16(packed["exact"]), torch.tensor(floats["pattern"]), atol=1.3e-5, rtol=0
    )
    assert decode_u16(loose["exact"]).sum(-1).sub(1).abs().max() < 1e-3
