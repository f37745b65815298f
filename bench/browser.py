"""Typed character to painted head grid in headless Chromium, at n = 128 tokens, on the Explorer page.

The page sends a keystroke's text at once when no trace is in flight. It marks a drawn grid by
setting `#head-grid[data-seq]` and dispatching `atlas:grid` (with the prompt it drew, whether a newer
keystroke had superseded it, and its own fetch and draw times) right after the canvases are drawn, and
sets `#head-grid[data-settled]` when the slower Plotly views are drawn too. Each sample:

1. fills the box with a fresh 128-token passage minus its last character and waits until the page has
   drawn everything for it (so the keystroke starts from a quiet page, as a student's next key would);
2. types the last character as a real key press, and times from its `keydown` to the first animation
   frame after the grid for the full text is drawn, all with the page's own clock (no driver round trips).

The load average of the machine is recorded before and after, because a shared machine changes the
figure more than anything in the page does.
"""

from __future__ import annotations

import os
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

# Resolves with the timing of the grid that shows `text`; installed before the key is pressed.
PROBE = """(text) => {
  window.__bench = null;
  const input = document.getElementById("prompt");
  input.addEventListener("keydown", () => { window.__t0 = performance.now(); }, { capture: true, once: true });
  const onGrid = (e) => {
    if (e.detail.stale || e.detail.prompt !== text) return;
    window.removeEventListener("atlas:grid", onGrid);
    // rAF, then a task: runs just after the frame holding the new grid has been painted.
    requestAnimationFrame(() => setTimeout(() => {
      window.__bench = { ms: performance.now() - window.__t0, fetchMs: e.detail.fetchMs,
                         drawMs: e.detail.drawMs, n: e.detail.n };
    }, 0));
  };
  window.addEventListener("atlas:grid", onGrid);
}"""

SETTLED = """(seq) => {
  const g = document.getElementById('head-grid');
  return g.dataset.settled !== undefined && g.dataset.settled === g.dataset.seq && g.dataset.seq !== seq;
}"""


def load_average() -> float:
    return os.getloadavg()[0]


def one(page, prompt: str) -> dict:
    """Fill all but the last character, let the page settle, then type the last character."""
    box = page.locator("#prompt")
    seq = page.locator("#head-grid").get_attribute("data-seq")
    box.fill(prompt[:-1])
    page.wait_for_function(SETTLED, arg=seq, timeout=60000)
    page.wait_for_timeout(100)  # idle, as between a student's keys
    page.evaluate(PROBE, prompt)
    page.keyboard.press(prompt[-1])
    page.wait_for_function("() => window.__bench !== null", timeout=60000)
    return page.evaluate("() => window.__bench")


def run(quick: bool = True) -> dict:
    from playwright.sync_api import sync_playwright

    model, label = served_model()
    prompts = Prompts(load(model))
    reps = 20 if quick else 40
    out = {"model": label, "n": N, "target_ms": TARGET_MS, "cores": os.cpu_count()}
    with serve(model) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(server["url"]) else r.abort())
        page.goto(f"{server['url']}/?prompt={quote(prompts.take(N))}")
        page.wait_for_selector("#head-grid[data-settled]", timeout=120000)
        page.locator("#prompt").focus()
        for _ in range(2):
            one(page, prompts.take(N))  # warm-up: Plotly parsed, the server's first requests done
        out["load_before"] = load_average()
        samples = [one(page, prompts.take(N)) for _ in range(reps)]
        out["load_after"] = load_average()
        ms = [s["ms"] for s in samples]
        out["char"] = {
            "reps": reps, "n": median([s["n"] for s in samples]), "p50_ms": median(ms),
            "p95_ms": percentile(ms, 95), "fetch_p50_ms": median([s["fetchMs"] for s in samples]),
            "draw_p50_ms": median([s["drawMs"] for s in samples]),
        }  # fmt: skip
        out["chromium"] = browser.version
        browser.close()
    return out


def table(result: dict) -> list[str]:
    r = result["char"]
    return [
        f"Typed character to painted head grid, headless Chromium {result.get('chromium', '')}, {result['model']}",
        f"machine load average (1 min) {result['load_before']:.2f} before, {result['load_after']:.2f} after, "
        f"on {result['cores']} cores",
        f"{'n':>5} {'reps':>4} {'p50 ms':>8} {'p95 ms':>8} {'fetch p50 ms':>13} {'draw p50 ms':>12}",
        f"{r['n']:>5.0f} {r['reps']:>4} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} {r['fetch_p50_ms']:>13.1f} "
        f"{r['draw_p50_ms']:>12.1f}",
    ]


def verdicts(result: dict) -> list[str]:
    p50 = result["char"]["p50_ms"]
    ok = "met" if p50 < TARGET_MS else f"MISSED by {p50 - TARGET_MS:.0f} ms"
    return [
        f"typed character to grid (n={result['n']}, load {result['load_before']:.1f}): p50 {p50:.0f} ms "
        f"< {TARGET_MS} ms: {ok}"
    ]
