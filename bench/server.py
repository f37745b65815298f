"""A real server for the benchmarks and the load test: `python -m app` in a child process on a free
loopback port, stopped by its own process id when done. Never binds anything but 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (uvicorn's supervisor and its workers)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


@contextmanager
def serve(
    models: str | list[str], workers: int = 1, env: dict | None = None, timeout_s: float = 180
) -> Iterator[dict]:
    """Yields {"url", "pid"} once /api/models answers; the server is stopped on exit."""
    port = free_port()
    flags = [a for m in ([models] if isinstance(models, str) else models) for a in ("--model", m)]
    cmd = [sys.executable, "-m", "app", *flags, "--host", "127.0.0.1", "--port", str(port),
           "--workers", str(workers)]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, so stopping it reaches the workers too
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, workers, timeout_s)
        yield {"url": url, "pid": proc.pid}
    finally:
        stop(proc)


def wait_ready(proc: subprocess.Popen, url: str, workers: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    ready = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}"
            )
        try:
            # Several answers in a row, so that with --workers N every worker has most likely loaded.
            ready = ready + 1 if httpx.get(url + "/api/models", timeout=5).status_code == 200 else 0
            if ready >= 2 * workers:
                return
        except httpx.HTTPError:
            ready = 0
        time.sleep(0.2)
    raise RuntimeError(f"the server at {url} did not answer within {timeout_s:.0f} s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the group we created above: this server and its workers only
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()
