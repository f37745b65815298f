"""Running uvicorn for `python -m app`: our connection limits, and "ready" only once every worker serves.

uvicorn's own `run()` starts the app's lifespan before it binds the port (a "ready" line printed from the
lifespan could be followed by "address already in use"), and with `--workers N` it returns normally,
exit status 0, when a worker fails to start. Here `serve()` calls `ready()` only once the port is
bound and every worker has finished starting, and reports why it did not serve otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from .protocol import AtlasH11Protocol
from .settings import Settings

HEAD_LIMIT_BYTES = 16 * 1024  # a request's line and headers; a browser's are ~1 KiB (h11's default too)


def config(target: FastAPI | str, settings: Settings, host: str, port: int, workers: int) -> uvicorn.Config:
    return uvicorn.Config(
        target, factory=isinstance(target, str), host=host, port=port, workers=workers,
        http=AtlasH11Protocol, timeout_keep_alive=settings.keep_alive_s,
        limit_concurrency=settings.max_connections, h11_max_incomplete_event_size=HEAD_LIMIT_BYTES,
    )  # fmt: skip


class ReadyServer(uvicorn.Server):
    """One process: `ready()` right after the socket is bound, which uvicorn does after the lifespan."""

    def __init__(self, cfg: uvicorn.Config, ready: Callable[[], None]) -> None:
        super().__init__(cfg)
        self.ready = ready

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)  # exits (SystemExit) when the lifespan fails or the port is taken
        if self.started:
            self.ready()


class Supervisor(Multiprocess):
    """Several processes: `ready()` once every worker reports it is serving; a worker that dies before
    then stops them all and marks the start as failed (uvicorn would go on, or stop with status 0)."""

    def __init__(self, cfg: uvicorn.Config, sockets: list, ready: Callable[[], None]) -> None:
        super().__init__(cfg, sockets)
        self.ready, self.failed = ready, False

    def run(self) -> None:
        self.init_processes()
        if self.wait_for_workers():
            self.ready()
        while not self.should_exit.wait(0.5):
            self.handle_signals()
            self.keep_subprocess_alive()
        self.terminate_all()
        self.join_all()

    def wait_for_workers(self) -> bool:
        pending = list(self.processes)
        while pending and not self.should_exit.is_set():
            self.handle_signals()
            for process in list(pending):
                if process.is_ready(timeout=0.5):
                    pending.remove(process)
                elif not process.process.is_alive():
                    self.failed = True
                    self.should_exit.set()
                    return False
        return not pending


def serve(
    target: FastAPI | str, settings: Settings, host: str, port: int, workers: int, ready: Callable[[], None]
) -> str | None:
    """Serve until stopped; None if it served, else why it could not start (in words)."""
    cfg = config(target, settings, host, port, workers)
    if workers == 1:
        server = ReadyServer(cfg, ready)
        try:
            server.run()
        except SystemExit:
            pass  # uvicorn logged the cause; the sentence is ours
        if server.started:
            return None
        lifespan = getattr(server, "lifespan", None)
        if lifespan is not None and not lifespan.should_exit:
            return f"cannot listen on {host}:{port}; is another server using the port? Choose another with --port."
        return "the application failed while starting (its log is above)."
    try:
        sock = cfg.bind_socket()
    except SystemExit:
        return (
            f"cannot listen on {host}:{port}; is another server using the port? Choose another with --port."
        )
    supervisor = Supervisor(cfg, [sock], ready)
    supervisor.run()
    if supervisor.failed:
        return "a worker process failed while starting (its log is above); no worker is serving."
    return None
