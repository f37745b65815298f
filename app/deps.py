"""Dependencies routes declare: the one `Runtime` built by the lifespan, and the JSON answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request, Response

from .runtime import Runtime


def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


Rt = Annotated[Runtime, Depends(get_runtime)]
Service = Rt  # the name app/pages.py knows it by
ModelName = Annotated[str | None, Query(description="A name from /api/models; empty = the default model.")]


def json(body: bytes) -> Response:
    """A handler's finished bytes (the response model's `model_dump_json()`), sent as they are."""
    return Response(body, media_type="application/json")
