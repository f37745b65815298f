"""The offline lesson file: opened from disk with every network request refused, it still shows the
token strip, the head grid, a head's heatmap on click and on the arrow keys, and the next-token bars."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.export import export_html
from app.notebook import show
from model import load
from tests.browser_conftest import shoot

N_TOKENS = 64
SIZE_LIMIT = 1_500_000  # bytes, for the classroom model at 64 tokens
TEXT = (
    "Lily had a red ball. She gave it to Tom because he was sad. The cat sat on the mat. "
    "The dog bites the man. Zorbin Quell met Tavi Morrow at the Glimmerfold. Zorbin Quell met Tavi "
    "Morrow at the Glimmerfold. Once upon a time there was a small fox who lived in the woods."
)


class LessonPath(type(Path())):
    attention = None


@pytest.fixture(scope="module")
def lm():
    return load("classroom")


@pytest.fixture(scope="module")
def lesson(tmp_path_factory, lm):
    ids = lm.encode(TEXT)[:N_TOKENS]
    assert len(ids) == N_TOKENS
    path = LessonPath(tmp_path_factory.mktemp("export") / "lesson.html")
    export_html(lm, ids, path)
    path.attention = lm.trace(ids).attention  # (L, H, n, n), to check what the page shows
    return path


def test_export_file_is_small_and_names_no_external_url(lesson):
    text = lesson.read_text(encoding="utf-8")
    size = lesson.stat().st_size
    print(f"\nlesson file, classroom model, {N_TOKENS} tokens: {size:,} bytes")
    assert size < SIZE_LIMIT
    assert not re.search(r"https?://", text)
    assert "<script src" not in text and "<link" not in text  # everything inline


def offline_page(pages):
    page = pages(1400, 1000, block_external=False)
    requests = []

    def refuse(route):
        requests.append(route.request.url)
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            route.abort()

    page.context.route("**/*", refuse)
    page.requests = requests
    return page


def test_export_opens_offline_and_a_head_opens_on_click_and_arrows(lesson, pages):
    page = offline_page(pages)
    page.goto(lesson.as_uri())
    page.wait_for_selector("html[data-ready='1']")
    assert all(u.startswith("file:") for u in page.requests), page.requests
    assert page.locator("#tokens .tok").count() == N_TOKENS
    assert page.locator("#head-grid .thumb").count() == 4 * 8
    assert page.locator("#next .xbar").count() == 10 and page.locator("#resid .xbar").count() == 2 * 4 + 1

    page.locator('.thumb[data-layer="1"][data-head="2"]').click()
    heat = page.locator("#heatmap")
    assert (heat.get_attribute("data-layer"), heat.get_attribute("data-head")) == ("1", "2")
    assert page.locator("#head-title").inner_text().startswith("Layer 1, head 2")
    # The picture, read from its pixels: in the top row, token 0 attends to itself with weight 1
    # (Viridis yellow) and everything to its right is the masked future (light grey).
    readout = page.locator(".headmap-readout")
    box = page.locator(".headmap-canvas").bounding_box()
    assert box["width"] > 300 and box["height"] > 300
    first_cell = page.evaluate("""() => {
        const c = document.querySelector('.headmap-canvas');
        const ctx = c.getContext('2d'); const d = window.devicePixelRatio || 1;
        for (let x = 0; x < c.width; x++) {
          const [r, g, b] = ctx.getImageData(x, Math.round(2 * d), 1, 1).data;
          if (r > 200 && g > 200 && b < 120) return x / d;
        }
        return -1; }""")
    assert first_cell > 0, "token 0's self-attention (weight 1) is not drawn in Viridis yellow"
    page.mouse.move(box["x"] + first_cell + 1, box["y"] + 2)
    assert re.search(r"query 0 .* key 0 .*: weight 1\.0000", readout.inner_text()), readout.inner_text()
    page.mouse.move(box["x"] + first_cell + 40, box["y"] + 2)
    assert "masked" in readout.inner_text()
    grey = page.eval_on_selector(
        ".headmap-canvas",
        """(c, x) => { const d = window.devicePixelRatio || 1;
           return Array.from(c.getContext('2d').getImageData(Math.round(x * d), Math.round(2 * d), 1, 1).data); }""",
        first_cell + 40,
    )
    assert grey[:3] == [238, 238, 238]
    # A row further down, hovered: its weights as the model computed them (four decimals).
    page.mouse.move(box["x"] + first_cell + 1, box["y"] + box["height"] * 0.5)
    shown = re.search(r"query (\d+) .* key 0 .*: weight ([01]\.\d{4})", readout.inner_text())
    assert shown, readout.inner_text()
    expected = float(lesson.attention[1, 2, int(shown[1]), 0])
    assert abs(float(shown[2]) - expected) <= 6e-5, (shown[0], expected)
    shoot(page, "export-head-L1H2")

    page.keyboard.press("ArrowRight")
    assert (heat.get_attribute("data-layer"), heat.get_attribute("data-head")) == ("1", "3")
    page.keyboard.press("ArrowDown")
    assert (heat.get_attribute("data-layer"), heat.get_attribute("data-head")) == ("2", "3")
    assert page.locator('.thumb.open[data-layer="2"][data-head="3"]').count() == 1

    page.locator("#tokens .tok").nth(5).click()
    assert "token 5" in page.locator("#next .caption").inner_text()
    shoot(page, "export-token-5")
    assert all(u.startswith("file:") for u in page.requests), page.requests


def test_export_in_a_notebook_iframe_draws_the_grid(lm, pages):
    page = offline_page(pages)
    page.set_content(show(lm, "The cat sat on the mat. The cat")._repr_html_())
    frame = page.frame_locator("iframe")
    frame.locator("html[data-ready='1']").wait_for()
    assert frame.locator("#head-grid .thumb").count() == 4 * 8
    frame.locator('.thumb[data-layer="0"][data-head="1"]').click()
    assert frame.locator("#head-title").inner_text().startswith("Layer 0, head 1")
    assert not page.requests, page.requests
