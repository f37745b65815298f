"""Keystroke to rendered head grid in headless Chromium, at n = 128 tokens, on the Explorer page.

The page marks a drawn grid by setting `#head-grid[data-seq]` and dispatching `atlas:grid` (with its
own fetch and draw times) right after the canvases are drawn; we time from the keystroke's `keydown`
to the first animation frame after that event, all with the page's own clock (no driver round trips).

Two keystrokes are measured:
- Enter: the page sends the request at once (no debounce);
- a typed character: the page waits for a pause in typing (its debounce) before it sends.
"""

from __future__ import annotations

from urllib.parse import quote

from model import load

from .fixture import Prompts, served_model
from .server import serve
from .timing import median, percentile

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
N = 128
TARGET_MS = 150

PROBE = """() => {
  window.__bench = null;
  const input = document.getElementById("prompt");
  const onKey = () => { window.__t0 = performance.now(); };
  input.addEventListener("keydown", onKey, { capture: true, once: true });
  window.addEventListener("atlas:grid", (e) => {
    // rAF, then a task: runs just after the frame holding the new grid has been painted.
    requestAnimationFrame(() => setTimeout(() => {
      window.__bench = { ms: performance.now() - window.__t0, fetchMs: e.detail.fetchMs,
                         drawMs: e.detail.drawMs, n: e.detail.n };
    }, 0));
  }, { once: true });
}"""


def one(page, prompt: str, how: str) -> dict:
    """Put `prompt` in the box with its last character still to type, then press the keystroke."""
    box = page.locator("#prompt")
    head, last = (prompt, "Enter") if how == "enter" else (prompt[:-1], prompt[-1])
    seq = page.locator("#head-grid").get_attribute("data-seq")
    box.fill(head)
    if how != "enter":  # let the page answer the filled text first, so only the keystroke is timed
        page.wait_for_function(
            "(s) => document.getElementById('head-grid').dataset.seq !== s", arg=seq, timeout=60000
        )
        page.wait_for_timeout(50)
    page.evaluate(PROBE)
    page.keyboard.press(last)
    page.wait_for_function("() => window.__bench !== null", timeout=60000)
    return page.evaluate("() => window.__bench")


def run(quick: bool = True) -> dict:
    from playwright.sync_api import sync_playwright

    model, label = served_model()
    prompts = Prompts(load(model))
    reps = 5 if quick else 20
    out = {"model": label, "n": N, "target_ms": TARGET_MS}
    with serve(model) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(server["url"]) else r.abort())
        page.goto(f"{server['url']}/?prompt={quote(prompts.take(N))}")
        page.wait_for_selector("#head-grid[data-seq]", timeout=120000)
        for how in ("enter", "char"):
            one(page, prompts.take(N), how)  # warm-up
            samples = [one(page, prompts.take(N), how) for _ in range(reps)]
            ms = [s["ms"] for s in samples]
            out[how] = {
                "reps": reps, "n": median([s["n"] for s in samples]), "p50_ms": median(ms),
                "p99_ms": percentile(ms, 99), "fetch_p50_ms": median([s["fetchMs"] for s in samples]),
                "draw_p50_ms": median([s["drawMs"] for s in samples]),
            }  # fmt: skip
        out["chromium"] = browser.version
        browser.close()
    return out


def table(result: dict) -> list[str]:
    lines = [f"Keystroke to painted head grid, headless Chromium {result.get('chromium', '')}, {result['model']}",
             f"{'keystroke':>22} {'n':>5} {'reps':>4} {'p50 ms':>8} {'p99 ms':>8} {'fetch ms':>9} {'draw ms':>8}"]  # fmt: skip
    for how, name in (("enter", "Enter (no debounce)"), ("char", "typed char (debounced)")):
        r = result[how]
        lines.append(f"{name:>22} {r['n']:>5.0f} {r['reps']:>4} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
                     f"{r['fetch_p50_ms']:>9.1f} {r['draw_p50_ms']:>8.1f}")  # fmt: skip
    return lines


def verdicts(result: dict) -> list[str]:
    out = []
    for how in ("enter", "char"):
        p50 = result[how]["p50_ms"]
        ok = "met" if p50 < TARGET_MS else f"MISSED by {p50 - TARGET_MS:.0f} ms"
        out.append(f"keystroke target ({how}, n={result['n']}): p50 {p50:.0f} ms < {TARGET_MS} ms: {ok}")
    return out
