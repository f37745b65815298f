"""Detail on demand in the explorer: the grid and the open head are drawn from a keystroke's thumbnails,
the open head's exact matrix replaces the preview when /api/head answers, the logit lens is fetched
when its panel comes on screen, and typing again brings every open view to the new prompt."""

from __future__ import annotations

import json

import pytest

from tests.browser.test_browser_explorer import open_explorer, see_lens, wait_tokens
from tests.browser_conftest import api_trace, get_json, shoot

pytestmark = pytest.mark.browser

# More than 48 tokens, so the thumbnails are max-pooled and the open head starts as a preview.
LONG = "Once upon a time there was a little girl called Lily. She had a red ball and a small dog. " * 3
SHORT = "The dog bites the man. The man bites the dog."
MORE = " Lily had a red ball."


def precision(page) -> str:
    return page.locator("#detail-precision").get_attribute("data-precision") or ""


def shown_matrix(page) -> list[list[float | None]]:
    return page.evaluate("() => document.querySelector('#detail-heatmap').data[0].z")


def assert_exact(page, base: str, prompt: str, layer: int, head: int) -> None:
    want = get_json(base + "/api/head", {"prompt": prompt, "layer": layer, "head": head})["pattern"]
    z = shown_matrix(page)
    assert len(z) == len(want)
    worst = max(
        abs(a - b)
        for zr, wr in zip(z, want, strict=True)
        for a, b in zip(zr, wr, strict=False)
        if a is not None
    )
    assert worst < 1e-4


def test_open_head_shows_the_preview_then_the_exact_matrix(live_server, page):
    held = []  # /api/head requests, answered only when the test lets them through
    body = api_trace(live_server, LONG)
    assert body["thumbnails"]["block"] > 1
    page.route("**/api/head", lambda route: held.append(route))
    open_explorer(page, live_server, prompt=LONG, layer=2, head=1)
    wait_tokens(page, body["tokens"])
    page.wait_for_function("() => document.querySelector('#detail-heatmap')?.data?.[0]?.z?.length > 0")
    assert precision(page) == "preview"
    assert "largest weight of its" in page.locator("#detail-precision").inner_text()
    preview = shown_matrix(page)
    n = body["n"]
    assert len(preview) == n
    assert held  # the exact matrix was asked for, and is held back
    for route in held:
        route.continue_()
    page.wait_for_function("() => document.getElementById('detail-precision').dataset.precision === 'exact'")
    assert preview != shown_matrix(page)  # the picture changed to the exact weights
    assert_exact(page, live_server, LONG, 2, 1)
    shoot(page, "detail-exact", full_page=False)


def test_lens_is_fetched_when_scrolled_to_and_follows_the_next_prompt(live_server, page):
    asked = []
    page.on(
        "request",
        lambda r: asked.append(json.loads(r.post_data)["prompt"]) if r.url.endswith("/api/lens") else None,
    )
    open_explorer(page, live_server, prompt=SHORT, layer=1, head=0)
    wait_tokens(page, api_trace(live_server, SHORT)["tokens"])
    page.wait_for_selector("#head-grid[data-settled]")
    assert asked == []  # below the fold: not computed for nobody
    see_lens(page)
    assert asked == [SHORT]
    # What a person does next: types again (the page scrolls to the prompt box), then scrolls back down.
    page.evaluate("() => document.getElementById('prompt').focus()")
    page.keyboard.press("End")
    page.keyboard.type(MORE)
    wait_tokens(page, api_trace(live_server, SHORT + MORE)["tokens"])
    page.wait_for_function(
        "() => document.getElementById('head-grid').dataset.settled === document.getElementById('head-grid').dataset.seq"
    )
    assert page.locator("#lens-panel.stale").count() == 1  # the older prompt's lens, dimmed
    assert SHORT + MORE not in asked
    see_lens(page)
    assert asked[-1] == SHORT + MORE
    shoot(page, "detail-lens")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_function("() => document.getElementById('detail-precision').dataset.precision === 'exact'")
    assert_exact(page, live_server, SHORT + MORE, 1, 0)  # the open head is the new prompt's, not stale
    lens = get_json(live_server + "/api/lens", {"prompt": SHORT + MORE})["lens"]
    shown = page.evaluate("() => document.querySelector('#lens-plot').data[0].z")
    n = len(lens["probs"][0])
    cols = len(shown[0])
    want = [[round(layer[i][0], 4) for i in range(n - cols, n)] for layer in lens["probs"]]
    assert [[round(v, 4) for v in row] for row in shown] == want
