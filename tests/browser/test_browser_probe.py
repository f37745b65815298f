"""Where position lives, in the browser, on the three bundled models as `make run` serves them: the
probe's curves and sentences are the API's, a model unticked and ticked again comes back without a new
request, the chart fits at 1280x720, 1366x768 and 1920x1080 and in presenter mode; and the rest of the
position lab and the lesson on the twin with no positional encoding say what it lacks."""

from __future__ import annotations

import pytest

from app.main import create_app
from app.settings import DEFAULT_MODELS, Settings
from tests.browser_conftest import get_json, shoot
from tests.servers import serve_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SLOW_MS = 240_000  # three probes, one model after another, on shared cores the first time


@pytest.fixture(scope="module")
def server():
    with serve_app(create_app(Settings())) as url:
        yield url


def open_probe(page, url: str, query: str = "") -> None:
    page.goto(f"{url}/position{query}", wait_until="commit")
    page.wait_for_selector("body[data-ready='1']", timeout=SLOW_MS)
    page.locator("#probe-panel").scroll_into_view_if_needed()  # it loads only when seen
    page.wait_for_selector("#probe-panel[data-ready='1']", timeout=SLOW_MS)


def plotted(page) -> dict:
    return page.evaluate(
        "() => { const p = document.querySelector('#probe-plot');"
        " return {names: p.data.map(t => t.name), xs: p.data.map(t => t.x), ys: p.data.map(t => t.y),"
        " order: p.layout.xaxis.categoryarray}; }"
    )


def to_top(page) -> None:
    page.evaluate("() => document.getElementById('probe-panel').scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)


def assert_fits(page, what: str) -> None:
    to_top(page)
    box = page.locator("#probe-plot").bounding_box()
    width = page.viewport_size["width"]
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"{what}: the chart leaves the screen"
    assert box["height"] <= page.viewport_size["height"], f"{what}: the chart is taller than the screen"
    page.locator("#probe-plot").scroll_into_view_if_needed()
    box = page.locator("#probe-plot").bounding_box()
    bottom = box["y"] + box["height"]
    assert box["y"] >= 0 and bottom <= page.viewport_size["height"], f"{what}: cut at the bottom"
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), what
    title = page.locator("#probe-plot .ytitle").bounding_box()  # rotated: its height is the text's length
    assert title["y"] >= box["y"] and title["y"] + title["height"] <= bottom, f"{what}: the axis title is cut"
    legend = page.locator("#probe-plot .legend").bounding_box()
    assert legend["x"] + legend["width"] <= width, f"{what}: the legend is cut off"


def test_probe_draws_every_bundled_model_and_keeps_them_when_untucked(server, pages):
    page = pages(1280, 720)
    asked = []
    page.on("request", lambda r: asked.append(r.url) if r.url.endswith("/api/position/probe") else None)
    open_probe(page, server)
    answers = [get_json(server + "/api/position/probe", {"model": m}) for m in DEFAULT_MODELS]
    plot = plotted(page)
    suffix = {"rope": "RoPE", "learned": "learned positions", "none": "no positional encoding"}
    assert plot["names"] == [f"{a['model']} ({suffix[a['positional']]}), {mask}"
                             for a in answers for mask in ("causal mask on", "mask off")]  # fmt: skip
    assert plot["ys"] == [[p["r2"] for p in a[k]] for a in answers for k in ("causal", "no_mask")]
    # The axis follows the stream, not the order the answers arrived in.
    assert plot["order"][:2] == ["token embeddings", "embeddings + position vectors"]
    sentences = page.locator("#probe-sentences p").all_text_contents()
    assert sentences == [f"{a['model']} ({suffix[a['positional']]}): {a['sentence']}" for a in answers]
    nope = answers[2]
    best = max(nope["causal"], key=lambda p: p["r2"])
    assert f"R² {best['r2']:.2f}" in sentences[2] and "came from the mask" in sentences[2]
    assert len(asked) == 3
    assert_fits(page, "1280x720")
    shoot(page, "position-probe-1280", full_page=False)

    # The next step: untick the GPT-2-style twin, then tick it again. Its answer is kept in the page.
    page.locator("#probe-models input[value='classroom-gpt2']").uncheck()
    page.wait_for_function("() => document.querySelector('#probe-plot').data.length === 4")
    assert "classroom-gpt2" not in " ".join(plotted(page)["names"])
    assert page.locator("#probe-sentences p").count() == 2
    page.locator("#probe-models input[value='classroom-gpt2']").check()
    page.wait_for_function("() => document.querySelector('#probe-plot').data.length === 6")
    assert plotted(page)["names"][2].startswith("classroom-gpt2")  # back in the served order ...
    assert len(asked) == 3  # ... without asking the server again
    page.locator("#probe-table summary").click()
    rows = page.locator("#probe-table tbody tr")
    assert rows.count() == len(plot["order"]) and "R² " in rows.first.text_content()


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (1920, 1080)])
def test_probe_fits_the_screen_and_presenter_mode(server, pages, width, height):
    page = pages(width, height)
    open_probe(page, server)
    assert_fits(page, f"{width}x{height}")
    shoot(page, f"position-probe-{width}", full_page=False)
    before = page.locator("#probe-plot").bounding_box()["height"]
    page.locator("#presenter-toggle").click()
    page.wait_for_function("() => document.documentElement.classList.contains('presenter')")
    page.locator("#probe-panel").scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('#probe-plot').data.length === 6")
    page.wait_for_timeout(500)
    assert page.locator("#probe-plot").bounding_box()["height"] > before
    assert_fits(page, f"{width}x{height} presenter")
    shoot(page, f"position-probe-{width}-presenter", full_page=False)


def test_the_lab_on_the_twin_with_no_positional_encoding(server, pages):
    page = pages(1366, 768)
    page.goto(f"{server}/position?model=classroom-nope", wait_until="commit")
    page.wait_for_selector("body[data-ready='1']", timeout=SLOW_MS)
    assert page.locator("#rope-title").text_content() == "No positional encoding: no clock and no table"
    assert page.locator("#rope-body").is_hidden() and page.locator("#learned-body").is_hidden()
    assert "causal mask is its only source of order" in page.locator("#rope-message").text_content()
    assert page.locator("#perm-on .positional").text_content() == "no positional encoding"
    page.locator("#stretch-panel").scroll_into_view_if_needed()
    page.wait_for_selector("#stretch-panel[data-ready='1']", timeout=SLOW_MS)
    title = page.locator("#stretch-title").text_content()
    assert title == "Past the training length: no positions to stretch"
    assert page.locator("#stretch-plot").is_hidden() and page.locator("#stretch-table").is_hidden()
    page.locator("#rope-panel").scroll_into_view_if_needed()
    shoot(page, "position-nope", full_page=False)
    # The lesson's RoPE step on it: no clock to draw, and it says so.
    page.goto(f"{server}/lesson?step=6&model=classroom-nope")
    page.wait_for_function(
        "() => document.getElementById('lesson-title').textContent.startsWith('No positional encoding')",
        timeout=SLOW_MS,
    )
    assert "only source of order" in page.locator("#lesson-lead").text_content()
    page.keyboard.press("ArrowLeft")  # the shuffle step before it: "position on" has nothing to turn on
    page.wait_for_function(
        "() => document.getElementById('lesson-lead').textContent.includes('no position information to turn on')",
        timeout=SLOW_MS,
    )
    assert "only the causal mask can tell them apart" in page.locator("#lesson-lead").text_content()
    shoot(page, "lesson-position-nope", full_page=False)
