"""Typing on the explorer: a keystroke is sent at once when nothing is in flight; while an answer is
pending, only the newest text waits, and it is sent as soon as that answer arrives."""

from __future__ import annotations

import pytest

from tests.browser.test_browser_explorer import api_trace, open_explorer, wait_tokens
from tests.browser.test_browser_generate import SETTLED

pytestmark = pytest.mark.browser

# Every /api/trace answer is held back 600 ms in the page, so keystrokes pile up behind it; the page's
# requests are recorded with the time they were sent and how many were in flight at that moment.
SLOW_SERVER = """(() => {
  const real = window.fetch;
  window.__sent = [];
  let inFlight = 0;
  window.fetch = async (url, init) => {
    if (!String(url).endsWith('/api/trace')) return real(url, init);
    inFlight += 1;
    window.__sent.push({ prompt: JSON.parse(init.body).prompt, t: performance.now(), inFlight });
    try {
      const res = await real(url, init);
      await new Promise((r) => setTimeout(r, 600));
      return res;
    } finally {
      inFlight -= 1;
    }
  };
})()"""


def test_typing_sends_at_once_and_only_the_newest_text_waits(live_server, page):
    start = "The cat sat"
    page.add_init_script(SLOW_SERVER)
    open_explorer(page, live_server, prompt=start)
    wait_tokens(page, api_trace(live_server, start)["tokens"])
    page.wait_for_function(SETTLED, arg=start)  # Plotly loaded and drawn: the page is idle
    page.evaluate(
        """() => { window.__sent = [];
             document.getElementById('prompt').addEventListener('keydown', () => { window.__k0 = performance.now(); },
                                                                { capture: true, once: true }); }"""
    )
    box = page.locator("#prompt")
    box.focus()
    page.keyboard.press("End")
    box.press_sequentially(" on the mat", delay=30)
    final = start + " on the mat"
    wait_tokens(page, api_trace(live_server, final)["tokens"])
    sent = page.evaluate("() => window.__sent")
    assert sent[0]["prompt"] == start + " "  # the first keystroke went out at once, no pause
    assert sent[0]["t"] - page.evaluate("() => window.__k0") < 150
    assert max(s["inFlight"] for s in sent) == 1  # never two traces at a time
    assert sent[-1]["prompt"] == final  # the newest text won
    assert len(sent) <= 4  # 11 keystrokes in ~0.4 s: the ones typed while waiting were replaced
