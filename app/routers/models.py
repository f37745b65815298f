"""GET /api/models: what is loaded, its architecture and parameter census, and the limits in force."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import Service
from ..schemas import ModelsResponse

router = APIRouter(tags=["models"])


@router.get("/api/models", response_model=ModelsResponse, summary="Loaded models and limits")
def models(service: Service) -> dict:
    """Every loaded model (the first is the default) with its architecture and parameter census by
    part, and the limits every request must respect."""
    return service.models_info()
