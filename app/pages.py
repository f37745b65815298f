"""HTML pages: Jinja2 templates from `templates/`, static files from `static/`.

Each page is one line in PAGES (path -> template). Templates get the loaded models and the limits,
so the first paint needs no fetch; user data never goes into inline scripts.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from .deps import Service
from .vendor import plotly_src

ROOT = Path(__file__).resolve().parent.parent
templates = Jinja2Templates(directory=ROOT / "templates")
templates.env.globals["plotly_src"] = plotly_src()  # every page loads Plotly from here

PAGES = {
    "/": "index.html",
    "/atlas": "atlas.html",
    "/position": "position.html",
    "/cost": "cost.html",
    "/anatomy": "anatomy.html",
}

router = APIRouter(include_in_schema=False)


def page_route(template: str):
    def render(request: Request, service: Service) -> HTMLResponse:
        info = service.models_info()
        context = {"page": template.removesuffix(".html"), **info}
        return templates.TemplateResponse(request, template, context)

    return render


for path, template in PAGES.items():
    router.add_api_route(path, page_route(template), methods=["GET"], response_class=HTMLResponse)


def mount_static(app: FastAPI) -> None:
    """Last, after every route: the mount would otherwise shadow /static/vendor/* routes."""
    app.mount("/static", StaticFiles(directory=ROOT / "static", check_dir=False), name="static")
