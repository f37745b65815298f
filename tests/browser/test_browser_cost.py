"""The cost lab and the anatomy page in Chromium (fixtures: tests/browser_conftest.py): the slider moves
the numbers, the chapter's three rows appear, the timing is measured on demand, and the anatomy shows the
live model's shapes."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser_conftest import history_step, shoot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHAPTER_ROWS = [("100", "10,000"), ("1,000", "1,000,000"), ("100,000", "10,000,000,000")]


# The machine is shared with training jobs: give loading (Plotly is 4.8 MB) room before calling it broken.
SLOW_MS = 90_000


def open_page(page, url: str) -> None:
    page.set_default_timeout(SLOW_MS)
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")


def open_cost(page, live_server, query: str = "") -> None:
    open_page(page, f"{live_server}/cost{query}")


def chapter_rows(page) -> list[tuple[str, str]]:
    rows = page.locator("#chapter-table tbody tr")
    return [tuple(rows.nth(i).locator("td").all_text_contents()[:2]) for i in range(rows.count())]


def measure(page, tries: int = 30) -> dict:
    """Click "Measure" until the server measures. Timings are one at a time per server, so another
    measurement running now (another test's) makes the server answer 503 at once: the page must say so
    in words and let the student try again, which we do a second later."""
    for _ in range(tries):
        with page.expect_response("**/api/cost/timing") as answer:
            page.click("#measure")
        if answer.value.status == 200:
            return answer.value.json()
        assert answer.value.status == 503, answer.value.status
        expect(page.locator("#timing-error")).to_contain_text("another measurement")
        expect(page.locator("#measure")).to_be_enabled()
        time.sleep(1)
    pytest.fail(f"the server was busy measuring for {tries} tries")


def test_cost_measure_while_another_measurement_runs_says_busy_in_words(live_server, page):
    """A measurement of our own holds the server's timing lock (a large ladder takes seconds); the
    page's request is refused at once with a sentence that says when to try again."""
    open_cost(page, live_server)
    page.select_option("#timing-max", "256")
    with httpx.Client(base_url=live_server, timeout=SLOW_MS / 1000) as http, ThreadPoolExecutor(1) as pool:
        for _ in range(5):
            other = pool.submit(http.post, "/api/cost/timing", json={"max_n": 2048, "repeats": 7})
            time.sleep(0.5)  # ours reaches the lock in milliseconds, then measures for seconds
            if other.done():
                continue
            with page.expect_response("**/api/cost/timing") as answer:
                page.click("#measure")
            if answer.value.status == 503:
                break
            other.result()  # ours ended before the click: hold the lock again
        else:
            pytest.fail("could not hold the timing lock while the page asked")
        expect(page.locator("#timing-error")).to_contain_text("another measurement is running")
        expect(page.locator("#timing-error")).to_contain_text(re.compile(r"try again in \d+ s"))
        expect(page.locator("#measure")).to_be_enabled()
        assert int(answer.value.headers["retry-after"]) >= 1
        assert answer.value.request.timing["responseEnd"] < 2000  # ms: refused at once, not after waiting
        assert other.result().status_code == 200
    assert measure(page)["ns"][0] == 16  # and once it has ended, the page measures


def test_cost_slider_changes_the_numbers_and_the_chapter_rows_appear(live_server, page, models_info):
    open_cost(page, live_server)
    assert page.locator("#n2").text_content() == "1,048,576"  # the default n = 1,024
    rows = chapter_rows(page)
    for row in CHAPTER_ROWS:
        assert row in rows
    live = models_info["models"][0]
    assert (
        f"{live['n_layer']} layers × {live['n_head']} heads"
        in page.locator("#live-total-label").text_content()
    )

    page.locator("#n-slider").fill("12")  # log2 n: 4,096 tokens
    expect(page.locator("#n2")).to_have_text("16,777,216", timeout=SLOW_MS)
    assert page.locator("#n-out").text_content() == "4,096"
    assert "n=4096" in page.url
    assert page.locator("#chapter-table tr.yours td").first.text_content() == "4,096"
    assert page.locator("#n2-bytes").text_content() == "67.1 MB"  # 4 bytes x 4096^2
    for row in CHAPTER_ROWS:  # the chapter's rows stay, the slider's n is added in its place
        assert row in chapter_rows(page)

    page.locator("#n-slider").press("End")  # 131,072 tokens: the slider's top
    expect(page.locator("#n2")).to_have_text("17,179,869,184", timeout=SLOW_MS)
    shoot(page, "cost-slider-top", full_page=False)


def test_cost_chapter_preset_highlights_its_row_and_models_table(live_server, page):
    open_cost(page, live_server)
    page.click(".n-presets [data-n='100000']")
    expect(page.locator("#n2")).to_have_text("10,000,000,000", timeout=SLOW_MS)
    assert page.locator("#chapter-table tr.yours td").all_text_contents() == [
        "100,000",
        "10,000,000,000",
        "40.0 GB",
    ]
    assert len(chapter_rows(page)) == 3  # n is one of the chapter's own rows: nothing added
    names = page.locator("#models-table td.name").all_text_contents()
    assert names[0].endswith("(live)") and names[1:] == [
        "GPT-2 small",
        "Llama-2-7B",
        "Llama-2-70B",
        "Llama-3-8B",
    ]
    kv = page.locator("#kv-list").text_content()
    assert re.search(r"Llama-2-70B: .* 8× less \(64 query heads share 8 K/V heads\)", kv)
    assert re.search(r"Llama-3-8B: .* 4× less \(32 query heads share 8 K/V heads\)", kv)
    expect(page.locator("#flops-plot .legendtext").filter(has_text="crossover n =")).to_have_count(
        1, timeout=SLOW_MS
    )
    shoot(page, "cost")
    shoot(page, "cost-top", full_page=False)


def test_cost_url_restores_n_and_back_button_steps(live_server, page):
    open_cost(page, live_server, "?n=100")
    assert page.locator("#n2").text_content() == "10,000"
    page.click(".n-presets [data-n='1000']")
    expect(page.locator("#n2")).to_have_text("1,000,000", timeout=SLOW_MS)
    history_step(page, -1)
    expect(page.locator("#n2")).to_have_text("10,000", timeout=SLOW_MS)
    assert page.locator("#n-out").text_content() == "100"


def test_cost_measure_on_this_server(live_server, page):
    open_cost(page, live_server)
    assert page.locator("#timing-plot").is_hidden()  # nothing is measured until asked
    page.select_option("#timing-max", "256")
    data = measure(page)
    assert data["ns"] + data["skipped"] == [16, 32, 64, 128, 256]  # the top is the one chosen on the page
    page.wait_for_selector("#timing-plot .main-svg")
    # Two measured series, one point per size (the fitted lines have no markers).
    expect(page.locator("#timing-plot .scatterlayer .points path")).to_have_count(
        2 * len(data["ns"]), timeout=SLOW_MS
    )
    sentence = page.locator("#timing-sentence").text_content()
    assert sentence == data["sentence"]
    if len(data["ns"]) >= 2:  # a machine too busy for two sizes is told so in words instead
        assert re.match(
            r"Doubling n multiplied the attention time by \d+\.\d on this server \(fitted exponent", sentence
        )
    assert page.locator("#measure").is_enabled()
    shoot(page, "cost-measured")


def test_anatomy_shows_the_live_model_shapes(live_server, page, models_info):
    live = models_info["models"][0]
    d, V, L = live["d_model"], live["vocab_size"], live["n_layer"]
    open_page(page, f"{live_server}/anatomy?prompt=The%20cat%20sat")
    n = page.locator("#tokens .tok").count()
    arrows = page.locator("#pipeline .pl-arrow").all_text_contents()
    assert f"[n] = [{n}]" in arrows
    assert f"[n × d_model] = [{n} × {d}]" in arrows
    assert f"[n × vocab] = [{n} × {V}]" in arrows
    names = page.locator("#pipeline .pl-name").all_text_contents()
    assert names[0] == "token ids" and names[-1] == "softmax" and "final normalise" in names
    assert sum(name.startswith("transformer block") for name in names) == min(L, 3 if L > 6 else L)
    diagram = page.locator("#block-diagram").text_content()
    assert f"{live['n_head']} heads of {live['head_dim']}" in diagram
    assert f"{d} → {live['d_ff']} → {d}" in diagram
    assert f"scores [{live['n_head']} × {n} × {n}]" in diagram
    assert page.locator("#block-diagram .bd-step").count() == 4 and page.locator(".bd-add").count() == 2
    assert page.locator("#census-plot .main-svg").count() > 0
    shoot(page, "anatomy")
    shoot(page, "anatomy-top", full_page=False)


def test_anatomy_token_and_layer_choice_redraw(live_server, page, models_info):
    L = models_info["models"][0]["n_layer"]
    open_page(page, f"{live_server}/anatomy?prompt=The%20cat%20sat")
    before = page.locator("#block-diagram").text_content()
    page.click("#tokens .tok >> nth=0")
    expect(page.locator("#block-title")).to_contain_text("token 0", timeout=SLOW_MS)
    page.click(f"#layer-pick [data-layer='{L - 1}']")
    expect(page.locator("#block-title")).to_contain_text(f"Block L{L - 1}", timeout=SLOW_MS)
    assert page.locator("#block-diagram").text_content() != before
    assert f"layer={L - 1}" in page.url and "pos=0" in page.url
    assert page.locator(f"#pipeline [data-layer='{L - 1}']").get_attribute("aria-current") == "true"


def test_anatomy_bad_prompt_says_why(live_server, page):
    open_page(page, f"{live_server}/anatomy?prompt=ok")
    page.fill("#prompt", "   ")
    err = page.locator("#prompt-error")
    err.wait_for(state="visible")
    assert "empty" in err.text_content()
    assert page.locator("#pipeline .pl-step").count() > 0  # the last good answer stays on screen
