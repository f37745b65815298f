"""The explorer page in headless Chromium against a real server on the bundled model.

Nothing here depends on what the model predicts: expected tokens come from the API itself, and
predictions are only checked for being shown and used.
"""

from __future__ import annotations

import json
import os
import statistics
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.browser_conftest import api_trace, history_step, shoot

pytestmark = pytest.mark.browser

XSS_PROMPT = "Hi <img src=x onerror=alert(1)> and <script>alert(1)</script> bye"
PLOTS = ("#detail-heatmap", "#next-plot", "#resid-story", "#resid-map", "#lens-plot")


def strip_tokens(page) -> list[str]:
    return page.locator("#tokens .tok-text").all_text_contents()


def wait_tokens(page, tokens: list[str], timeout: float = 60_000) -> None:
    """Until the token strip shows exactly these tokens (the trace for that prompt is on screen)."""
    try:
        page.wait_for_function(
            """(want) => JSON.stringify([...document.querySelectorAll('#tokens .tok-text')]
                         .map((e) => e.textContent)) === JSON.stringify(want)""",
            arg=tokens,
            timeout=timeout,
        )
    except Exception as e:
        shown = strip_tokens(page)
        error = page.locator("#prompt-error").text_content()
        raise AssertionError(f"token strip shows {shown}, expected {tokens}; error line: {error!r}") from e


def wait_plot(page, selector: str, timeout: float = 60_000) -> None:
    if selector == "#lens-plot":  # fetched only once its panel is on screen: scroll there, then back
        see_lens(page, timeout)
        return
    page.wait_for_function(
        "(sel) => document.querySelector(sel)?.querySelector('.main-svg') !== null",
        arg=selector,
        timeout=timeout,
    )


def see_lens(page, timeout: float = 60_000) -> None:
    """Scroll to the logit lens as a reader would, wait until it shows the trace on screen, scroll back."""
    page.locator("#lens-panel").scroll_into_view_if_needed()
    page.wait_for_function(
        """() => { const p = document.getElementById('lens-panel'), g = document.getElementById('head-grid');
                   return p.dataset.seq && p.dataset.seq === g.dataset.seq && !p.classList.contains('stale')
                          && p.querySelector('.main-svg') !== null; }""",
        timeout=timeout,
    )
    page.evaluate("() => window.scrollTo(0, 0)")


def open_explorer(page, base: str, **query) -> None:
    page.goto(f"{base}/?{urlencode(query)}" if query else base + "/")
    page.wait_for_selector("#head-grid .thumb")


def thumbs_fingerprint(page) -> list[str]:
    """One short digest of every thumbnail's pixels, to tell whether the pictures changed."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#head-grid .thumb canvas')].map((c) => {
             const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             let h = 0;
             for (let i = 0; i < d.length; i += 4) h = (h * 31 + d[i] + 7 * d[i + 1] + 13 * d[i + 2]) >>> 0;
             return h.toString(16);
           })"""
    )


def thumbs_drawn(page) -> list[int]:
    """Distinct colours per thumbnail: a blank canvas has one; a drawn pattern at least three (the masked
    future, weight 0 and weight 1 for a perfectly sharp head like the classroom model's L0H0)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#head-grid .thumb canvas')].map((c) => {
             const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             const seen = new Set();
             for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
             return seen.size;
           })"""
    )


def settled(page) -> None:
    """Wait until what the page has queued is on screen: the page schedules its Plotly views for the
    frame after a change (requestAnimationFrame, then a task), so wait for a frame, let the queued tasks
    run, and wait for the frame that paints them. (requestIdleCallback would be the natural event, but
    headless Chromium can starve it for seconds after presenter mode.)"""
    page.evaluate(
        """() => document.fonts.ready.then(() => new Promise((resolve) =>
             requestAnimationFrame(() => setTimeout(() => requestAnimationFrame(() => resolve()), 0))))"""
    )


def query_of(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def test_explorer_typing_shows_every_head(live_server, models_info, page):
    m = models_info["models"][0]
    open_explorer(page, live_server)
    prompt = "The cat sat on the mat"
    page.fill("#prompt", "")
    page.locator("#prompt").press_sequentially(prompt, delay=20)  # live update, no button, no Enter
    wait_tokens(page, api_trace(live_server, prompt)["tokens"])
    assert page.locator("#head-grid .thumb").count() == m["n_layer"] * m["n_head"]
    assert page.locator("#head-grid .hg-layer").all_text_contents() == [f"L{i}" for i in range(m["n_layer"])]
    assert all(colours >= 3 for colours in thumbs_drawn(page))
    if m["n_kv_head"] < m["n_head"]:  # GQA: one shaded band and label per key/value head
        assert page.locator("#head-grid .hg-band").count() == m["n_kv_head"]
        assert page.locator("#head-grid .hg-group").first.inner_text() == "K/V head 0"
    assert query_of(page)["prompt"] == prompt
    assert page.locator("#prompt-error").is_hidden()
    # A class demo from the presets menu replaces the prompt and runs at once.
    page.locator("#presets").select_option(label="man bites dog")
    demo = page.locator("#prompt").input_value()
    assert "man bites" in demo
    wait_tokens(page, api_trace(live_server, demo)["tokens"])


def test_explorer_click_head_shows_heatmap_labelled_with_tokens(live_server, page):
    prompt = "The dog bites the man."
    tokens = api_trace(live_server, prompt)["tokens"]
    open_explorer(page, live_server, prompt=prompt)
    wait_tokens(page, tokens)
    page.locator('#head-grid .thumb[data-layer="1"][data-head="2"]').click()
    wait_plot(page, "#detail-heatmap")
    page.wait_for_function("() => document.querySelectorAll('#detail-heatmap .xtick text').length > 0")
    assert page.locator("#detail-heatmap .xtick text").all_text_contents() == tokens
    assert page.locator("#detail-heatmap .ytick text").all_text_contents() == tokens
    assert page.locator("#detail-title").inner_text().startswith("Layer 1, head 2")
    # Exact values and the head's scores arrive from /api/head.
    page.wait_for_function("() => document.querySelectorAll('#head-scores dd').length >= 4")
    assert "exact weight" in page.locator("#detail-precision").inner_text()
    q = query_of(page)
    assert (q["layer"], q["head"]) == ("1", "2")
    assert page.locator('#head-grid .thumb.open[data-layer="1"][data-head="2"]').count() == 1
    # Hovering a token outlines its row and column in the heatmap and on every thumbnail.
    plain = thumbs_fingerprint(page)
    page.locator("#tokens .tok").nth(2).hover()
    page.wait_for_function("() => document.querySelector('#detail-heatmap').layout.shapes.length === 2")
    lit = thumbs_fingerprint(page)
    assert all(a != b for a, b in zip(plain, lit, strict=True))
    page.mouse.move(5, 5)
    page.wait_for_function("() => document.querySelector('#detail-heatmap').layout.shapes.length === 0")
    assert thumbs_fingerprint(page) == plain


def test_explorer_prompt_change_updates_grid(live_server, page):
    first, second = "The cat sat on the mat", "Lily had a red ball. She"
    open_explorer(page, live_server, prompt=first)
    wait_tokens(page, api_trace(live_server, first)["tokens"])
    before = thumbs_fingerprint(page)
    page.fill("#prompt", second)
    wait_tokens(page, api_trace(live_server, second)["tokens"])
    after = thumbs_fingerprint(page)
    assert len(after) == len(before)
    assert sum(a != b for a, b in zip(before, after, strict=True)) > len(before) // 2


def test_explorer_ignores_out_of_order_answers(live_server, pages):
    """A late answer for an older prompt must never replace the newer prompt's views. The answer for
    the first prompt is held back 1.5 s in the page (even if the page aborts it), so it lands last."""
    slow, fast = "The man bites the dog.", "The cat sat on the mat"
    page = pages()
    hold_back = """(() => {
         const real = window.fetch;
         window.fetch = async (url, init) => {
           const res = await real(url, { ...init, signal: undefined });
           if (init && init.body && JSON.parse(init.body).prompt === SLOW) {
             window.__slowSent = true;
             await new Promise((r) => setTimeout(r, 1500));
             setTimeout(() => { window.__slowDelivered = true; }, 300); // after the page handled it
           }
           return res;
         };
       })()"""
    page.add_init_script(hold_back.replace("SLOW", json.dumps(slow)))
    open_explorer(page, live_server, prompt="Lily had a red ball. She")
    page.wait_for_selector("#tokens .tok")
    page.fill("#prompt", slow)
    page.wait_for_function("() => window.__slowSent === true")  # in flight: the next text must wait
    page.fill("#prompt", fast)
    page.locator("#prompt").press("Enter")
    wait_tokens(page, api_trace(live_server, fast)["tokens"])
    page.wait_for_function("() => window.__slowDelivered === true")  # the late answer has landed
    assert strip_tokens(page) == api_trace(live_server, fast)["tokens"]
    assert query_of(page)["prompt"] == fast


def test_explorer_shared_url_restores_head_and_view(live_server, pages):
    prompt = "Lily had a red ball. She"
    tokens = api_trace(live_server, prompt)["tokens"]
    page = pages()
    open_explorer(page, live_server, prompt=prompt, layer=2, head=5, view="lines", sink=1)
    wait_tokens(page, tokens)
    page.wait_for_selector("#detail-lines canvas")
    assert page.locator("#detail-title").inner_text().startswith("Layer 2, head 5")
    assert page.locator('[data-view="lines"]').get_attribute("aria-pressed") == "true"
    assert page.locator("#detail-heatmap").is_hidden()
    assert page.locator("#sink-toggle").is_checked()
    assert page.locator("#prompt").input_value() == prompt
    # Back and forward step through what was opened.
    page.locator('#head-grid .thumb[data-layer="0"][data-head="1"]').click()
    page.locator('[data-view="heatmap"]').click()
    wait_plot(page, "#detail-heatmap")
    assert page.locator("#detail-title").inner_text().startswith("Layer 0, head 1")
    history_step(page, -1)
    history_step(page, -1)
    page.wait_for_function(
        "() => document.querySelector('#detail-title').textContent.startsWith('Layer 2, head 5')"
    )
    assert page.locator("#detail-lines").is_visible()
    history_step(page, +1)
    page.wait_for_function(
        "() => document.querySelector('#detail-title').textContent.startsWith('Layer 0, head 1')"
    )


def test_explorer_back_restores_previous_prompt(live_server, page):
    a, b = "The cat sat on the mat", "The dog bites the man."
    open_explorer(page, live_server, prompt=a)
    wait_tokens(page, api_trace(live_server, a)["tokens"])
    page.fill("#prompt", b)
    page.locator("#prompt").press("Enter")
    wait_tokens(page, api_trace(live_server, b)["tokens"])
    history_step(page, -1)
    wait_tokens(page, api_trace(live_server, a)["tokens"])
    assert page.locator("#prompt").input_value() == a


def test_explorer_keyboard_moves_and_opens_heads(live_server, page):
    open_explorer(page, live_server, prompt="The cat sat on the mat")
    page.wait_for_selector("#tokens .tok")
    page.wait_for_function("() => new URLSearchParams(location.search).has('layer')")  # the first head opened
    opened = (query_of(page)["layer"], query_of(page)["head"])
    page.locator('#head-grid .thumb[data-layer="0"][data-head="0"]').focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert (
        page.evaluate(
            "() => document.activeElement.dataset.layer + ',' + document.activeElement.dataset.head"
        )
        == "1,2"
    )
    assert (query_of(page)["layer"], query_of(page)["head"]) == opened  # moving does not open
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#detail-title').textContent.startsWith('Layer 1, head 2')"
    )
    assert (query_of(page)["layer"], query_of(page)["head"]) == ("1", "2")


def test_explorer_append_token_runs_again(live_server, page):
    prompt = "The cat sat on the"
    open_explorer(page, live_server, prompt=prompt)
    wait_tokens(page, api_trace(live_server, prompt)["tokens"])
    wait_plot(page, "#next-plot")
    button = page.locator("#append")
    page.wait_for_function("() => !document.querySelector('#append').disabled")
    label = button.inner_text()
    assert label.startswith("Append “") and label.endswith("”")
    # The chosen token is the top prediction shown first in the bars.
    top = api_trace(live_server, prompt)["predictions"][-1]["top"][0]["token"]
    assert label == f"Append “{top}”"
    button.click()
    page.wait_for_function("(p) => document.querySelector('#prompt').value !== p", arg=prompt)
    grown = page.locator("#prompt").input_value()
    assert grown.startswith(prompt) and len(grown) > len(prompt)
    wait_tokens(page, api_trace(live_server, grown)["tokens"])
    assert query_of(page)["prompt"] == grown
    # Choosing another bar changes what will be appended.
    wait_plot(page, "#next-plot")
    page.locator("#next-plot").scroll_into_view_if_needed()  # below the open head: click where it is
    second = api_trace(live_server, grown)["predictions"][-1]["top"][1]["token"]
    # Anywhere on a bar's row counts (bars of unlikely tokens are only a few pixels long).
    bar = page.locator("#next-plot .point path").nth(1).bounding_box()
    plot = page.locator("#next-plot .nsewdrag").bounding_box()
    page.mouse.click(plot["x"] + plot["width"] * 0.6, bar["y"] + bar["height"] / 2)
    page.wait_for_function(
        "(t) => document.querySelector('#append').textContent === `Append “${t}”`", arg=second
    )


def test_explorer_earlier_token_shows_its_own_prediction(live_server, page):
    """Typing fetches the last position's prediction only; selecting an earlier token fetches the rest,
    and its bars are that position's prediction (with the token that really followed named)."""
    prompt = "Lily had a red ball. She"
    sent = []
    page.on("request", lambda r: r.url.endswith("/api/trace") and sent.append(json.loads(r.post_data)))
    open_explorer(page, live_server, prompt=prompt)
    wait_plot(page, "#next-plot")
    assert sent and all(b["predict"] == "last" for b in sent)
    want = api_trace(live_server, prompt)
    bars = "() => document.querySelector('#next-plot').data[0].x"
    assert page.evaluate(bars) == [t["prob"] for t in want["predictions"][-1]["top"]]
    page.locator("#tokens .tok").nth(1).click()
    page.wait_for_function(
        "(t) => document.querySelector('#next-caption').textContent.includes(`continues with “${t}”`)",
        arg=want["tokens"][2],
    )
    page.wait_for_function(
        "(p) => JSON.stringify(document.querySelector('#next-plot').data[0].x) === JSON.stringify(p)",
        arg=[t["prob"] for t in want["predictions"][1]["top"]],
    )
    assert "stale" not in page.locator("#next-plot").get_attribute("class")
    assert [b["predict"] for b in sent].count("all") == 1
    # Back to the last token: its prediction was in hand all along, no request needed.
    page.locator("#tokens .tok").nth(want["n"] - 1).click()
    page.wait_for_function(
        "() => document.querySelector('#next-caption').textContent.includes('the last one')"
    )
    assert [b["predict"] for b in sent].count("all") == 1


def test_explorer_temperature_refetches_predictions(live_server, page):
    prompt = "Lily had a red ball. She"
    open_explorer(page, live_server, prompt=prompt)
    wait_plot(page, "#next-plot")
    page.locator("#temperature").fill("0.5")
    page.wait_for_function("() => new URLSearchParams(location.search).get('temp') === '0.5'")
    page.wait_for_function(
        "() => document.querySelector('#next-caption').textContent.includes('temperature 0.50')"
    )


def test_explorer_presenter_mode_toggles_and_persists(live_server, page):
    open_explorer(page, live_server, prompt="The cat sat on the mat")
    size = lambda: page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)")  # noqa: E731
    normal = size()
    page.locator("#presenter-toggle").click()
    assert page.evaluate("() => document.documentElement.classList.contains('presenter')")
    assert page.locator("#presenter-toggle").get_attribute("aria-pressed") == "true"
    assert size() > normal * 1.25
    shoot(page, "explorer-presenter-toggled", full_page=False)
    page.reload()
    page.wait_for_selector("#head-grid .thumb")
    assert page.evaluate("() => document.documentElement.classList.contains('presenter')")
    page.locator("#presenter-toggle").click()
    assert size() == normal


def test_explorer_shows_markup_in_prompt_as_text_and_runs_nothing(live_server, page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    tokens = api_trace(live_server, XSS_PROMPT)["tokens"]
    open_explorer(page, live_server, prompt=XSS_PROMPT, layer=0, head=0)
    wait_tokens(page, tokens)
    wait_plot(page, "#detail-heatmap")
    for sel in PLOTS:
        wait_plot(page, sel)
    page.locator('[data-view="lines"]').click()
    page.wait_for_selector("#detail-lines canvas")
    page.locator("#tokens .tok").nth(3).hover()
    page.wait_for_selector("#tokens .tok.hover")  # the hover has reached every view
    settled(page)
    assert dialogs == []
    assert page.locator("img[src=x], #main script").count() == 0
    strip = "".join(strip_tokens(page)).replace("·", " ")
    assert "<img src=x onerror=alert(1)>" in strip and "<script>alert(1)</script>" in strip
    assert page.locator("#prompt").input_value() == XSS_PROMPT
    # The tokenizer splits markup into harmless pieces, so also feed the views whole tags as tokens
    # (another tokenizer could keep them together): they must come out as the same literal text.
    tags = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "<b>bold</b>"]
    shown = page.evaluate(
        """async (tags) => {
             const { renderTokens } = await import('/static/js/views/tokens.js');
             const { renderHeatmap } = await import('/static/js/views/heatmap.js');
             const strip = document.createElement('div');
             const plot = document.createElement('div');
             plot.style.cssText = 'width: 600px; height: 400px';
             document.body.append(strip, plot);
             renderTokens(strip, tags);
             await renderHeatmap(plot, { tokens: tags, matrix: new Float32Array([1, 0, 0, .5, .5, 0, .2, .3, .5]),
                                         causal: true, hideSink: false, highlight: null });
             return {
               strip: [...strip.querySelectorAll('.tok-text')].map((e) => e.textContent),
               ticks: [...plot.querySelectorAll('.xtick text')].map((e) => e.textContent),
               elements: document.querySelectorAll('img[src=x], [onerror], body script:not([src]), b').length,
             };
           }""",
        tags,
    )
    settled(page)
    ticks = [t if len(t) <= 14 else t[:13] + "…" for t in tags]  # long labels are shortened, as text
    assert shown == {"strip": tags, "ticks": ticks, "elements": 0}
    assert dialogs == []


def test_explorer_shows_api_errors_in_words(live_server, models_info, page):
    open_explorer(page, live_server, prompt="The cat sat on the mat")
    page.wait_for_selector("#tokens .tok")
    too_many = " ".join(["cat"] * (models_info["models"][0]["max_tokens"] + 10))
    page.fill("#prompt", too_many)
    error = page.locator("#prompt-error")
    error.wait_for(state="visible")
    assert "token" in error.inner_text().lower()
    assert page.evaluate("() => document.body.classList.contains('stale')")  # old views dimmed, not blank
    page.fill("#prompt", "The cat sat")
    error.wait_for(state="hidden")


def test_explorer_works_with_every_outside_request_blocked(live_server, page):
    """The fixture aborts anything not on 127.0.0.1; the page must load and draw every view."""
    prompt = "The cat sat on the mat. The cat"
    open_explorer(page, live_server, prompt=prompt, layer=1, head=0)
    wait_tokens(page, api_trace(live_server, prompt)["tokens"])
    for sel in PLOTS:
        wait_plot(page, sel)
    page.wait_for_function("() => document.querySelectorAll('#head-scores dd').length >= 4")
    page.locator('[data-view="lines"]').click()
    page.wait_for_selector("#detail-lines canvas")
    with page.expect_download() as lines_png:
        page.locator("#lines-png").click()
    assert lines_png.value.suggested_filename == "attention-lines-L1H0.png"
    page.locator("#sink-toggle").check()
    page.locator("#tokens .tok").nth(2).click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('pos') === '2'")
    assert page.locator(".error:visible").count() == 0
    assert page.blocked == []
    # PNG export: the grid's own button produces a PNG download.
    with page.expect_download() as dl:
        page.locator("#grid-png").click()
    assert dl.value.suggested_filename.endswith(".png")
    assert page.locator("#detail-heatmap .modebar-btn[data-title='Download plot as a PNG']").count() == 1


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_explorer_screenshots(live_server, pages, size):
    page = pages(*size)
    prompt = "Lily had a red ball. She gave it to Tom. Lily had a red ball. She"
    open_explorer(page, live_server, prompt=prompt, layer=1, head=3)
    for sel in PLOTS:
        wait_plot(page, sel)
    page.wait_for_function("() => document.querySelectorAll('#head-scores dd').length >= 4")
    shoot(page, "explorer", full_page=False)
    shoot(page, "explorer-full")
    page.locator('[data-view="lines"]').click()
    # Hover once the lines view has drawn, as a person would: a hover sent while the page is still laying
    # out can end with the pointer off the token (one failure under load in session 22's full run).
    page.wait_for_selector("#detail-lines canvas")
    settled(page)
    page.locator("#tokens .tok").nth(5).hover()
    page.wait_for_selector("#tokens .tok.hover")
    settled(page)
    shoot(page, "explorer-lines-hover", full_page=False)
    page.locator("#presenter-toggle").click()
    settled(page)  # every view has redrawn at the presenter sizes
    shoot(page, "explorer-presenter")
    # Usable: nothing wider than the window, the grid and the open head side by side.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= size[0]
    grid = page.locator("#grid-panel").bounding_box()
    detail = page.locator("#detail-panel").bounding_box()
    assert grid["x"] + grid["width"] <= detail["x"]


def test_explorer_keystroke_to_grid_time_at_128_tokens(live_server, pages):
    """Time from the last keystroke (input event) to the grid being painted, at n close to 128.

    Includes the request (sent at once: nothing else is in flight), decoding and drawing. Distinct prompts, so the
    server's cache never answers. Printed for the report (run with -s); the bound is generous.
    """
    story = (
        "Once upon a time a small fox lived near the river with her friend Tom, and every day they walked "
        "to the big tree to look at the birds, the boats and the children who played by the water. "
    )
    prompts = []
    for k in range(5):
        long = f"Day {k}. "
        while len(shown := api_trace(live_server, long)["tokens"]) < 128:
            long += story[: len(story) // 2] if len(shown) > 100 else story
        shown = shown[:128]
        prompts.append("".join(shown).replace("·", " ").replace("⏎", "\n"))
    page = pages(block_external=False)
    open_explorer(page, live_server, prompt="warm up")
    wait_plot(page, "#lens-plot")  # Plotly parsed: it must not compete with the timed frames
    times, server = [], []
    for text in prompts:
        settled(page)  # a pause between "keystrokes": the previous plots are done
        got = page.evaluate(
            """(text) => new Promise((resolve) => {
                 const input = document.querySelector('#prompt');
                 window.addEventListener('atlas:grid', (e) => {
                   // the next frame is the one that shows the grid
                   requestAnimationFrame(() => resolve({ ms: performance.now() - t0, fetch: e.detail.fetchMs }));
                 }, { once: true });
                 setTimeout(() => resolve({ ms: -1 }), 20000);
                 input.value = text;
                 const t0 = performance.now();
                 input.dispatchEvent(new Event('input', { bubbles: true }));
               })""",
            text,
        )
        assert got["ms"] > 0, "the grid was not drawn within 20 s"
        times.append(got["ms"])
        server.append(got["fetch"])
    n = page.locator("#tokens .tok").count()
    median = statistics.median(times)
    print(
        f"\nkeystroke -> painted grid at n={n}: median {median:.0f} ms, "
        f"all {[round(t) for t in times]}; request+response {[round(t) for t in server]} ms"
    )
    assert 128 <= n <= 140
    assert median < 3000


@pytest.fixture(scope="module")
def two_model_server(tmp_path_factory):
    """The bundled model plus a tiny random 2-layer, 4-head GQA model, both selectable in the page."""
    from model.loading import save
    from tests.servers import serve_models
    from tests.tiny import make_tokenizer, tiny_model

    folder = tmp_path_factory.mktemp("models") / "tiny"
    save(tiny_model(), make_tokenizer(), folder)
    models = [os.environ.get("ATLAS_TEST_MODEL", "classroom"), str(folder)]
    with serve_models(models, folder.parent / "server.log") as url:
        yield url


def test_explorer_model_selector_switches_models(two_model_server, page):
    open_explorer(page, two_model_server, prompt="The cat sat on the mat")
    select = page.locator("#model-select")
    assert select.locator("option").count() == 2
    first = select.input_value()
    big = page.locator("#head-grid .thumb").count()
    select.select_option("tiny")
    page.wait_for_function("() => new URLSearchParams(location.search).get('model') === 'tiny'")
    page.wait_for_function(
        "() => document.querySelectorAll('#head-grid .thumb').length === 8"
    )  # 2 layers x 4
    assert page.locator("#head-grid .hg-band").count() == 2  # 4 query heads share 2 K/V heads
    history_step(page, -1)
    page.wait_for_function(
        "(n) => document.querySelectorAll('#head-grid .thumb').length === n", arg=big, polling=100
    )
    # Read in the page, not through a locator: twice in five runs (Chromium 156) a locator read right after
    # a history step waited 60 s for the server-rendered #model-select (see history_step).
    assert page.evaluate("() => document.getElementById('model-select').value") == first != "tiny"


def test_explorer_modules_decode_what_the_api_sends(live_server, page):
    """attention.js against the server's own numbers: the thumbnails of a short prompt decode to
    /api/head's exact pattern within half a quantisation step, a long prompt's preview holds each
    block's largest exact weight, hiding the sink renormalises rows to 1, and the token strip's display
    strings turn back into the prompt (what "append" relies on)."""
    prompt = "The cat sat on the mat.\nThe cat  sat"
    open_explorer(page, live_server, prompt=prompt)
    result = page.evaluate(
        """async (prompt) => {
             const api = await import('/static/js/lib/api.js');
             const { decodeThumbnails, withoutSink } = await import('/static/js/lib/attention.js');
             const { displayToText } = await import('/static/js/views/tokens.js');
             const t = await api.trace({ prompt });
             const att = decodeThumbnails(t.thumbnails);
             let worst = 0, rowErr = 0;
             for (const [layer, head] of [[0, 0], [1, 5], [att.nLayer - 1, att.nHead - 1]]) {
               const exact = (await api.head({ prompt, layer, head })).pattern.flat();
               const m = att.matrix(layer, head);
               exact.forEach((v, k) => { worst = Math.max(worst, Math.abs(v - m[k])); });
               const n = att.n, r = withoutSink(Float32Array.from(exact), n);
               for (let i = 1; i < n; i++) {
                 if (Number.isNaN(r[i * (n - 1)])) continue;  // all weight on the sink: nothing to rescale
                 let s = 0;
                 for (let j = 0; j < n - 1; j++) s += r[i * (n - 1) + j] || 0;
                 rowErr = Math.max(rowErr, Math.abs(s - 1));
               }
             }
             // A long prompt: each token pair's preview is the largest exact weight of its block.
             const long = prompt.repeat(8);
             const pooled = decodeThumbnails((await api.trace({ prompt: long })).thumbnails);
             const exact = (await api.head({ prompt: long, layer: 1, head: 2 })).pattern;
             const m = pooled.matrix(1, 2), n = pooled.n, b = pooled.block;
             let poolErr = 0;
             for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) {
               let big = 0;
               for (let a = Math.floor(i / b) * b; a < Math.min(n, Math.floor(i / b) * b + b); a++)
                 for (let c = Math.floor(j / b) * b; c < Math.min(n, Math.floor(j / b) * b + b); c++)
                   big = Math.max(big, exact[a][c]);
               poolErr = Math.max(poolErr, Math.abs(m[i * n + j] - big));
             }
             return { worst, rowErr, causal: att.causal, text: t.tokens.map(displayToText).join(''), poolErr,
                      block: b, side: pooled.side };
           }""",
        prompt,
    )
    # A thumbnail byte is within half a step of 1/255 of the weight; /api/head's "exact" weight is itself
    # within half a step of 1/65535 (uint16 on the wire), so the two may differ by both half steps.
    bound = 0.5 / 255 + 0.5 / 65535
    assert result["causal"]
    assert result["worst"] <= bound
    assert result["rowErr"] < 1e-4
    assert result["text"] == prompt
    assert result["block"] > 1 and result["side"] <= 48 and result["poolErr"] <= bound
