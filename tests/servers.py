"""The one way tests run a real server: `python -m app` in a child process, or an app in a thread.

- `run_app(args, log)`: `python -m app ARGS --port P` on a free port, output to `log`, until the block
  ends; yields an `AppProcess` (url, port, proc, log). The ATLAS_* variables of the shell running the
  tests are not passed on, so a developer's settings cannot change what a test sees.
- `serve_app(app)`: a real uvicorn server for an app object in a thread (real sockets and thread
  pool, no child process: quicker, and settings are plain arguments); yields its base URL.
- `CHROMIUM`, `CHROMIUM_ARGS`: Debian's Chromium and the flags every browser test launches it with.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from fastapi import FastAPI

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(ready: Callable[[], bool], alive: Callable[[], bool], what: str) -> None:
    """Poll `ready` until it is true; fail at once if `alive` turns false, or after START_TIMEOUT_S.

    Polling is the only way to see a socket start listening: there is no event to wait on.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if not alive():
            raise RuntimeError(f"{what} exited before it served")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer within {START_TIMEOUT_S} s")
        time.sleep(0.1)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/api/models", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


@dataclass
class AppProcess:
    url: str
    port: int
    proc: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text()


@contextmanager
def run_app(
    args: list[str], log: Path, stop: int = signal.SIGTERM, env: dict[str, str] | None = None
) -> Iterator[AppProcess]:
    """`python -m app ARGS --port P`; on leaving, sends `stop` and waits, so the log is complete.
    `env`: ATLAS_* settings for this server (the shell's own are never passed on)."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}, **(env or {})}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", *args, "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    server = AppProcess(f"http://127.0.0.1:{port}", port, proc, log)
    try:
        try:
            wait_until(lambda: answers(server.url), lambda: proc.poll() is None, "python -m app")
        except RuntimeError as e:
            raise RuntimeError(f"{e}:\n{server.output()[-3000:]}") from None
        yield server
    finally:
        proc.send_signal(stop)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def serve_models(models: list[str], log: Path) -> Iterator[str]:
    """`python -m app --model M ... --host 127.0.0.1` until the block ends; yields the base URL."""
    args = [a for m in models for a in ("--model", m)]
    with run_app([*args, "--host", "127.0.0.1"], log) as server:
        yield server.url


@contextmanager
def serve_app(app: FastAPI) -> Iterator[str]:
    """A real uvicorn server for `app` in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, thread.is_alive, "the test server")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
