"""Third-party browser files served from the pip packages that ship them: no CDN, no copies in git.

Plotly's bundle comes from the `plotly` package, Swagger UI (for /docs) from `swagger-ui-py`. URLs carry
the version, so browsers may cache them forever. Only the files named here can be fetched.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response

FOREVER = {"Cache-Control": "public, max-age=31536000, immutable"}


def package_dir(name: str) -> Path:
    spec = find_spec(name)  # locate without importing: plotly's import alone takes ~0.1 s
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the {name!r} package is not installed; run `make venv`")
    return Path(next(iter(spec.submodule_search_locations)))


@lru_cache
def plotly_file() -> Path:
    return package_dir("plotly") / "package_data" / "plotly.min.js"


@lru_cache
def plotly_version() -> str:
    with plotly_file().open() as f:
        head = f.read(200)
    m = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", head)
    if not m:
        raise RuntimeError(f"cannot read the plotly.js version from {plotly_file()}")
    return m.group(1)


def plotly_src() -> str:
    return f"/static/vendor/plotly-{plotly_version()}.min.js"


SWAGGER_FILES = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css"}

# No inline script: the page's CSP allows same-origin scripts only, so the initialiser is a file too.
DOCS_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Attention Atlas API</title>
<link rel="stylesheet" href="/static/vendor/swagger-ui/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/static/vendor/swagger-ui/swagger-ui-bundle.js"></script>
<script src="/static/vendor/swagger-ui/init.js"></script></body></html>
"""
DOCS_INIT = """window.ui = SwaggerUIBundle({
  url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis], layout: "BaseLayout",
});
"""

router = APIRouter(include_in_schema=False)


@router.get("/static/vendor/plotly-{version}.min.js")
def plotly_js(version: str) -> FileResponse:
    if version != plotly_version():
        raise HTTPException(404, f"this server has plotly.js {plotly_version()}, at {plotly_src()}")
    return FileResponse(plotly_file(), media_type="text/javascript", headers=FOREVER)


@router.get("/docs")
def docs() -> HTMLResponse:
    return HTMLResponse(DOCS_HTML)


@router.get("/static/vendor/swagger-ui/init.js")
def docs_init() -> Response:
    return Response(DOCS_INIT, media_type="text/javascript")


@router.get("/static/vendor/swagger-ui/{name}")
def swagger_file(name: str) -> FileResponse:
    if name not in SWAGGER_FILES:
        raise HTTPException(404, f"no such Swagger UI file: {name}")
    return FileResponse(package_dir("swagger_ui") / "static" / name, media_type=SWAGGER_FILES[name])
