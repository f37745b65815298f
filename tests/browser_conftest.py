"""Fixtures for browser tests of any page: a real server and headless Debian Chromium.

Loaded for every test module through `pytest_plugins` in tests/conftest.py. A page's tests use:

    @pytest.mark.browser
    def test_atlas_lists_heads(live_server, page):
        page.goto(live_server + "/atlas")
        ...
        shoot(page, "atlas")                 # tests/screenshots/atlas-1280x720.png

- `live_server`: base URL of `python -m app` on a free port, started once per session, serving the
  bundled model (or the folder in ATLAS_TEST_MODEL, e.g. while the bundled model is being trained).
  `serve([...models], log)` starts another server, e.g. with several models. ATLAS_TEST_URL points
  the tests at a server that is already running instead.
- `browser`: one Chromium per session (never `playwright install`: the Debian binary is used).
- `page`: a fresh context at 1280x720 in which every request outside 127.0.0.1 is aborted (the app
  must work offline) and recorded in `page.blocked`; uncaught JavaScript errors are collected in
  `page.js_errors` and fail the test at teardown.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 120
PAGE_TIMEOUT_MS = 60_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"the app exited with code {proc.returncode} before serving:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url + "/api/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    proc.kill()
    pytest.fail(f"the app did not answer within {SERVER_START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@contextmanager
def serve(models: list[str], log: Path) -> Iterator[str]:
    """`python -m app --model M ...` on a free port until the block ends; yields the base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [a for m in models for a in ("--model", m)]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", *args, "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_up(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def live_server(tmp_path_factory) -> Iterator[str]:
    if os.environ.get("ATLAS_TEST_URL"):  # a server you already run: quicker edit-test cycles
        yield os.environ["ATLAS_TEST_URL"].rstrip("/")
        return
    model = os.environ.get("ATLAS_TEST_MODEL", "classroom")
    with serve([model], tmp_path_factory.mktemp("server") / "server.log") as url:
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
def page(browser):
    p = new_page(browser)
    yield p
    errors = list(p.js_errors)
    p.context.close()
    assert not errors, f"uncaught JavaScript errors: {errors}"


def shoot(page, name: str, full_page: bool = True) -> Path:
    """Write tests/screenshots/<name>-<w>x<h>.png (gitignored) for a person to look at."""
    SCREENSHOTS.mkdir(exist_ok=True)
    vp = page.viewport_size
    path = SCREENSHOTS / f"{name}-{vp['width']}x{vp['height']}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
