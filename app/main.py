"""`create_app()`: the FastAPI application. Models load once in the lifespan into one `Runtime`.

To add an area: write `app/<area>/` (router.py, schemas.py, handler.py) and add it to AREAS below.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
import torch
from fastapi import FastAPI
from fastapi.middleware.gzip import GZipMiddleware

from model import LanguageModel

from . import errors, pages, vendor
from .anatomy import router as anatomy
from .cost import router as cost
from .deps import get_runtime
from .heads import router as heads
from .middleware import BodyLimit, HostCheck, SecurityHeaders, SendInSlices, is_loopback
from .position import router as position
from .runtime import GZIP_LEVEL, GZIP_MIN_BYTES, Runtime
from .score import router as score
from .settings import Settings, get_settings
from .trace import router as trace

__all__ = ["create_app", "get_runtime"]
AREAS = (trace, heads, position, cost, anatomy, score)

log = logging.getLogger("uvicorn.error")


def create_app(settings: Settings | None = None, loaded: dict[str, LanguageModel] | None = None) -> FastAPI:
    """The app for `settings`; `loaded` (spec -> model) are models the caller has already loaded."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.torch_threads:
            torch.set_num_threads(settings.torch_threads)
        # Plain `def` routes run on anyio's threads (40 by default): one per waiting model job, and the
        # rest for pages, so a full queue never leaves a page without a thread.
        anyio.to_thread.current_default_thread_limiter().total_tokens = (
            settings.max_waiting + settings.page_threads
        )
        app.state.runtime = Runtime.load(settings, loaded)
        names = ", ".join(app.state.runtime.models)
        log.info("Attention Atlas (pid %d) serving: %s", os.getpid(), names)
        yield
        app.state.runtime.close()

    app = FastAPI(
        title="Attention Atlas API",
        summary="Look inside a small GPT: attention of every head, residual stream, predictions, experiments.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served by app/vendor.py from local Swagger UI files, never a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    errors.install(app, pages.not_found_page)

    for area in AREAS:
        app.include_router(area.router)
    app.include_router(pages.router)
    app.include_router(vendor.router)
    pages.mount_static(app)  # keep last

    # Starlette runs the last-added middleware first: answers leave in slices (outermost, so it slices
    # what gzip made), the security headers wrap every answer (the 400s and 413s of the checks below
    # included; a 500 adds them itself, see errors.internal_error), a foreign Host is refused next, and
    # oversized bodies are refused before anything reads them.
    # Answers that are not cached (pages, timings) are compressed here; cached ones carry their own gzip.
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES, compresslevel=GZIP_LEVEL)
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
    if settings.host is not None and is_loopback(settings.host):
        app.add_middleware(HostCheck, host=settings.host)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(SendInSlices)
    return app
