"""What a class sees fits the room: the open head inside its panel and the window at projector sizes,
no sideways scroll at 800 px, characters instead of bytes, a long prompt's token strip, HTML 404s,
one request per load in the position lab, badges beside the pictures rather than on them."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from urllib.parse import urlencode

import pytest

from tests.browser_conftest import api_trace, shoot

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (1366, 768), (1920, 1080)]
PAGES = ["/", "/atlas", "/position", "/cost", "/anatomy"]
# Every part of the open head a reader must see: plot area, both axes' labels and titles, colour bar.
HEAD_PARTS = {
    "plot": "#detail-heatmap .nsewdrag",
    "x ticks": "#detail-heatmap .xtick text",
    "y ticks": "#detail-heatmap .ytick text",
    "x title": "#detail-heatmap .g-xtitle",
    "y title": "#detail-heatmap .g-ytitle",
    "colour bar": "#detail-heatmap .colorbar",
    "colour bar title": "#detail-heatmap .cbtitle",
    "panel title": "#detail-title",
}


def presenter_page(pages, width: int, height: int, presenter: bool):
    """A page whose presenter mode is set the way the toggle stores it (boot.js applies it at load)."""
    page = pages(width, height)
    page.add_init_script(f"localStorage.setItem('atlas.presenter', '{1 if presenter else 0}')")
    return page


def wait_exact_head(page) -> None:
    """Until the open head is drawn from /api/head's exact values (its final drawing)."""
    page.wait_for_function(
        """() => document.querySelector('#head-scores dd') !== null
             && document.querySelector('#detail-heatmap .xtick text') !== null"""
    )
    page.wait_for_timeout(300)  # Plotly's last relayout


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_open_head_fits_its_panel_and_the_window(live_server, pages, size, presenter):
    page = presenter_page(pages, *size, presenter)
    page.goto(live_server + "/")  # no head in the URL: the page opens one by itself
    wait_exact_head(page)
    assert page.evaluate("document.documentElement.classList.contains('presenter')") == presenter
    assert page.locator("#detail-title").inner_text().startswith("Layer")
    boxes = page.evaluate(
        """(parts) => {
             const r = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
             const out = {};
             for (const [name, sel] of Object.entries(parts)) out[name] = [...document.querySelectorAll(sel)].map(r);
             out.panel = [r(document.querySelector('#detail-panel'))];
             out.scrollY = window.scrollY;
             return out;
           }""",
        HEAD_PARTS,
    )
    assert boxes.pop("scrollY") == 0
    (panel,) = boxes.pop("panel")
    w, h = size
    for name, rects in boxes.items():
        assert rects, f"{name} is not drawn"
        for left, top, right, bottom in rects:
            assert panel[0] - 0.5 <= left and right <= panel[2] + 0.5, f"{name} leaves its panel sideways"
            assert panel[1] - 0.5 <= top and bottom <= panel[3] + 0.5, f"{name} leaves its panel"
            assert 0 <= left and right <= w and 0 <= top and bottom <= h, f"{name} is outside the window"
    # The grid's labels are read whole: at 1280x720 in presenter mode "K/V head 0" over two small
    # pictures lost both ends ("/V hea") before it learnt to shorten itself.
    clipped = page.evaluate(
        """() => [...document.querySelectorAll('#head-grid .hg-group, #head-grid .hg-head, #head-grid .hg-layer')]
             .filter((e) => e.scrollWidth > e.clientWidth).map((e) => e.textContent)"""
    )
    assert clipped == []
    assert page.locator("#head-grid .hg-group").count() > 0  # the bundled model groups its K/V heads
    shoot(page, f"fit-explorer-{'presenter' if presenter else 'normal'}", full_page=False)


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_no_page_scrolls_sideways_at_800_px(live_server, pages, presenter):
    page = presenter_page(pages, 800, 900, presenter)
    for path in PAGES:
        page.goto(live_server + path)
        page.wait_for_load_state("load")
        page.wait_for_timeout(1500)  # charts and grids drawn
        assert page.evaluate("document.documentElement.scrollWidth") <= 800, path
        toggle = page.locator("#presenter-toggle").bounding_box()
        assert toggle and toggle["x"] >= 0 and toggle["x"] + toggle["width"] <= 800, path
        name = path.strip("/") or "explorer"
        shoot(page, f"fit-800-{name}-{'presenter' if presenter else 'normal'}")


def test_emoji_cjk_and_accents_show_as_characters(live_server, page):
    prompt = "café 🙂 中文"
    data = api_trace(live_server, prompt)
    assert any(t.startswith("<") for t in data["tokens"])  # the tokenizer really splits them into bytes
    page.goto(f"{live_server}/?{urlencode({'prompt': prompt, 'layer': 0, 'head': 0})}")
    page.wait_for_function("() => document.querySelector('#detail-heatmap .ytick text') !== null")
    strip = page.locator("#tokens .tok-text").all_text_contents()
    assert "🙂" in strip and "中" in strip and "文" in strip and any("é" in t for t in strip)
    assert not any("<" in t for t in strip)
    emoji = page.locator("#tokens .tok", has_text="🙂")
    assert "<F0>" in emoji.get_attribute("title")  # the bytes are one hover away
    ticks = " ".join(page.locator("#detail-heatmap .ytick text").all_text_contents())
    assert "🙂" in ticks and "中" in ticks and "<F0>" not in ticks and "&lt;" not in ticks
    # Choosing the emoji follows its last byte: there the character is complete.
    emoji.click()
    group = next(g for g in data["groups"] if g["text"] == "🙂")
    page.wait_for_url(f"**pos={group['end'] - 1}**")
    shoot(page, "fit-emoji", full_page=False)


def test_long_prompt_token_strip_is_one_tab_stop_and_keeps_the_choice_in_view(live_server, page):
    prompt = "The cat sat on the mat. " * 27
    n = api_trace(live_server, prompt)["n"]
    assert n >= 180
    page.goto(f"{live_server}/?{urlencode({'prompt': prompt})}")
    page.wait_for_function("(n) => document.querySelectorAll('#tokens .tok').length === n", arg=n)
    strip = page.locator("#tokens").bounding_box()
    assert strip["height"] < 0.2 * 720  # bounded: the heads stay on the first screen

    def visible_in_strip(index: int) -> bool:
        return page.evaluate(
            """(i) => { const s = document.querySelector('#tokens').getBoundingClientRect();
                        const b = document.querySelector(`#tokens .tok[data-i="${i}"]`).getBoundingClientRect();
                        return b.top >= s.top - 1 && b.bottom <= s.bottom + 1; }""",
            index,
        )

    assert visible_in_strip(n - 1)  # the chosen (last) token is scrolled into view
    assert page.locator("#tokens .tok[tabindex='0']").count() == 1
    # Tab from the prompt box reaches the strip once and leaves it with the next Tab.
    page.locator("#prompt").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # the class-demo menu, then the strip
    assert page.evaluate("document.activeElement.dataset.i") == str(n - 1)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('#tokens') === null")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**pos={n - 3}**")
    page.keyboard.press("Home")
    assert page.evaluate("document.activeElement.dataset.i") == "0"
    assert visible_in_strip(0)
    shoot(page, "fit-long-prompt", full_page=False)


def test_mistyped_page_address_is_an_html_page_and_api_stays_json(live_server, page):
    r = page.goto(live_server + "/atlass")
    assert r.status == 404 and "text/html" in r.headers["content-type"]
    assert "/atlass" in page.locator("h1").inner_text()
    page.locator("main a", has_text="Head atlas").click()
    page.wait_for_url("**/atlas")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(live_server + "/api/nothing", timeout=10)
    assert e.value.code == 404 and "json" in e.value.headers["content-type"]


def test_position_lab_sends_each_request_once_per_load(live_server, page):
    sent = []
    page.on("request", lambda r: sent.append(r.url.split("?")[0]) if "/api/" in r.url else None)
    page.goto(live_server + "/position")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_timeout(500)
    paths = [u[len(live_server) :] for u in sent]
    for path in ("/api/permutation", "/api/rope", "/api/word-order"):
        assert paths.count(path) == 1, paths
    # Numbers a class can read: decimals or "× 10⁻⁹", never "7.9e-1".
    text = page.locator("main").inner_text()
    assert not re.search(r"\d\.?\d*e[+-]?\d", text), re.search(r".{20}\d\.?\d*e[+-]?\d.{5}", text)


def test_role_badges_sit_outside_the_thumbnail_pictures(live_server, page):
    page.goto(live_server + "/")
    page.wait_for_selector("#head-grid .badge")
    overlaps = page.evaluate(
        """() => [...document.querySelectorAll('#head-grid .badge')].filter((b) => {
             const c = b.closest('.thumb').querySelector('canvas').getBoundingClientRect();
             const r = b.getBoundingClientRect();
             return r.left < c.right && r.right > c.left && r.top < c.bottom && r.bottom > c.top;
           }).length"""
    )
    assert overlaps == 0


def test_anatomy_says_when_the_prompt_is_empty(live_server, page):
    page.goto(live_server + "/anatomy")
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("#block-title").inner_text().startswith("Block L0")
    page.fill("#prompt", "")
    page.wait_for_function("() => !document.querySelector('#prompt-error').hidden")
    assert "empty" in page.locator("#prompt-error").inner_text()
    assert page.evaluate("document.body.classList.contains('stale')")
