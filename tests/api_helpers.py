"""Helpers for the API tests: tiny models saved to disk, clients with the real lifespan, a live server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
import uvicorn
from fastapi import FastAPI
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_server(app: FastAPI) -> Iterator[str]:
    """A real uvicorn server in a thread (real sockets, real thread pool); yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
