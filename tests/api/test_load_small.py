"""A small class in CI: 10 clients posting `/api/trace` for 10 s against a real `python -m app` server
on a free loopback port (its own process, real sockets, real thread pool). Zero errors allowed.

The full-size run (50 clients x 60 s, 1 and 2 workers, memory over time) is `python -m bench load`.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bench.load import hammer
from bench.server import serve
from tests.api_helpers import save_tiny

CLIENTS, SECONDS = 10, 10.0
WORDS = ["cat", "dog", "man", "mat", "fox", "ball", "Lily", "Tom", "red", "time", "sat", "gave"]


def prompts(count: int) -> list[str]:
    """All different, so the response cache never answers in the model's place."""
    return [f"The {WORDS[i % 12]} sat on the {WORDS[(i // 12) % 12]} {i} times." for i in range(count)]


@pytest.mark.slow
def test_load_ten_clients_ten_seconds_no_errors(tmp_path):
    folder = save_tiny(tmp_path / "tiny", context_length=128)
    with serve(str(folder), workers=1) as server:
        # A thread of its own: Playwright's sync API may already run an event loop in this one.
        with ThreadPoolExecutor(1) as pool:
            load = hammer(server["url"], server["pid"], prompts(20_000), CLIENTS, SECONDS)
            result = pool.submit(asyncio.run, load).result()
        after = httpx.post(
            server["url"] + "/api/trace", json={"prompt": "The cat sat on the mat."}, timeout=60
        )
    assert result["errors"] == [], result["errors"][:5]
    assert len(result["latencies"]) >= CLIENTS  # every client got answers, not just one
    assert after.status_code == 200 and after.json()["n"] > 0  # and the server still answers afterwards
