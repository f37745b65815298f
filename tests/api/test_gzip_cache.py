"""A cached answer is gzipped once, not on every hit: the gzip form is kept with the answer in the
response cache (within its byte budget) and sent as it is to every client that accepts gzip."""

from __future__ import annotations

import gzip

import pytest
from starlette.middleware.gzip import GZipResponder

import app.runtime
from app.runtime import Answer, ByteLRU
from tests.api_helpers import client_for, save_tiny

PROMPT = "The cat sat on the mat because the cat was tired and the mat was warm"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("m") / "tiny")


def raw(client, body: dict, encoding: str) -> tuple[dict, bytes]:
    """Headers and the bytes as they came over the wire (httpx would decode them)."""
    with client.stream("POST", "/api/trace", json=body, headers={"accept-encoding": encoding}) as r:
        assert r.status_code == 200
        return dict(r.headers), b"".join(r.iter_raw())


def test_a_repeat_hit_sends_the_same_gzip_bytes_without_compressing_again(folder, monkeypatch):
    calls = []
    real = app.runtime.compress
    monkeypatch.setattr(app.runtime, "compress", lambda body: calls.append(len(body)) or real(body))
    middleware = []  # the middleware must not compress a cached answer either
    real_mw = GZipResponder._compress_body
    monkeypatch.setattr(GZipResponder, "_compress_body", lambda s, *a: middleware.append(1) or real_mw(s, *a))
    body = {"prompt": PROMPT, "top_k": 20}
    with client_for(folder) as client:
        cache = client.app.state.runtime.cache
        h1, first = raw(client, body, "gzip, deflate")
        size_after_first = cache.size
        h2, second = raw(client, body, "gzip")
        _, plain = raw(client, body, "identity")
    assert (
        h1["content-encoding"] == h2["content-encoding"] == "gzip" and "accept-encoding" in h1["vary"].lower()
    )
    assert len(calls) == 1 and middleware == []  # compressed once, on the first gzip request
    assert first == second  # the repeat hit sends the very same bytes
    assert gzip.decompress(first) == plain and len(first) < len(plain) / 2
    assert size_after_first == len(plain) + len(first)  # the gzip form counts in the cache's budget
    assert cache.size == size_after_first


def test_gzip_forms_stay_within_the_cache_budget():
    cache = ByteLRU(max_bytes=30_000)
    answers = [Answer.of(bytes([i]) * 10_000, f"k{i}") for i in range(3)]
    for a in answers:
        cache.put(a.key, a)
    assert cache.size == 30_000
    gz = cache.gzipped(answers[2])  # adds its gzip form: the oldest answer makes room
    assert cache.get("k0") is None and cache.get("k2") is answers[2]
    assert cache.size == 20_000 + len(gz) <= cache.max_bytes
    assert cache.gzipped(answers[2]) is gz  # kept, not compressed again
    uncached = Answer.of(b"x" * 5000, "elsewhere")
    assert gzip.decompress(cache.gzipped(uncached)) == uncached and uncached.gz is None  # not kept
