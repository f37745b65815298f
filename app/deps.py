"""Dependencies routes declare: the one `Runtime` built by the lifespan, and the JSON answer."""

from __future__ import annotations

import ipaddress
from contextvars import ContextVar
from typing import Annotated

import anyio.from_thread
from fastapi import Depends, Query, Request, Response

from .runtime import CALLER, GZIP_MIN_BYTES, Answer, ByteLRU, Caller, Runtime

# The cache whose gzip forms the current request may be sent; None when its client does not accept gzip.
GZIP_FROM: ContextVar[ByteLRU | None] = ContextVar("atlas_gzip_from", default=None)


def fairness_key(request: Request) -> str | None:
    """The client's address, or None for loopback (this machine's user, or a proxy on it; uvicorn
    replaces a local proxy's address with the X-Forwarded-For it sends, so students stay apart)."""
    host = request.client.host if request.client else None
    if not host:
        return None
    try:
        return None if ipaddress.ip_address(host).is_loopback else host
    except ValueError:
        return host  # not an address (the test client's "testclient"): a client like any other


def disconnected(request: Request) -> bool:
    """Whether the client has gone, asked from a request thread (the route's, where FastAPI runs a
    plain `def`): Starlette's `is_disconnected()` looks at the connection without waiting."""
    try:
        return anyio.from_thread.run(request.is_disconnected)
    except RuntimeError:  # not on a request thread: no way to ask, so assume it is still there
        return False


async def get_runtime(request: Request) -> Runtime:
    # async, so it runs in the request's own task: the context variable set here reaches the route's
    # thread (anyio copies the context into it) and so every `Runtime.run` the route makes.
    CALLER.set(Caller(fairness_key(request), lambda: disconnected(request)))
    runtime: Runtime = request.app.state.runtime
    GZIP_FROM.set(runtime.cache if "gzip" in request.headers.get("accept-encoding", "") else None)
    return runtime


Rt = Annotated[Runtime, Depends(get_runtime)]
Service = Rt  # the name app/pages.py knows it by
ModelName = Annotated[str | None, Query(description="A name from /api/models; empty = the default model.")]


def json(body: bytes) -> Response:
    """A handler's finished bytes (the response model's `model_dump_json()`). A cached `Answer` goes to
    a client that accepts gzip in the gzip form kept with it in the cache, compressed here on the
    route's thread the first time; app/main.py's GZipMiddleware passes an encoded answer through."""
    cache = GZIP_FROM.get()
    if isinstance(body, Answer) and len(body) >= GZIP_MIN_BYTES and cache is not None:
        headers = {"content-encoding": "gzip", "vary": "Accept-Encoding"}
        return Response(cache.gzipped(body), media_type="application/json", headers=headers)
    return Response(body, media_type="application/json")
