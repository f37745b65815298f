"""The head grid at the sizes of the models the field teaches with: GPT-2 small's 12 x 12 heads,
Qwen2.5-0.5B's 24 x 14 with 2 K/V heads and Llama-3.2-1B's 16 x 32 with 8 K/V heads, on random-weight
models of those head layouts (tiny widths, so they load and run fast). The grid must fit the window,
reach every layer, move by keyboard, and keep the open head in view."""

from __future__ import annotations

import os
import statistics

import pytest
import torch

from model import ModelConfig, Tokenizer, Transformer
from model.loading import bundled_path, save
from tests.browser_conftest import shoot
from tests.servers import serve_models

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (1366, 768), (1920, 1080)]
# name -> the real head layout (layers, query heads, K/V heads) at a width that runs in milliseconds
MODELS = {
    "llama-16x32": dict(arch="llama", n_layer=16, n_head=32, n_kv_head=8, d_model=128, d_ff=128),
    "gpt2-12x12": dict(arch="gpt2", n_layer=12, n_head=12, n_kv_head=12, d_model=96, d_ff=128),
    "qwen-24x14": dict(
        arch="llama", n_layer=24, n_head=14, n_kv_head=2, d_model=112, d_ff=128, qkv_bias=True
    ),
}
MIN_THUMB = {False: 28, True: 36}  # --hg-min-thumb-px in app.css: normal and presenter mode


def save_random(folder, seed: int = 0, **shape) -> None:
    """A random model in our format with the bundled tokenizer; q and k scaled up so that the heads'
    patterns are sharp (distinct pictures, as a trained model's are)."""
    tokenizer = Tokenizer.from_file(bundled_path("classroom") / "tokenizer.json")
    torch.manual_seed(seed)
    net = Transformer(ModelConfig(vocab_size=tokenizer.vocab_size, context_length=256, **shape))
    net.init_weights(seed)
    with torch.no_grad():
        for block in net.blocks:
            block.attn.q_proj.weight.mul_(8)
            block.attn.k_proj.weight.mul_(8)
    save(net.eval(), tokenizer, folder)


@pytest.fixture(scope="module")
def many_heads(tmp_path_factory):
    root = tmp_path_factory.mktemp("many-heads")
    for name, shape in MODELS.items():
        save_random(root / name, **shape)
    with serve_models([str(root / name) for name in MODELS], root / "server.log") as url:
        yield url


def open_model(pages, url, model, size=(1280, 720), presenter=False, **query):
    page = pages(*size)
    page.add_init_script(f"localStorage.setItem('atlas.presenter', '{1 if presenter else 0}')")
    extra = "".join(f"&{k}={v}" for k, v in query.items())
    page.goto(f"{url}/?model={model}{extra}")
    page.wait_for_selector("#head-grid[data-settled]")
    page.wait_for_function("() => !document.querySelector('#head-grid').hasAttribute('data-painting')")
    return page


# Where head (l, h) is, and where the grid's box shows pictures: inside the box's border, below the sticky
# head labels and right of the sticky layer labels. (Headless Chromium draws no scroll bars, so the
# border box is what shows; clientWidth would leave out a gutter that is not painted.)
HEAD_VIEW = """([l, h]) => {
  const g = document.querySelector('#head-grid');
  const box = g.getBoundingClientRect();
  const b = g.querySelector(`.thumb[data-layer="${l}"][data-head="${h}"] canvas`).getBoundingClientRect();
  const top = g.querySelector('.hg-cover').getBoundingClientRect().bottom;
  const left = g.querySelector('.hg-side').getBoundingClientRect().right;
  return { head: [b.left, b.top, b.right, b.bottom],
           view: [Math.max(box.left + g.clientLeft, left), Math.max(box.top + g.clientTop, top),
                  box.right - g.clientLeft, box.bottom - g.clientTop] };
}"""


def head_in_view(page, layer: int, head: int) -> bool:
    r = page.evaluate(HEAD_VIEW, [layer, head])
    (x0, y0, x1, y1), (v0, w0, v1, w1) = r["head"], r["view"]
    return v0 - 0.5 <= x0 and x1 <= v1 + 0.5 and w0 - 0.5 <= y0 and y1 <= w1 + 0.5


def focused(page) -> tuple[int, int]:
    d = page.evaluate("() => ({ ...document.activeElement.dataset })")
    return int(d["layer"]), int(d["head"])


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("model", list(MODELS))
def test_grid_fits_the_window_and_reaches_every_layer(many_heads, pages, model, size, presenter):
    shape = MODELS[model]
    L, H, kv = shape["n_layer"], shape["n_head"], shape["n_kv_head"]
    page = open_model(pages, many_heads, model, size, presenter, layer=0, head=0)
    w, h = size
    assert page.locator("#head-grid .thumb").count() == L * H
    assert page.locator("#head-grid .hg-band").count() == (kv if kv < H else 0)
    m = page.evaluate(
        """() => { const g = document.querySelector('#head-grid'), r = g.getBoundingClientRect();
                   const p = document.querySelector('#grid-panel').getBoundingClientRect();
                   const c = g.querySelector('.thumb canvas').getBoundingClientRect();
                   return { box: [r.left, r.top, r.right, r.bottom], panel: [p.left, p.right],
                            thumb: c.width, pageWidth: document.documentElement.scrollWidth }; }"""
    )
    left, top, right, bottom = m["box"]
    assert m["pageWidth"] <= w, "the page scrolls sideways"
    assert m["panel"][0] <= left and right <= m["panel"][1], "the grid leaves its panel"
    assert bottom <= h, f"the grid's box ends below the window ({bottom} > {h})"
    assert m["thumb"] >= MIN_THUMB[presenter], "thumbnails below the readable size"
    assert head_in_view(page, 0, 0)
    shoot(page, f"grid-{model}-{'presenter' if presenter else 'normal'}", full_page=False)
    # The last layer is reachable: scroll the box to its end, its label stays beside it, a click opens it.
    page.evaluate(
        "() => { const g = document.querySelector('#head-grid'); g.scrollTop = g.scrollLeft = 1e6; }"
    )
    assert head_in_view(page, L - 1, H - 1)
    label = page.locator("#head-grid .hg-layer", has_text=f"L{L - 1}").bounding_box()
    assert label["x"] >= left - 0.5 and label["y"] + label["height"] <= bottom
    page.locator(f'#head-grid .thumb[data-layer="{L - 1}"][data-head="{H - 1}"]').click()
    page.wait_for_function(
        "(t) => document.querySelector('#detail-title').textContent.startsWith(t)",
        arg=f"Layer {L - 1}, head {H - 1}",
    )
    assert head_in_view(page, L - 1, H - 1)
    shoot(page, f"grid-{model}-end-{'presenter' if presenter else 'normal'}", full_page=False)


@pytest.mark.parametrize("model", list(MODELS))
def test_grid_is_one_tab_stop_that_arrows_page_and_enter_move_through(many_heads, pages, model):
    L, H = MODELS[model]["n_layer"], MODELS[model]["n_head"]
    page = open_model(pages, many_heads, model, layer=0, head=0)
    page.locator("#grid-png").focus()
    page.keyboard.press("Tab")  # into the grid: the open head holds the tab stop
    assert focused(page) == (0, 0)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert focused(page) == (1, 1)
    page.keyboard.press("End")
    assert focused(page) == (1, H - 1) and head_in_view(page, 1, H - 1)
    page.keyboard.press("PageDown")  # as many layers as the box shows
    layer, head = focused(page)
    assert layer > 2 and head == H - 1 and head_in_view(page, layer, head)
    page.keyboard.press("Control+End")
    assert focused(page) == (L - 1, H - 1) and head_in_view(page, L - 1, H - 1)
    page.keyboard.press("Home")
    assert focused(page) == (L - 1, 0) and head_in_view(page, L - 1, 0)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowUp")
    assert focused(page) == (L - 2, 1)
    assert page.locator("#head-grid .thumb[tabindex='0']").count() == 1
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(t) => document.querySelector('#detail-title').textContent.startsWith(t)",
        arg=f"Layer {L - 2}, head 1",
    )
    assert page.locator(f'#head-grid .thumb.open[data-layer="{L - 2}"][data-head="1"]').count() == 1
    page.keyboard.press("Control+Home")
    assert focused(page) == (0, 0) and head_in_view(page, 0, 0)
    page.keyboard.press("Tab")  # and out again with one Tab
    assert page.evaluate("() => document.activeElement.closest('#head-grid') === null")


def test_typing_keeps_the_open_head_selected_and_in_view(many_heads, pages):
    page = open_model(pages, many_heads, "llama-16x32", layer=15, head=31)
    assert head_in_view(page, 15, 31)  # scrolled to it on load
    seq = page.locator("#head-grid").get_attribute("data-seq")
    page.locator("#prompt").press("End")
    page.locator("#prompt").press_sequentially(" went home", delay=30)
    page.wait_for_function(
        "(s) => { const g = document.querySelector('#head-grid'); return g.dataset.settled === g.dataset.seq && g.dataset.seq !== s; }",
        arg=seq,
    )
    assert page.locator("#prompt").input_value().endswith("went home")
    assert page.locator("#head-grid .thumb.open").count() == 1
    assert page.locator('#head-grid .thumb.open[data-layer="15"][data-head="31"]').count() == 1
    assert head_in_view(page, 15, 31)
    assert page.locator("#detail-title").inner_text().startswith("Layer 15, head 31")
    # Zoom in: larger pictures, and the open head still in view.
    before = page.evaluate(
        "() => document.querySelector('#head-grid .thumb canvas').getBoundingClientRect().width"
    )
    page.locator("#grid-larger").click()
    page.wait_for_function(
        "(w) => document.querySelector('#head-grid .thumb canvas').getBoundingClientRect().width > w",
        arg=before,
    )
    assert head_in_view(page, 15, 31)
    shoot(page, "grid-llama-16x32-typed-zoomed", full_page=False)


def test_grid_paints_the_heads_in_view_first_then_the_rest(many_heads, pages):
    """512 heads at n = 128: the heads the box shows are painted in the call that draws the grid, the
    others in the frames after (so the first frame does not wait for them); prints the paint time."""
    prompt = " ".join(f"The cat {k} sat on the mat." for k in range(16))
    page = open_model(pages, many_heads, "llama-16x32")
    r = page.evaluate(
        """async (prompt) => {
             const api = await import('/static/js/lib/api.js');
             const { decodeThumbnails } = await import('/static/js/lib/attention.js');
             const grid = await import('/static/js/views/grid.js');
             const t = await api.trace({ prompt, model: 'llama-16x32' });
             const el = document.getElementById('head-grid');
             const blank = (c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                                    const s = new Set(); for (let i = 0; i < d.length; i += 4) s.add(d[i] * 65536 + d[i + 1] * 256 + d[i + 2]);
                                    return s.size < 3; };
             const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
             const times = [];
             let firstPaint = null;
             for (let i = 0; i < 9; i++) {
               await frame();
               for (const c of el.querySelectorAll('canvas')) c.getContext('2d').clearRect(0, 0, c.width, c.height);
               const att = decodeThumbnails(t.thumbnails);  // a new object each time: nothing cached
               const t0 = performance.now();
               grid.renderGrid(el, { att, nKvHead: 8, open: { layer: 15, head: 31 }, highlight: null });
               if (firstPaint === null) firstPaint = [...el.querySelectorAll('.thumb')].map((b) => !blank(b.querySelector('canvas')));
               await frame();
               times.push(performance.now() - t0);
             }
             while (el.hasAttribute('data-painting')) await frame();
             const all = [...el.querySelectorAll('canvas')].every((c) => !blank(c));
             return { n: t.n, times, firstPaint, all, open: firstPaint[15 * 32 + 31], corner: firstPaint[0] };
           }""",
        prompt,
    )
    assert 120 <= r["n"] <= 140
    assert r["open"] and not r["corner"]  # the box shows the open head (bottom right), not L0H0
    assert r["all"]
    ms = statistics.median(r["times"][1:])
    print(
        f"\n512 heads at n={r['n']}: decoded trace -> grid in the next frame, median {ms:.0f} ms "
        f"({sum(r['firstPaint'])} heads in view painted first; load {os.getloadavg()[0]:.1f})"
    )
