"""Dependencies routes declare: the one `ModelService` built by the lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from .service import ModelService


def get_service(request: Request) -> ModelService:
    return request.app.state.service


Service = Annotated[ModelService, Depends(get_service)]
