"""The lesson in the browser: every step walked with the keyboard on the bundled model and on a random
GPT-2-style model (learned positions, no RoPE), each showing a number the API gave; a step survives a
reload from its URL; presenter-mode screenshots of every step at 1366x768 (fixtures: tests/browser_conftest.py)."""

from __future__ import annotations

import math

import pytest

from app.main import create_app
from app.settings import Settings
from tests.api_helpers import save_tiny
from tests.browser_conftest import get_json, history_step, shoot
from tests.servers import serve_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROMPT = "The cat sat on the mat. The cat"
STEPS = ["model", "score", "heads", "gqa", "position", "rope", "block", "induction", "cost"]
STEP_MS = 240_000  # /api/heads measures every role once per model: the first visit can take a while


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = save_tiny(tmp_path_factory.mktemp("lesson") / "tinygpt", arch="gpt2")
    with serve_app(create_app(Settings(models=["classroom", str(folder)]))) as url:
        yield url, folder.name


def pct(p: float) -> str:  # the page's pct()
    return f"{p * 100:.{1 if p < 0.1 else 0}f}%"


def measured(v: float) -> str:  # the page's fmtMeasured() for 0.001 <= |v| < 1000
    return f"{v:.{min(6, max(0, 1 - math.floor(math.log10(abs(v)))))}f}"


def expected_numbers(url: str, model: str) -> dict[str, str]:
    """For each step, one number the page must show, computed here from the API's own answers."""
    post = lambda path, body: get_json(url + path, {"model": model, **body})  # noqa: E731
    info = next(m for m in get_json(url + "/api/models")["models"] if m["name"] == model)
    heads = get_json(f"{url}/api/heads?model={model}")
    roles = {r["key"]: r for r in heads["roles"]}
    prev = (roles["previous_token"]["heads"] or [roles["previous_token"]["best"]])[0]
    anatomy = post("/api/anatomy", {"prompt": PROMPT, "top_k": 3})
    last = len(anatomy["tokens"]) - 1  # the lesson's query is two tokens before the end
    score = post(
        "/api/score", {"prompt": PROMPT, "layer": prev["layer"], "head": prev["head"], "index": last - 2}
    )
    perm = post("/api/permutation", {"prompt": PROMPT, "permutation": "shuffle"})
    on = next(c for c in perm["conditions"] if c["position"] and not c["causal"])
    rope = post("/api/rope", {})
    cost = post("/api/cost", {"n": info["context_length"]})
    live = next(m for m in cost["models"] if m["live"])
    ind = roles["induction"]
    target = (
        {"role": "induction"} if ind["heads"] else {"heads": [[ind["best"]["layer"], ind["best"]["head"]]]}
    )
    ablation = post("/api/heads/ablation", {"prompt": PROMPT, **target})
    return {
        "model": pct(anatomy["pipeline"][-1]["top"][-1][0]["prob"]),
        "score": f"{max(k['weight'] for k in score['keys']):.3f}",
        "heads": f"= {heads['n_layer'] * heads['n_head']} heads",
        "gqa": f"{live['kv_cache']['saving']:.1f}"
        if live["kv_cache"]["saving"] != 1
        else f"{info['n_head']} heads",
        "position": measured(on["head_max_diff"]),
        "rope": f"{rope['clock']['periods'][0]:.1f} positions"
        if rope["clock"]
        else f"0–{info['context_length'] - 1}",
        "block": pct(next(c for c in anatomy["census"] if c["live"])["feed_forward_share"]),
        "induction": f"{ablation['repeat']['second_copy_loss_ablated']:.2f} nats",
        "cost": f"{live['scores']['total']:,}",
    }


def wait_step(page, key: str) -> None:
    page.wait_for_selector(f"body[data-lesson-ready='{key}']", timeout=STEP_MS)


def walk(page, url: str, model: str, shots: str | None = None) -> None:
    numbers = expected_numbers(url, model)
    page.goto(f"{url}/lesson?model={model}&prompt={PROMPT}")
    wait_step(page, STEPS[0])
    keys = ["ArrowRight", "PageDown", " ", "ArrowRight", "PageDown", " ", "ArrowRight", "PageDown"]
    for i, key in enumerate(STEPS):
        if i:
            page.keyboard.press(keys[i - 1])
            wait_step(page, key)
        assert f"step={i + 1}" in page.url or i == 0
        text = page.locator(".lesson-body").inner_text()
        assert numbers[key] in text, f"step {key}: {numbers[key]!r} not in {text!r}"
        assert (
            page.locator("#lesson-view").inner_text().strip() or page.locator("#lesson-view canvas").count()
        )
        assert page.locator("#lesson-error").is_hidden()
        assert page.locator("#lesson-try a").count() == 1
        if key == "score":  # the query sits before the end: the mask shows
            assert page.locator("#lesson-view .score-masked").count() == 2
        if shots:
            shoot(page, f"lesson-{shots}-{i + 1}-{key}", full_page=False)
    # At the last step "next" does nothing; the clicker's "previous" (PageUp) goes back one.
    page.keyboard.press("ArrowRight")
    assert "step=9" in page.url
    page.keyboard.press("PageUp")
    wait_step(page, STEPS[-2])
    assert "step=8" in page.url


@pytest.mark.parametrize("which", ["classroom", "gpt2"])
def test_lesson_walks_every_step_with_the_keyboard(server, pages, which):
    url, gpt2 = server
    model = "classroom" if which == "classroom" else gpt2
    page = pages(1366, 768)
    page.add_init_script("window.localStorage.setItem('atlas.presenter', '1')")
    walk(page, url, model, shots=which)
    fits = page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert fits, "the lesson scrolls sideways at 1366x768 in presenter mode"


def test_lesson_step_survives_a_reload(server, page):
    url, _ = server
    page.goto(f"{url}/lesson?step=6")
    wait_step(page, "rope")
    assert page.locator("#lesson-title").inner_text() == "The RoPE clock"
    page.keyboard.press("ArrowLeft")
    wait_step(page, "position")
    page.reload()
    wait_step(page, "position")
    assert "step=5" in page.url and page.locator(".lesson-dot[aria-current=step]").inner_text() == "5"
    history_step(page, -1)
    wait_step(page, "rope")


def test_lesson_follows_the_model_selector(server, page):
    url, gpt2 = server
    page.goto(f"{url}/lesson?step=4")
    wait_step(page, "gqa")
    models = {m["name"]: m for m in get_json(url + "/api/models")["models"]}
    bundled = models["classroom"]
    share = f"{bundled['n_head']} query heads share {bundled['n_kv_head']} key/value heads"
    assert share in page.locator("#lesson-lead").inner_text()
    page.locator("#model-select").select_option(gpt2)
    heads = models[gpt2]["n_head"]
    page.wait_for_function(
        "t => document.getElementById('lesson-lead').textContent.includes(t)",
        arg=f"every one of the {heads} heads has its own keys and values",
    )
    assert f"model={gpt2}" in page.url and "step=4" in page.url


def test_lesson_keys_do_not_step_while_typing_the_prompt(server, page):
    url, _ = server
    page.goto(f"{url}/lesson?step=2")
    wait_step(page, "score")
    page.locator("#prompt").fill("Lily had a red ball. She")
    page.locator("#prompt").press("ArrowLeft")
    page.locator("#prompt").press(" ")  # typed into the box ("Sh e"), not a step forward
    assert "step=2" in page.url and page.locator("#prompt").input_value() == "Lily had a red ball. Sh e"
    page.locator("#prompt").press("Enter")
    page.locator("#prompt").blur()
    tokens = get_json(url + "/api/anatomy", {"prompt": "Lily had a red ball. Sh e"})["tokens"]
    query = f"the query is token {len(tokens) - 3} {tokens[-3]}"
    page.wait_for_function(
        "q => document.querySelector('#lesson-view .score-title')?.textContent.includes(q)", arg=query
    )
    assert "Lily" in page.url and "step=2" in page.url


def test_explorer_score_tab_shows_the_heads_attention_row(server, page):
    url, _ = server
    page.goto(f"{url}/?prompt={PROMPT}&layer=1&head=6&view=score")
    page.wait_for_selector("#detail-score .score-table tbody tr", timeout=STEP_MS)
    row = get_json(url + "/api/head", {"prompt": PROMPT, "layer": 1, "head": 6})["pattern"][-1]
    cells = page.locator("#detail-score .score-w .score-num").all_inner_texts()
    assert cells == [f"{p:.3f}" for p in row]
    assert page.locator("#detail-heatmap").is_hidden()
    # Clicking another token makes it the query.
    page.locator("#tokens .tok").nth(3).click()
    page.wait_for_function(
        "() => document.querySelector('#detail-score .score-title')?.textContent.includes('token 3')"
    )
    shoot(page, "explorer-score", full_page=False)
