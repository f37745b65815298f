"""Pages, static files, local Plotly and Swagger UI, and the security headers that keep them same-origin."""

from __future__ import annotations

import re

import pytest

from app.vendor import package_dir, plotly_file, plotly_src, plotly_version
from tests.api_helpers import client_for, save_tiny


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("m") / "tiny")


@pytest.fixture(scope="module")
def client(folder):
    with client_for(folder) as c:
        yield c


def test_index_page_renders_with_models_and_plotly(client):
    """Scripts, inline code and the security headers of every page: tests/api/test_security.py."""
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert plotly_src() in r.text and "tiny" in r.text


def test_plotly_is_served_from_the_pip_package(client):
    assert re.fullmatch(r"\d+\.\d+\.\d+", plotly_version())
    assert plotly_src() == f"/static/vendor/plotly-{plotly_version()}.min.js"
    r = client.get(plotly_src())
    assert r.status_code == 200 and r.content == plotly_file().read_bytes()
    assert r.headers["content-type"].startswith("text/javascript")
    assert "immutable" in r.headers["cache-control"]


def test_static_files_are_served(client):
    r = client.get("/static/js/lib/api.js")
    assert r.status_code == 200 and "export" in r.text
    assert client.get("/static/js/no-such-file.js").status_code == 404


def test_docs_use_local_swagger_ui_and_the_schema_has_examples(client):
    html = client.get("/docs").text
    assert "http://" not in html and "https://" not in html
    for src in re.findall(r'(?:src|href)="([^"]+)"', html):
        r = client.get(src)
        assert r.status_code == 200 and len(r.content) > 100, src
    assert (
        client.get("/static/vendor/swagger-ui/swagger-ui-bundle.js").content
        == (package_dir("swagger_ui") / "static" / "swagger-ui-bundle.js").read_bytes()
    )
    spec = client.get("/openapi.json").json()
    for path in ("/api/models", "/api/trace", "/api/head", "/api/lens", "/api/ablation"):
        assert path in spec["paths"]
    schemas = spec["components"]["schemas"]
    for name in ("TraceRequest", "HeadRequest", "LensRequest", "AblationRequest"):
        assert schemas[name]["examples"], name
        assert schemas[name]["additionalProperties"] is False
    for example in schemas["TraceRequest"]["examples"]:  # the examples themselves are valid requests
        assert client.post("/api/trace", json=example).status_code == 200


@pytest.mark.browser
def test_docs_and_plotly_work_under_the_csp_in_chromium(live_server, page):
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"{live_server}/docs", wait_until="domcontentloaded")
    page.wait_for_selector(".opblock")
    assert page.locator(".opblock").count() >= 4
    # Plotly on our own /docs page (not a lab page that may load it lazily): same CSP, same file.
    page.add_script_tag(url=plotly_src())
    page.wait_for_function("() => window.Plotly !== undefined")
    page.evaluate("""() => { const d = document.createElement('div'); d.id = 'csp-probe';
        document.body.appendChild(d);
        return Plotly.newPlot(d, [{type: 'heatmap', z: [[0, 1], [1, 0]], zmin: 0, zmax: 1}]); }""")
    assert page.locator("#csp-probe .main-svg").count() > 0
    assert not violations, violations


def test_every_page_has_the_nav_of_every_page_and_marks_its_own(client):
    from app.pages import PAGES

    for here in PAGES:
        html = client.get(here.path).text
        nav = html[html.index('<nav class="nav"') : html.index("</nav>")]
        for p in PAGES:
            current = ' aria-current="page"' if p is here else ""
            assert f'<a href="{p.path}"{current}>{p.label}</a>' in nav, (here.path, p.path)
