"""Admission control (app/runtime.py `ModelQueue`): a bounded queue answered with 503 + Retry-After,
a client's newer request replacing its older waiting one, and requests whose client has gone dropped
before their model work starts. The model thread is held busy by a job the test releases, so what
waits in the queue is known exactly."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.runtime import Runtime
from app.settings import Settings
from tests.api_helpers import save_tiny
from tests.servers import serve_app

PROMPT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("m") / "tiny")


def settings(folder, **kw) -> Settings:
    return Settings(models=[str(folder)], cache_bytes=0, parallel_runs=1, **kw)


def until(ok, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


@contextmanager
def model_thread_held(rt: Runtime) -> Iterator[threading.Event]:
    """The one model thread runs a job that waits for the event (set on leaving, or by the test)."""
    release = threading.Event()
    job = rt.queue.submit(lambda: release.wait(30))
    until(lambda: job.state == "running", "the blocking job never started")
    try:
        yield release
    finally:
        release.set()
        job.future.result(30)


def test_a_full_queue_answers_503_with_retry_after_at_once(folder):
    with TestClient(create_app(settings(folder, max_waiting=1))) as client:
        rt = client.app.state.runtime
        with model_thread_held(rt):
            waiting = rt.queue.submit(lambda: None)  # the queue's one place is taken
            start = time.monotonic()
            r = client.post("/api/trace", json={"prompt": PROMPT})
            assert time.monotonic() - start < 2
            assert r.status_code == 503, r.text
            assert int(r.headers["retry-after"]) >= 1
            assert r.json()["detail"].startswith("The server is busy: 1 requests are already waiting")
            assert client.get("/api/models").status_code == 200  # no model work: not queued
        waiting.future.result(10)
        assert client.post("/api/trace", json={"prompt": PROMPT}).status_code == 200  # room again


def test_a_clients_newer_request_replaces_its_older_waiting_one(folder):
    app = create_app(settings(folder))
    with TestClient(app) as a, TestClient(app, client=("10.0.0.2", 5000)) as b, ThreadPoolExecutor(4) as pool:
        rt = app.state.runtime
        with model_thread_held(rt):
            old = pool.submit(a.post, "/api/trace", json={"prompt": PROMPT + " old"})
            until(lambda: len(rt.queue) == 1, "the first trace never queued")
            other = pool.submit(b.post, "/api/trace", json={"prompt": PROMPT + " other"})  # another client
            head = pool.submit(
                a.post, "/api/head", json={"prompt": PROMPT, "layer": 0, "head": 0}
            )  # other kind
            until(lambda: len(rt.queue) == 3, "the other requests never queued")
            new = pool.submit(a.post, "/api/trace", json={"prompt": PROMPT + " new"})
            r = old.result(10)  # answered while the model thread is still busy: it was never run
            assert r.status_code == 409 and "newer request" in r.json()["detail"], r.text
            assert len(rt.queue) == 3
        assert new.result(30).status_code == 200 and "".join(new.result().json()["tokens"]).endswith("new")
        assert other.result(30).status_code == 200 and head.result(30).status_code == 200


def post_and_close(url: str, path: str, body: bytes) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(0.3)  # long enough to be read and queued; then the socket closes unanswered


def test_a_request_whose_client_has_gone_is_dropped_before_it_runs(folder):
    app = create_app(settings(folder))
    with serve_app(app) as url:
        rt = app.state.runtime
        ran = []
        lm = rt.lm(None)
        trace = lm.trace
        lm.trace = lambda *a, **kw: ran.append(1) or trace(*a, **kw)
        try:
            with model_thread_held(rt):
                with ThreadPoolExecutor(5) as pool:
                    for i in range(5):
                        pool.submit(
                            post_and_close, url, "/api/trace", f'{{"prompt": "{PROMPT} {i}"}}'.encode()
                        )
                    until(lambda: len(rt.queue) >= 1, "no trace was queued")
                until(lambda: len(rt.queue) == 0, "abandoned traces stayed in the queue", timeout=5)
            assert ran == []  # none of the five was computed
        finally:
            lm.trace = trace
