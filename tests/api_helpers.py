"""Helpers for the API tests: tiny models saved to disk and clients with the real lifespan.

A real server (child process or thread): tests/servers.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import torch
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from model import save
from tests.tiny import make_tokenizer, tiny_model


def save_tiny(folder: Path, arch: str = "llama", seed: int = 0, card: str | None = "# tiny\n", **kw) -> Path:
    """A tiny random model whose attention is sharp (scaled q/k), so switches visibly change patterns."""
    net = tiny_model(arch, seed=seed, **kw)
    with torch.no_grad():
        for block in net.blocks:
            block.attn.q_proj.weight.mul_(8)
            block.attn.k_proj.weight.mul_(8)
    save(net, make_tokenizer(), folder, card=card)
    return folder


@contextmanager
def client_for(*models: Path | str, **settings) -> Iterator[TestClient]:
    app = create_app(Settings(models=[str(m) for m in models], **settings))
    with TestClient(app) as client:  # `with` runs the real lifespan: models load from disk
        yield client


def max_length_prompt(url: str) -> str:
    """Words enough for the server's `max_tokens`, found from the 422 that names the token count."""
    with httpx.Client(base_url=url, timeout=60) as http:
        limit = http.get("/api/models").json()["limits"]["max_tokens"]
        words = ("Once upon a time a little girl named Lily found a red ball in the park " * 40).split()
        count = len(words)
        for _ in range(6):
            prompt = " ".join(words[:count])
            r = http.post("/api/trace", json={"prompt": prompt, "top_k": 1})
            if r.status_code == 200 and r.json()["n"] >= limit - 8:
                return prompt
            tokens = (
                int(re.search(r"is (\d+) tokens", r.text).group(1)) if r.status_code == 422 else r.json()["n"]
            )
            count = min(len(words), int(count * (limit - 2) / tokens))
    raise AssertionError(f"no prompt of about {limit} tokens found")
