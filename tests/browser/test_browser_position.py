"""The position lab in the browser: the permutation verdicts, the causal-mask caveat, swapping tokens,
dog-bites-man, and the RoPE clock's hands following the slider (fixtures: tests/browser_conftest.py)."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from app.main import create_app
from app.settings import Settings
from tests.api_helpers import save_tiny
from tests.browser_conftest import shoot
from tests.servers import serve_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROMPT = "The dog bites the man."


def metric(page, column: str, name: str) -> float:
    cell = page.locator(f"#{column} [data-metric={name}]")
    text = cell.text_content()
    # Readable on a projector: decimals, or engineering notation in words ("210 × 10⁻⁹"), never "2.1e-7".
    assert text and not re.search(r"\d\.?\d*e[+-]?\d", text), f"{name} is printed as {text!r}"
    return float(cell.get_attribute("data-value"))


def open_lab(page, url: str, query: str = "") -> None:
    # Wait for the page's own "everything drawn" flag, not the load event: on a loaded 2-core machine
    # parsing Plotly alone can take a minute.
    page.goto(f"{url}/position?prompt={quote(PROMPT)}{query}", wait_until="commit")
    page.wait_for_selector("body[data-ready='1']", timeout=240_000)


def test_permutation_verdicts_swap_and_the_causal_mask(live_server, page):
    open_lab(page, live_server, "&perm=reverse&layer=0&head=0")
    assert page.locator("#perm-shuffled .tok-text").all_text_contents()[0] == "."
    for name in ("probs", "head", "attention"):
        assert metric(page, "perm-off", name) <= 1e-5
    assert metric(page, "perm-off", "logits") <= 1e-4  # logits reach tens: float32 rounding is ~1e-6 there
    assert page.locator("#perm-off").get_attribute("data-equivariant") == "true"
    for name in ("probs", "logits", "attention"):
        assert metric(page, "perm-on", name) > 1e-2
    assert page.locator("#perm-on").get_attribute("data-equivariant") == "false"
    assert page.locator("#causal-note").is_hidden()
    shoot(page, "position")
    shoot(page, "position-top", full_page=False)

    # Click two tokens of the shuffled prompt: they trade places, and equivariance still holds.
    before = page.locator("#perm-shuffled .tok-text").all_text_contents()
    page.locator("#perm-shuffled .tok").nth(0).click()
    page.locator("#perm-shuffled .tok").nth(2).click()
    page.wait_for_function("() => new URL(location.href).searchParams.get('perm') === 'explicit'")
    expected = [before[2], before[1], before[0], *before[3:]]
    page.wait_for_function(
        "exp => [...document.querySelectorAll('#perm-shuffled .tok-text')].map(e => e.textContent).join('|') === exp",
        arg="|".join(expected),
    )
    assert metric(page, "perm-off", "probs") <= 1e-5

    # The causal mask alone breaks equivariance, and the page says why.
    page.check("#causal-toggle")
    page.wait_for_selector("#perm-off[data-equivariant='false']")
    assert metric(page, "perm-off", "head") > 1e-2
    note = page.locator("#causal-note")
    assert note.is_visible() and "causal mask" in note.text_content()
    assert "causal=1" in page.url
    assert page.locator("#order-causal-note").is_visible()
    shoot(page, "position-causal", full_page=False)


def test_dog_bites_man_and_the_clock(live_server, page):
    open_lab(page, live_server)
    page.wait_for_selector("#order-off[data-same]")
    # The default focus is a whole word that stays in place ("·the" when "bites" is split in pieces).
    focus = page.locator("#order-tokens .tok[aria-pressed='true'] .tok-text").text_content()
    assert focus in ("·bites", "·the"), focus
    assert page.locator("#order-off").get_attribute("data-same") == "true"
    assert page.locator("#order-on").get_attribute("data-same") == "false"
    # Residual values reach tens, so float32 rounding alone is ~1e-6 there; the prediction is exact to 1e-7.
    assert metric(page, "order-off", "focus") <= 1e-4 and metric(page, "order-off", "next") <= 1e-6
    assert metric(page, "order-on", "focus") > 1e-2

    clock = page.locator("#clock")
    assert clock.get_attribute("data-position") == "0" and clock.get_attribute("data-angle0") == "0.0°"
    page.locator("#clock-slider").fill("3")
    assert clock.get_attribute("data-position") == "3"
    at3 = clock.get_attribute("data-angle0")
    assert "position 3" in page.locator("#clock-readout").text_content()
    page.click("#clock-play")
    page.wait_for_function("() => Number(document.querySelector('#clock').dataset.position) > 6")
    page.click("#clock-play")
    assert page.locator("#clock-play").get_attribute("aria-pressed") == "false"
    # Interpolation scale 4: the same position's hands turn a quarter as far.
    page.locator("#clock-slider").fill("4")
    at4 = clock.get_attribute("data-angle0")
    page.locator("#scale-slider").fill("2")
    page.wait_for_function("() => document.querySelector('#scale-out').textContent === '4'")
    page.wait_for_function("a => document.querySelector('#clock').dataset.angle0 !== a", arg=at4)
    assert clock.get_attribute("data-position") == "4"
    # The fastest hand turns 1 radian per position at scale 1, so 4 positions at scale 4 make 57.3°.
    assert at3 == "171.9°" and clock.get_attribute("data-angle0") == "57.3°"
    spread = page.locator("#curves-caption").text_content()
    assert "differ by at most" in spread and "only on the offset" in spread
    page.locator("#rope-panel").scroll_into_view_if_needed()
    shoot(page, "position-clock", full_page=False)


def test_token_text_is_never_html(live_server, page):
    page.goto(f"{live_server}/position?prompt={quote('<b>bold</b> <img src=x>')}", wait_until="commit")
    page.wait_for_selector("body[data-ready='1']", timeout=240_000)
    assert page.locator("#perm-original b, #perm-original img, #perm-shuffled b").count() == 0
    assert "<b" in "".join(page.locator("#perm-original .tok-text").all_text_contents())


def test_gpt2_model_shows_learned_positions_instead_of_a_clock(page, tmp_path):
    folder = save_tiny(tmp_path / "tinygpt", arch="gpt2")
    with serve_app(create_app(Settings(models=[str(folder)]))) as url:
        open_lab(page, url)
        assert page.locator("#rope-body").is_hidden() and page.locator("#learned-body").is_visible()
        assert "learned vector per absolute position" in page.locator("#rope-message").text_content()
        page.wait_for_selector("#learned-sim .main-svg")
        assert page.locator("#perm-on .positional").text_content() == "learned"
        assert metric(page, "perm-off", "probs") <= 1e-5
        page.locator("#rope-panel").scroll_into_view_if_needed()
        shoot(page, "position-gpt2", full_page=False)


def test_the_bundled_twin_shows_learned_positions_one_click_away(page):
    # As `make run` serves it: classroom (RoPE) and its GPT-2-style twin (learned positions).
    with serve_app(create_app(Settings())) as url:
        open_lab(page, url)
        assert page.locator("#rope-body").is_visible()
        button = page.locator("#rope-compare-btn")
        assert button.text_content() == "Compare: learned position vectors in classroom-gpt2 (GPT-2-style) →"
        button.click()
        page.wait_for_selector("#learned-sim .main-svg", timeout=120_000)
        assert page.locator("#rope-body").is_hidden() and "model=classroom-gpt2" in page.url
        assert page.locator("#rope-title").text_content().startswith("Learned positions")
        assert page.locator("#perm-on .positional").text_content() == "learned"
        assert button.text_content() == "Compare: RoPE's clock in classroom →"
        page.locator("#rope-panel").scroll_into_view_if_needed()
        shoot(page, "position-twin-learned", full_page=False)
        button.click()  # and back to the clock, which offers the learned positions again
        page.wait_for_function("() => !document.getElementById('rope-body').hidden", timeout=120_000)
        assert "model=classroom" in page.url and "classroom-gpt2" not in page.url
        assert button.text_content().startswith("Compare: learned position vectors")
