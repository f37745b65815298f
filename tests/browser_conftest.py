"""Fixtures for browser tests of any page: a real server and headless Debian Chromium.

Loaded for every test module through `pytest_plugins` in tests/conftest.py. A page's tests use:

    @pytest.mark.browser
    def test_atlas_lists_heads(live_server, page):
        page.goto(live_server + "/atlas")
        ...
        shoot(page, "atlas")                 # <screenshots>/atlas-1280x720.png

- `live_server`: base URL of `python -m app` on a free port, started once per session and shared by
  every test, serving the bundled model (or the folder in ATLAS_TEST_MODEL, e.g. while the bundled
  model is being trained). ATLAS_TEST_URL points the tests at a server that is already running instead.
  Servers of other models: `tests/servers.py`.
- `browser`: one Chromium per session (never `playwright install`: the Debian binary is used). Every
  test that drives a browser goes through it: a second `sync_playwright()` in the same process fails.
- `page`: a fresh context at 1280x720 in which every request outside 127.0.0.1 is aborted (the app
  must work offline) and recorded in `page.blocked`; uncaught JavaScript errors are collected in
  `page.js_errors` and fail the test at teardown. `pages(width, height)` makes more, closed and
  checked the same way.
- `shoot(page, name)`: a PNG for a person to look at, written outside the source tree: to
  $ATLAS_SCREENSHOTS, or <tmp>/attention-atlas-screenshots; the folder is printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.servers import CHROMIUM, CHROMIUM_ARGS, serve_models

PAGE_TIMEOUT_MS = 60_000


def screenshots_dir() -> Path:
    return Path(
        os.environ.get("ATLAS_SCREENSHOTS") or Path(tempfile.gettempdir()) / "attention-atlas-screenshots"
    )


@pytest.fixture(scope="session")
def live_server(tmp_path_factory) -> Iterator[str]:
    if os.environ.get("ATLAS_TEST_URL"):  # a server you already run: quicker edit-test cycles
        yield os.environ["ATLAS_TEST_URL"].rstrip("/")
        return
    model = os.environ.get("ATLAS_TEST_MODEL", "classroom")
    with serve_models([model], tmp_path_factory.mktemp("server") / "server.log") as url:
        yield url


@pytest.fixture(scope="session")
def models_info(live_server) -> dict:
    with urllib.request.urlopen(live_server + "/api/models", timeout=10) as r:
        return json.load(r)


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make chromium` installs Debian's chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme not in ("http", "https", "ws", "wss") or parts.hostname == "127.0.0.1"


def new_page(browser, width: int = 1280, height: int = 720, block_external: bool = True):
    """A page in its own context (own storage), with external requests blocked and JS errors recorded."""
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    # Generous: the machine is shared with training jobs, and a loaded CPU makes everything slower.
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    page = context.new_page()
    page.blocked = []
    page.js_errors = []
    if block_external:

        def route(r):
            if is_local(r.request.url):
                r.continue_()
            else:
                page.blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
    page.on("pageerror", lambda e: page.js_errors.append(str(e)))
    return page


@pytest.fixture
def pages(browser):
    """`pages(width=1280, height=720)` -> a new page; all are closed, and their JS errors fail the test."""
    made = []

    def make(width: int = 1280, height: int = 720, **kw):
        made.append(new_page(browser, width, height, **kw))
        return made[-1]

    yield make
    errors = [e for p in made for e in p.js_errors]
    for p in made:
        p.context.close()
    assert not errors, f"uncaught JavaScript errors: {errors}"


@pytest.fixture
def page(pages):
    return pages()


_shot_count = 0


def get_json(url: str, body: dict | None = None) -> dict:
    """GET `url`, or POST `body` as JSON: what a test reads from the API next to the page."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def api_trace(base: str, prompt: str) -> dict:
    return get_json(base + "/api/trace", {"prompt": prompt})


def history_step(page, delta: int = -1) -> None:
    """The browser's Back (-1) or Forward (+1) button: the page's own `history.go(delta)`, then wait until
    the address has changed (so two Backs are two steps, as a person clicks them).

    Not `page.go_back()`: three times in CI (Chromium 156, Playwright 1.65) the driver call after it
    stopped answering, once past its own 60 s timeout until pytest-timeout's 300 s, while the page had
    already stepped back; the page's own traversal fires the same popstate the button does."""
    before = page.evaluate("() => location.href")
    page.evaluate("(d) => history.go(d)", delta)
    page.wait_for_function("(u) => location.href !== u", arg=before, polling=100)


def shoot(page, name: str, full_page: bool = True) -> Path:
    """Write <screenshots>/<name>-<w>x<h>.png for a person to look at (never into the source tree)."""
    global _shot_count
    folder = screenshots_dir()
    folder.mkdir(parents=True, exist_ok=True)
    vp = page.viewport_size
    path = folder / f"{name}-{vp['width']}x{vp['height']}.png"
    page.screenshot(path=str(path), full_page=full_page)
    _shot_count += 1
    return path


def pytest_terminal_summary(terminalreporter):
    if _shot_count:
        terminalreporter.write_line(f"{_shot_count} screenshots in {screenshots_dir()}")
