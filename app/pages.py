"""HTML pages: Jinja2 templates from `templates/`, static files from `static/`.

Each page is one line in PAGES: its path, its template and its name in the nav, which base.html draws
from this same list (a new lab adds one line here). Its controller lives in static/js/pages/ and is
loaded by its template. Templates get the loaded models and the limits, so the first paint needs no
fetch; user data never goes into inline scripts.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from labs.presets import PRESETS

from .deps import Service
from .vendor import plotly_src

ROOT = Path(__file__).resolve().parent.parent
templates = Jinja2Templates(directory=ROOT / "templates")
templates.env.globals["plotly_src"] = plotly_src()  # every page loads Plotly from here


class Page(NamedTuple):
    path: str
    template: str
    label: str  # the link's text in the nav


PAGES = (
    Page("/", "index.html", "Explorer"),
    Page("/lesson", "lesson.html", "Lesson"),
    Page("/atlas", "atlas.html", "Head atlas"),
    Page("/position", "position.html", "Position lab"),
    Page("/cost", "cost.html", "Cost lab"),
    Page("/anatomy", "anatomy.html", "Anatomy"),
)
templates.env.globals["nav"] = [(p.path, p.label) for p in PAGES]
templates.env.globals["presets"] = PRESETS  # the explorer's class demos (labs/presets.py)

router = APIRouter(include_in_schema=False)


def page_route(template: str):
    def render(request: Request, service: Service) -> HTMLResponse:
        info = service.models_info()
        context = {"page": template.removesuffix(".html"), **info}
        return templates.TemplateResponse(request, template, context)

    return render


for p in PAGES:
    router.add_api_route(p.path, page_route(p.template), methods=["GET", "HEAD"], response_class=HTMLResponse)


# Paths a program calls: their 404 stays JSON ({"detail": ...}); any other path is a page someone typed.
NOT_PAGES = ("/api/", "/static/", "/docs", "/openapi.json", "/redoc")


def not_found_page(request: Request) -> HTMLResponse | None:
    """The HTML 404 for a mistyped page address (with the nav, so the reader can go on), or None for
    an API or static path, whose callers read JSON."""
    path = request.url.path
    if request.method not in ("GET", "HEAD") or path.startswith(NOT_PAGES):
        return None
    context = {"page": "not-found", "path": path}
    return templates.TemplateResponse(request, "404.html", context, status_code=404)


def mount_static(app: FastAPI) -> None:
    """Last, after every route: the mount would otherwise shadow /static/vendor/* routes."""
    app.mount("/static", StaticFiles(directory=ROOT / "static", check_dir=False), name="static")
