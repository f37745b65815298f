"""ASGI middlewares: security headers on every response, a cap on request body size, and a Host check.

Plain ASGI rather than `BaseHTTPMiddleware`, so they add no task per request and never buffer responses.
"""

from __future__ import annotations

import ipaddress
import json

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Same-origin only: Plotly and every page script are served by us. Plotly writes <style> tags at run
# time, hence 'unsafe-inline' for styles (never for scripts); canvas/Plotly exports need data:/blob: images.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _reject(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """413 for bodies over `max_bytes`, judged by Content-Length when given and by counting otherwise
    (chunked uploads), so a huge body is never read into memory."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    def too_large(self, size: int | str) -> str:
        return (
            f"The request body is {size} bytes; the limit is {self.max_bytes} bytes. Send a shorter prompt."
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            if not declared.isdigit():
                return await _reject(send, 400, "The Content-Length header is not a number.")
            if int(declared) > self.max_bytes:
                return await _reject(send, 413, self.too_large(declared))
        chunks, total = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunks.append(message.get("body", b""))
            total += len(chunks[-1])
            if total > self.max_bytes:
                return await _reject(send, 413, self.too_large(f"more than {self.max_bytes}"))
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # after the body: wait for the disconnect as usual
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a Host header without its port: "127.0.0.1:8000" -> "127.0.0.1", "[::1]:80" -> "[::1]"."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[: header.find("]") + 1]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class HostCheck:
    """A server bound to loopback answers only requests addressed to a loopback name (400 otherwise).

    Against DNS rebinding: a web page elsewhere can point its own name at 127.0.0.1 and make the
    browser send it requests, but the browser still sends that name as the Host. Off loopback there is
    no check: whatever name a classroom or reverse proxy uses is meant to reach the server.
    """

    def __init__(self, app: ASGIApp, host: str) -> None:
        self.app = app
        named = f"[{host}]" if ":" in host else host.lower()
        self.allowed = {"localhost", "127.0.0.1", "[::1]", named}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        header = Headers(scope=scope).get("host")
        if header is not None and host_name(header) not in self.allowed:
            return await _reject(
                send, 400,
                "This server listens on this machine only and answers only to the names localhost, "
                "127.0.0.1 and [::1]: open it as http://127.0.0.1 with its port.",
            )  # fmt: skip
        await self.app(scope, receive, send)


class SendInSlices:
    """Hands large answers to the server in slices of `size` bytes.

    uvicorn writes each body message whole into the connection's buffer and waits for the buffer to
    drain only before the next message: a 3 MiB answer to a client that does not read sat in memory
    whole, once per connection (200 such connections: +500 MiB). In slices, each waits for the
    previous ones to drain, so a connection buffers about two slices. Slicing a memoryview copies nothing.
    """

    def __init__(self, app: ASGIApp, size: int = 64 * 1024) -> None:
        self.app, self.size = app, size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_sliced(message: Message) -> None:
            body = message.get("body", b"")
            if message["type"] != "http.response.body" or len(body) <= self.size:
                return await send(message)
            view, more = memoryview(body), message.get("more_body", False)
            for start in range(0, len(view), self.size):
                last = start + self.size >= len(view)
                await send({"type": "http.response.body", "body": view[start : start + self.size],
                            "more_body": more or not last})  # fmt: skip

        await self.app(scope, receive, send_sliced)
