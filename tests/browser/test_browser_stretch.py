"""RoPE stretched in the position lab, and memory measured in the cost lab, in the browser: the curves,
the training-length line and the numbers come from the API; screenshots at a projector's 1366x768."""

from __future__ import annotations

import pytest

from app.main import create_app
from app.settings import Settings
from tests.api_helpers import save_tiny
from tests.browser_conftest import get_json, shoot
from tests.servers import serve_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SLOW_MS = 300_000  # the first computation reads 4 x the context at three scales on shared cores


def open_stretch(page, url: str) -> None:
    page.goto(f"{url}/position", wait_until="commit")
    page.wait_for_selector("body[data-ready='1']", timeout=240_000)
    page.locator("#stretch-panel").scroll_into_view_if_needed()  # it loads only when seen
    page.wait_for_selector("#stretch-panel[data-ready='1']", timeout=SLOW_MS)


def test_position_lab_draws_the_stretching_curves(live_server, pages):
    page = pages(1366, 768)
    open_stretch(page, live_server)
    data = get_json(live_server + "/api/rope/stretch", {})  # the same request: answered from the memo
    assert data["applies"]
    plot = page.evaluate(
        "() => { const p = document.querySelector('#stretch-plot');"
        " return {names: p.data.map(t => t.name), ys: p.data.map(t => t.y), shapes: p.layout.shapes.map(s => s.x0)}; }"
    )
    assert plot["names"] == [
        "no scaling" if c["scale"] == 1 else f"interpolation ÷{c['scale']:g}" for c in data["curves"]
    ]
    assert plot["ys"] == [c["bins"] for c in data["curves"]]
    assert plot["shapes"][0] == data["context_length"]  # the training length is marked
    assert page.locator("#stretch-sentence").text_content() == data["sentence"]
    assert f"{data['curves'][0]['inside']:.2f}" in data["sentence"]
    shoot(page, "position-stretch", full_page=False)
    page.locator("#presenter-toggle").click()
    page.wait_for_function("() => document.documentElement.classList.contains('presenter')")
    page.locator("#stretch-panel").scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    assert page.evaluate("() => document.querySelector('#stretch-plot').data.length") == len(data["curves"])
    shoot(page, "position-stretch-presenter", full_page=False)


def test_learned_positions_show_why_there_is_nothing_to_stretch(pages, tmp_path):
    folder = save_tiny(tmp_path / "tinygpt", arch="gpt2")
    with serve_app(create_app(Settings(models=[str(folder)]))) as url:
        page = pages(1366, 768)
        open_stretch(page, url)
        assert page.locator("#stretch-plot").is_hidden()
        bar = page.locator("#stretch-table .none")
        assert "no row" in bar.text_content()
        assert "has no row in that table" in page.locator("#stretch-message").text_content()
        shoot(page, "position-stretch-gpt2", full_page=False)


def test_cost_lab_measures_memory_next_to_the_timing(live_server, pages):
    page = pages(1366, 768)
    page.goto(f"{live_server}/cost", wait_until="commit")
    page.wait_for_selector("body[data-ready='1']", timeout=240_000)
    page.locator("#presenter-toggle").click()
    page.wait_for_function("() => document.documentElement.classList.contains('presenter')")
    page.select_option("#timing-max", "1024")
    page.locator("#measure-memory").scroll_into_view_if_needed()
    page.locator("#measure-memory").click()
    page.wait_for_selector("#memory-table:not([hidden])", timeout=SLOW_MS)
    rows = page.locator("#memory-table tbody tr")
    assert rows.count() == 5  # 64 .. 1024
    assert rows.nth(4).locator("td").first.text_content() == "1,024"
    plot = page.evaluate("() => document.querySelector('#memory-plot').data.map(t => t.y)")
    explicit, fused, predicted = plot
    assert explicit[-1] / explicit[-2] > 3 and fused[-1] < predicted[-1] / 4  # n² against n, measured
    assert "fused kernel" in page.locator("#memory-sentence").text_content()
    assert "VmHWM" in page.locator("#memory-status").text_content()
    page.locator("#memory-panel").scroll_into_view_if_needed()
    shoot(page, "cost-memory-presenter", full_page=False)
