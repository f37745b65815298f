"""Security: a Content-Security-Policy that lets only our own script files run (checked by meaning, and
enforced by a real Chromium), pages whose scripts are all same-origin files, and a server that listens
on the loopback address unless told otherwise (the loud warning for other hosts is in test_app_cli.py).
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest

from app.middleware import CSP
from app.pages import PAGES
from tests.api_helpers import client_for, save_tiny
from tests.servers import run_app

ROOT = Path(__file__).resolve().parents[2]
UNSAFE_SCRIPT_SOURCES = ("'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "'strict-dynamic'", "*",
                         "data:", "blob:", "http:", "https:", "'wasm-unsafe-eval'")  # fmt: skip


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with client_for(save_tiny(tmp_path_factory.mktemp("sec") / "tiny")) as c:
        yield c


def directives(csp: str) -> dict[str, list[str]]:
    out = {}
    for part in csp.split(";"):
        words = part.split()
        if words:
            out[words[0].lower()] = words[1:]
    return out


def script_sources(d: dict[str, list[str]]) -> list[str]:
    """What may run as script: script-src, or default-src when script-src is absent (CSP fallback)."""
    return d.get("script-src", d.get("default-src", ["*"]))


def test_security_csp_allows_only_same_origin_scripts(client):
    responses = [client.get(p.path) for p in PAGES]
    responses += [
        client.get("/api/models"),
        client.get("/docs"),
        client.post("/api/trace", json={"prompt": ""}),
    ]
    responses += [client.get("/static/js/lib/api.js"), client.get("/no-such-page")]
    for r in responses:
        d = directives(r.headers["content-security-policy"])
        where = f"{r.request.method} {r.request.url.path}"
        assert r.headers["content-security-policy"] == CSP, where  # one policy, set by the middleware
        assert r.headers["x-content-type-options"] == "nosniff", where
        assert script_sources(d) == ["'self'"], where
        assert not set(script_sources(d)) & set(UNSAFE_SCRIPT_SOURCES), where
        for attr in ("script-src-attr", "script-src-elem"):  # if present, they must not loosen script-src
            assert d.get(attr, ["'self'"]) in (["'self'"], ["'none'"]), where
        assert d.get("default-src") == ["'self'"], where  # fetches, fonts, frames: our origin only
        assert d.get("object-src") == ["'none'"], where  # no plugins
        assert d.get("base-uri") in (["'none'"], ["'self'"]), where  # no <base> hijacking of script URLs
        assert d.get("frame-ancestors") == ["'none'"], where  # no clickjacking frames


class ScriptsAndHandlers(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict] = []
        self.handlers: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.handlers += [f"<{tag} {k}>" for k in attrs if k.lower().startswith("on")]
        if tag == "script":
            self.scripts.append({"src": attrs.get("src"), "text": ""})
            self._in_script = True

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1]["text"] += data


def test_security_pages_run_only_our_script_files(client):
    for path in (p.path for p in PAGES):
        parsed = ScriptsAndHandlers()
        parsed.feed(client.get(path).text)
        assert parsed.scripts, path
        for s in parsed.scripts:
            assert s["src"] and s["src"].startswith("/static/"), (path, s)  # a file we serve, not a CDN
            assert client.get(s["src"]).status_code == 200, (path, s["src"])
            assert not s["text"].strip(), (path, "inline script", s["text"][:80])
        assert parsed.handlers == [], (path, parsed.handlers)


def test_security_markup_in_the_url_is_not_echoed_into_pages(client):
    payload = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'>"
    for path in (p.path for p in PAGES):
        html = client.get(f"{path}?prompt={quote(payload)}&model={quote(payload)}").text
        assert "<script>alert(1)" not in html and "onerror=alert(2)" not in html, path


def listening_addresses(port: int) -> set[str]:
    """Local addresses of sockets listening on `port`, from /proc/net/tcp{,6} (hex, little-endian IPv4)."""
    found = set()
    for name in ("tcp", "tcp6"):
        table = Path(f"/proc/net/{name}")
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            addr, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                if len(addr) == 8:
                    found.add(".".join(str(int(addr[i : i + 2], 16)) for i in (6, 4, 2, 0)))
                else:
                    found.add(f"ipv6:{addr}")
    return found


@pytest.mark.slow
def test_security_default_bind_is_loopback_only(tmp_path):
    """`python -m app` without --host really listens on 127.0.0.1 only, not on every interface."""
    folder = save_tiny(tmp_path / "tiny")
    with run_app(["--model", str(folder)], tmp_path / "server.log") as server:
        assert listening_addresses(server.port) == {"127.0.0.1"}
    assert "WARNING" not in server.output()  # the public-address warning is for other hosts only


@pytest.mark.browser
def test_security_chromium_refuses_injected_inline_and_foreign_scripts(live_server, page):
    """If markup ever reached the DOM, the CSP would still stop it: inline scripts, inline handlers and
    scripts from other origins are all refused by the browser on our pages."""
    page.goto(live_server + "/")
    page.wait_for_selector("#head-grid[data-seq]")
    result = page.evaluate(
        """async () => {
          const violations = [];
          document.addEventListener("securitypolicyviolation", (e) => violations.push(e.violatedDirective));
          const inline = document.createElement("script");
          inline.textContent = "window.__inline = 1";
          document.body.appendChild(inline);
          const img = document.createElement("img");
          img.setAttribute("onerror", "window.__handler = 1");
          img.src = "/static/no-such-image.png";
          document.body.appendChild(img);
          const foreign = document.createElement("script");
          foreign.src = "http://127.0.0.2:9/evil.js";
          document.body.appendChild(foreign);
          // Each refusal is reported by an event; the timeout only bounds a failing run.
          await new Promise((r) => {
            const enough = () => violations.length >= 3 && r();
            document.addEventListener("securitypolicyviolation", () => setTimeout(enough));
            enough();
            setTimeout(r, 10000);
          });
          return { inline: window.__inline ?? null, handler: window.__handler ?? null, violations };
        }"""
    )
    assert result["inline"] is None and result["handler"] is None
    assert len(result["violations"]) >= 3 and all(v.startswith("script-src") for v in result["violations"])
