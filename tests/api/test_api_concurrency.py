"""Many students at once: each gets the trace of their own prompt; two app instances agree byte for byte."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch

from app.main import create_app
from app.runtime import ByteLRU
from app.settings import Settings
from app.wire import decode_thumbnails
from model import load
from tests.api_helpers import client_for, save_tiny
from tests.servers import serve_app

WORDS = ["cat", "dog", "man", "mat", "fox", "ball", "Lily", "Tom", "red", "time"]
PROMPTS = [f"The {WORDS[i % 10]} sat on the {WORDS[(i * 3 + 1) % 10]} {i} times." for i in range(20)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("m") / "tiny")


def test_api_20_concurrent_traces_each_get_their_own_prompt(folder):
    lm = load(folder)
    app = create_app(Settings(models=[str(folder)], cache_bytes=0))  # no cache: every request runs the model
    barrier = threading.Barrier(len(PROMPTS))
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=120) as http:

        def fetch(prompt: str) -> dict:
            barrier.wait()  # release all 20 together
            r = http.post("/api/trace", json={"prompt": prompt, "top_k": 3})
            assert r.status_code == 200, r.text
            return r.json()

        with ThreadPoolExecutor(len(PROMPTS)) as pool:
            bodies = list(pool.map(fetch, PROMPTS))
    for prompt, body in zip(PROMPTS, bodies, strict=True):
        ref = lm.trace(prompt)
        assert body["token_ids"] == ref.token_ids and body["tokens"] == ref.tokens
        torch.testing.assert_close(
            decode_thumbnails(body["thumbnails"]), ref.attention, atol=0.5 / 255 + 1e-6, rtol=0
        )
        top = torch.softmax(ref.logits, -1).topk(3).indices.tolist()
        assert [[t["id"] for t in p["top"]] for p in body["predictions"]] == top


def test_api_two_instances_give_identical_answers(folder):
    requests = [
        ("/api/trace", {"prompt": PROMPTS[0], "temperature": 0.7, "ablate": [[1, 1]]}),
        ("/api/head", {"prompt": PROMPTS[1], "layer": 1, "head": 2, "causal": False}),
        ("/api/ablation", {"prompt": PROMPTS[2], "ablate": [[0, 3]], "mode": "mean"}),
        ("/api/models", None),
    ]
    with client_for(folder) as a, client_for(folder) as b:
        assert a.app.state.runtime is not b.app.state.runtime
        for path, body in requests:
            ra = a.post(path, json=body) if body else a.get(path)
            rb = b.post(path, json=body) if body else b.get(path)
            assert ra.status_code == rb.status_code == 200
            assert ra.content == rb.content, path


def test_byte_lru_is_bounded_in_bytes():
    cache = ByteLRU(max_bytes=100)
    for i in range(5):
        cache.put(f"k{i}", bytes(30))
    assert cache.size == 90 and len(cache) == 3 and cache.get("k0") is None and cache.get("k4") == bytes(30)
    assert cache.get("k2") is not None  # touch k2: k3 is now the oldest
    cache.put("k5", bytes(30))
    assert cache.get("k3") is None and cache.get("k2") is not None
    cache.put("huge", bytes(101))  # bigger than the budget: not stored, evicts nothing
    assert cache.get("huge") is None and cache.size == 90
    cache.put("k2", bytes(10))  # replacing a key adjusts the size
    assert cache.size == 70


def test_byte_lru_survives_many_threads():
    cache = ByteLRU(max_bytes=1000)

    def work(t: int) -> None:
        for i in range(500):
            cache.put(f"{t}-{i % 40}", bytes(i % 50 + 1))
            cache.get(f"{(t + 1) % 8}-{i % 40}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert cache.size <= 1000
    assert cache.size == sum(len(v) for v in cache._items.values())
