"""No chart on any page offers to upload itself: Plotly's "Share chart" (cloud) button would send the
chart, and the student's prompt with it, to an outside service. The PNG camera stays."""

from __future__ import annotations

import json
import re

import pytest

from app.pages import PAGES

pytestmark = pytest.mark.browser

CLOUD = re.compile(r"cloud|share|chart studio|edit in|plotly\.com", re.IGNORECASE)

# Every mode-bar button of every Plotly chart on the page: its title and its data-attr/data-val.
BUTTONS = """() => [...document.querySelectorAll('.js-plotly-plot')].map((plot) => ({
  id: plot.id || plot.className,
  buttons: [...plot.querySelectorAll('.modebar-btn')].map((b) =>
    [b.getAttribute('data-title') || '', b.getAttribute('data-attr') || '', b.getAttribute('data-val') || '',
     b.getAttribute('href') || ''].join(' ')),
}))"""


@pytest.mark.parametrize("path", [p.path for p in PAGES])
def test_no_plotly_chart_offers_a_cloud_or_share_button(live_server, page, path):
    page.goto(live_server + path)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(1500)  # charts drawn after the first paint (the explorer loads Plotly late)
    plots = page.evaluate(BUTTONS)
    if page.evaluate("() => Boolean(window.Plotly)"):
        assert plots, f"{path} loaded Plotly but no chart was drawn"
    for plot in plots:
        offers = [b for b in plot["buttons"] if CLOUD.search(b)]
        assert not offers, f"{path} {plot['id']}: {offers}"
        assert any("png" in b.lower() for b in plot["buttons"]), f"{path} {plot['id']} lost its PNG button"
    assert not page.blocked  # and nothing tried to leave the machine


def test_overlapping_draws_of_one_chart_finish(live_server, page):
    """Two draws of one chart asked for before the first has ended, with different configs (our PNG file
    name follows the token or head shown), both finish. Plotly.react answers a changed config with
    newPlot and then react again; two such calls in flight undo each other forever in promise callbacks
    that never yield, and the tab froze (the explorer, after a model switch and Back).

    A frozen tab answers no driver call (not even a wait with a timeout, whose timer runs in the page),
    so the draws start from a timer after the evaluate has returned, the page reports through the
    console, and the test only sleeps in the driver until then; a tab still frozen after 15 s has its
    script stopped through DevTools so the test can fail and close it."""
    page.goto(live_server + "/")
    page.wait_for_selector("#head-grid .thumb")
    devtools = page.context.new_cdp_session(page)  # opened now: a frozen tab could not attach one
    reports = []
    page.on("console", lambda m: m.text.startswith("overlap:") and reports.append(json.loads(m.text[8:])))
    page.evaluate(
        """async () => {
             const { config, react } = await import('/static/js/lib/plot.js');
             const el = document.createElement('div');
             el.style.width = '400px';
             el.style.height = '300px';
             document.body.append(el);
             const trace = (k) => [{ type: 'bar', x: [1, 2, 3], y: [k, 2, 1] }];
             await react(el, trace(1), {}, config('first'));
             setTimeout(async () => {
               const settled = await Promise.allSettled(
                 [react(el, trace(2), {}, config('second')), react(el, trace(3), {}, config('third'))]);
               console.log('overlap:' + JSON.stringify({
                 failed: settled.filter((s) => s.status === 'rejected').map((s) => String(s.reason)),
                 y0: el.data[0].y[0], file: el._context.toImageButtonOptions.filename,
               }));
               el.remove();
             }, 100);
           }"""
    )
    for _ in range(150):
        if reports:
            break
        page.wait_for_timeout(100)  # a sleep in the driver: it needs nothing from the page
    else:
        devtools.send("Runtime.terminateExecution")
        pytest.fail("two overlapping draws of one chart froze the tab for 15 s")
    assert reports[0]["failed"] == [], reports
    assert (reports[0]["y0"], reports[0]["file"]) == (3, "third")  # the newest draw stays on screen
