"""The HTTP connection: uvicorn's h11 protocol with the deadlines a shared classroom server needs.

uvicorn closes a connection that stays idle after an answer (`timeout_keep_alive`), but its timer stops
at the first byte of the next request: a client that sends half a header, one byte now and then
(slowloris), holds its connection forever. Here a connection has `request_timeout_s` to send a whole
request (head and body; bodies are at most 64 KiB) from the moment it opens or its last answer ends,
and a connection whose client stops reading our answer is dropped after `send_stall_s` without progress.

Together with `SendInSlices` (app/middleware.py: answers leave in 64 KiB slices, each written only once
the connection has drained below uvicorn's 64 KiB high-water mark) a connection holds at most about
two slices of answer in memory, however large the answer and however many requests it pipelines
(h11 parses the next pipelined request only after the current answer has been sent).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .settings import get_settings


class AtlasH11Protocol(H11Protocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()
        self.request_timeout_s = settings.request_timeout_s
        self.send_stall_s = settings.send_stall_s
        self._request_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None

    # ---- a whole request within request_timeout_s ----

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_request()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_request()

    def _watch_request(self) -> None:
        """Run the clock while we wait for (the rest of) a request; stop it once one is complete."""
        waiting = self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing()
        if waiting and self._request_timer is None:
            self._request_timer = self.loop.call_later(self.request_timeout_s, self._drop, "request")
        elif not waiting and self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    # ---- a client that stops reading ----

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall_timer is None:
            self._stall_timer = self.loop.call_later(self.send_stall_s, self._drop, "answer")

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _drop(self, what: str) -> None:
        if not self.transport.is_closing():
            limit = self.request_timeout_s if what == "request" else self.send_stall_s
            self.logger.info(
                "closing a connection from %s: its %s stalled for %s s", self.client, what, limit
            )
            self.transport.abort()  # a buffered answer nobody reads is dropped, not flushed

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._request_timer, self._stall_timer):
            if timer is not None:
                timer.cancel()
        self._request_timer = self._stall_timer = None
        super().connection_lost(exc)
