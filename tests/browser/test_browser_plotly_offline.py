"""No chart on any page offers to upload itself: Plotly's "Share chart" (cloud) button would send the
chart, and the student's prompt with it, to an outside service. The PNG camera stays."""

from __future__ import annotations

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
