"""The head atlas in the browser: badges and the role filter on the explorer's grid, the atlas page
listing heads by role, and knocking heads out from both pages (fixtures: tests/browser_conftest.py)."""

from __future__ import annotations

import re

import pytest

from tests.browser_conftest import get_json, shoot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROMPT = "Lily had a red ball. She"


@pytest.fixture(scope="module")
def roles(live_server) -> dict:
    return get_json(live_server + "/api/heads")


@pytest.fixture
def page(page):
    # The first atlas and knock-out requests run the model many times; on a busy 2-core machine that
    # can take longer than Playwright's default 30 s.
    page.set_default_timeout(120_000)
    return page


def labelled_role(roles: dict) -> dict:
    """The role with the most labelled heads that is not the sink (most telling on the grid)."""
    with_heads = [r for r in roles["roles"] if r["heads"]]
    assert with_heads, "the served model labels no head with any role"
    return max(
        with_heads, key=lambda r: (r["key"] != "first_token", r["key"] == "induction", len(r["heads"]))
    )


def test_grid_shows_role_badges_and_filters_by_role(live_server, page, roles):
    page.goto(f"{live_server}/?prompt={PROMPT}")
    page.wait_for_selector("#head-grid[data-roles]")
    n_labels = sum(len(keys) for row in roles["labels"] for keys in row)
    assert page.locator("#head-grid .badge").count() == n_labels > 0
    # Each badged thumbnail carries the badges of exactly its roles.
    first = next((la, h) for la, row in enumerate(roles["labels"]) for h, keys in enumerate(row) if keys)
    thumb = page.locator(f'.thumb[data-layer="{first[0]}"][data-head="{first[1]}"] .badge')
    assert thumb.count() == len(roles["labels"][first[0]][first[1]])

    role = labelled_role(roles)
    page.select_option("#role-filter", role["key"])
    kept = page.locator("#head-grid .thumb:not(.role-out)")
    assert kept.count() == len(role["heads"])
    shown = {(int(kept.nth(i).get_attribute("data-layer")), int(kept.nth(i).get_attribute("data-head")))
             for i in range(kept.count())}  # fmt: skip
    assert shown == {(h["layer"], h["head"]) for h in role["heads"]}
    assert f"role={role['key']}" in page.url
    shoot(page, "explorer-roles", full_page=False)
    page.select_option("#role-filter", "")
    assert page.locator("#head-grid .thumb.role-out").count() == 0


def test_atlas_lists_heads_by_role_on_their_probes(live_server, page, roles):
    page.goto(f"{live_server}/atlas")
    page.wait_for_selector("#atlas-roles[data-drawn]")
    sections = page.locator(".role-section")
    assert sections.count() == len(roles["roles"])
    for i, role in enumerate(roles["roles"]):
        sec = sections.nth(i)
        assert sec.get_attribute("data-role") == role["key"]
        assert role["explanation"] in sec.inner_text()
        assert role["status"] in sec.inner_text()  # who earned it with what evidence, or why no head did
        cards = sec.locator(".head-card")
        if role["heads"]:
            names = [cards.nth(k).locator(".head-card-name").inner_text() for k in range(cards.count())]
            assert names == [f"L{h['layer']}H{h['head']}" for h in role["heads"]]
        else:
            assert cards.count() == 1 and sec.locator(".head-card.near").count() == 1
    # The pictures are drawn (not blank): a canvas pixel in the lower triangle is not the page white.
    lit = page.evaluate(
        """() => { const c = document.querySelector('.head-card canvas');
                   const d = c.getContext('2d').getImageData(2, c.height - 3, 1, 1).data;
                   return [d[0], d[1], d[2]]; }"""
    )
    assert lit != [255, 255, 255]
    shoot(page, "atlas")

    role = labelled_role(roles)
    page.click(f'.chip[data-role="{role["key"]}"]')
    assert page.locator(".role-section").count() == 1
    assert page.locator(".role-section").get_attribute("data-role") == role["key"]


def read_probs(page, column: int, where: str = "") -> list[float]:
    """The probabilities a knock-out table shows in a column (exact values from the cells' tooltips)."""
    cells = page.locator(f"{where} .ko-table tbody tr td:nth-child({column})")
    return [float(cells.nth(i).get_attribute("title").split()[-1]) for i in range(cells.count())]


def test_atlas_knockout_changes_the_shown_probabilities(live_server, page, roles):
    role = labelled_role(roles)
    best = role["heads"][0]
    page.goto(f"{live_server}/atlas")  # the knock-out panel starts with its own default prompt
    page.wait_for_selector("#atlas-roles[data-drawn]")
    prompt = page.input_value("#ko-prompt")
    assert prompt
    page.click(f'.role-section[data-role="{role["key"]}"] .head-card >> nth=0 >> .ko-button')
    page.wait_for_selector("#ko-result .ko-table")
    api = get_json(live_server + "/api/heads/ablation",
                   {"prompt": prompt, "heads": [[best["layer"], best["head"]]], "top_k": 6})  # fmt: skip
    text = page.inner_text("#ko-result")
    assert api["prompt"]["sentence"] in text and api["repeat"]["sentence"] in text
    intact, ablated = read_probs(page, 2, "#ko-result"), read_probs(page, 3, "#ko-result")
    assert intact == [r["intact"] for r in api["prompt"]["rows"]]
    assert ablated == [r["ablated"] for r in api["prompt"]["rows"]] and intact != ablated
    tokens = page.locator(".ko-table .ko-token").all_inner_texts()
    assert tokens == [r["token"] for r in api["prompt"]["rows"]]
    shoot(page, "atlas-knockout")

    # A whole role group, in mean mode: the page shows the heads it knocked out.
    page.click(f'.role-section[data-role="{role["key"]}"] .panel-head .ko-button')
    page.click('#ko-panel [data-mode="mean"]')
    names = ", ".join(f"L{h['layer']}H{h['head']}" for h in role["heads"])
    page.wait_for_function(
        "t => document.getElementById('ko-target').textContent.includes(t)", arg=f"{names} (mean ablation)"
    )


def test_explorer_head_detail_knocks_the_head_out(live_server, page, roles):
    role = labelled_role(roles)
    h = role["heads"][0]
    page.goto(f"{live_server}/?prompt={PROMPT}&layer={h['layer']}&head={h['head']}")
    page.wait_for_selector("#head-grid[data-roles]")
    button = page.locator("#head-ko")
    button.wait_for(state="visible")
    assert button.inner_text() == f"Knock out L{h['layer']}H{h['head']}"
    button.click()
    page.wait_for_selector("#head-ko-result .ko-table")
    assert read_probs(page, 2, "#head-ko-result") != read_probs(page, 3, "#head-ko-result")
    assert page.inner_text("#head-ko-result").startswith(f"Without L{h['layer']}H{h['head']}")
    # The head's role scores measured on the prompt itself, as the API gives them.
    on_prompt = get_json(live_server + "/api/heads/prompt", {"prompt": PROMPT})["scores"]
    prev = on_prompt["previous_token"][h["layer"]][h["head"]]
    page.wait_for_function(
        "() => document.querySelector('.roles-on-prompt').textContent.includes('previous-token')"
    )
    assert f"previous-token {prev:.2f}" in page.inner_text(".roles-on-prompt")
    shoot(page, "explorer-knockout", full_page=False)


def test_explorer_prompt_scores_wait_for_the_atlas_when_they_arrive_first(live_server, page, roles):
    """On a busy server /api/heads/prompt can answer before /api/heads: the score line must still name
    the roles once the atlas is here (it once stayed at "...: ." for good, which failed CI)."""
    role = labelled_role(roles)
    h = role["heads"][0]
    held = []
    atlas = re.compile(r"/api/heads(\?.*)?$")
    page.route(atlas, lambda route: held.append(route))  # hold the atlas's answer until the scores are in
    with page.expect_response(lambda r: r.url.endswith("/api/heads/prompt")):
        with page.expect_response(lambda r: r.url.endswith("/api/head")):  # the open head's exact scores
            page.goto(f"{live_server}/?prompt={PROMPT}&layer={h['layer']}&head={h['head']}")
    page.wait_for_function("() => document.querySelector('.roles-on-prompt')")
    assert page.inner_text(".roles-on-prompt") == "", "without role names the line says nothing yet"
    for _ in range(200):  # the page asks for the atlas in the same render; give it up to 10 s
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the page asked for the atlas"
    for route in held:
        route.continue_()
    page.unroute(atlas)
    page.wait_for_selector("#head-grid[data-roles]")
    on_prompt = get_json(live_server + "/api/heads/prompt", {"prompt": PROMPT})["scores"]
    prev = on_prompt["previous_token"][h["layer"]][h["head"]]
    page.wait_for_function(
        "() => document.querySelector('.roles-on-prompt').textContent.includes('previous-token')"
    )
    assert f"previous-token {prev:.2f}" in page.inner_text(".roles-on-prompt")
    # The open head's summary scores are named and explained as /api/heads does it, not by their keys.
    named = [[s["name"], s["explanation"]] for s in roles["head_scores"]]
    page.wait_for_function(
        "named => JSON.stringify([...document.querySelectorAll('#head-scores dt')].map((dt) => [dt.textContent, dt.title]))"
        " === JSON.stringify(named)",
        arg=named,
    )


def test_explorer_says_what_the_atlas_found_about_token_0_and_the_open_head(live_server, page, roles):
    """The caption about token 0 is the server's count on this model; a head without a role says so."""
    la, h = next((la, h) for la, row in enumerate(roles["labels"]) for h, keys in enumerate(row) if not keys)
    page.goto(f"{live_server}/?prompt={PROMPT}&layer={la}&head={h}")
    page.wait_for_selector("#head-grid[data-roles]")
    assert page.inner_text("#sink-fact") == roles["sink_fact"]
    note = page.locator("#detail-panel .head-role-note")
    note.wait_for()
    assert note.inner_text() == roles["head_notes"][la][h] and "has no role" in note.inner_text()
    shoot(page, "explorer-no-role", full_page=False)
    # Open a head that earned a role: the note follows the open head.
    role = labelled_role(roles)
    g = role["heads"][0]
    page.goto(f"{live_server}/?prompt={PROMPT}&layer={g['layer']}&head={g['head']}")
    page.wait_for_selector("#head-grid[data-roles]")
    page.wait_for_function(
        "t => document.querySelector('#detail-panel .head-role-note')?.textContent === t",
        arg=roles["head_notes"][g["layer"]][g["head"]],
    )
    assert role["name"] in page.inner_text("#detail-panel .head-role-note")
