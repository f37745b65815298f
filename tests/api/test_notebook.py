"""`show(...)` puts the offline lesson views in an isolated iframe a notebook can display."""

import html
import re

from app.export import lesson_html
from app.notebook import show


def test_notebook_show_is_an_iframe_srcdoc_of_the_lesson_file(tiny_lm):
    out = show(tiny_lm, "The cat sat on the mat")._repr_html_()
    frame = re.fullmatch(
        r'<iframe srcdoc="([^"]*)" sandbox="allow-scripts" style="[^"]*" title="[^"]*"></iframe>', out
    )
    assert frame, out[:200]
    page = html.unescape(frame[1])
    assert page == lesson_html(tiny_lm, "The cat sat on the mat")
    assert 'id="head-grid"' in page and 'id="atlas-data"' in page and "renderGrid" in page
    assert not re.search(r"https?://", out)


def test_notebook_token_text_stays_text(tiny_lm):
    page = lesson_html(tiny_lm, "</script><b>x</b> https://example.org")
    data = page.split('id="atlas-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and "https://" not in data  # escaped: cannot close the element or read as a URL
