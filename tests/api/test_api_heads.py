"""The head-atlas endpoints on a tiny saved model (and on the bundled model for role groups)."""

from __future__ import annotations

import statistics

import pytest
import torch
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.wire import decode_attention
from labs.roles.atlas import compute_atlas
from labs.roles.knockout import repeat_losses
from labs.roles.probes import probe_attention
from labs.roles.registry import HEAD_SCORES, ROLES, prompt_scores
from model import load, save
from model.loading import bundled_path
from tests.tiny import make_tokenizer, tiny_model

PROMPT = "Lily had a red ball. She"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    save(tiny_model(), make_tokenizer(), folder)
    return folder


@pytest.fixture(scope="module")
def client(tiny_folder):
    with TestClient(create_app(Settings(models=[str(tiny_folder)], cache_bytes=0))) as c:
        yield c


def test_api_heads_lists_every_role_with_scores_and_labels(client, tiny_folder):
    r = client.get("/api/heads")
    assert r.status_code == 200
    body = r.json()
    assert body["model"] == tiny_folder.name and (body["n_layer"], body["n_head"]) == (2, 4)
    assert [x["key"] for x in body["roles"]] == [role.key for role in ROLES]
    lm = client.app.state.runtime.lm(None)
    atlas = compute_atlas(lm)
    for role in body["roles"]:
        assert len(role["scores"]) == 2 and all(len(row) == 4 for row in role["scores"])
        assert role["explanation"] and role["control_how"] and 0 < role["threshold"] < 1
        ref, net = atlas.scores[role["key"]], atlas.nets[role["key"]]
        la, h = role["best"]["layer"], role["best"]["head"]
        assert (la, h) == atlas.closest(role["key"])
        assert role["scores"][la][h] == pytest.approx(float(ref[la, h]), abs=1e-4)
        assert role["nets"][la][h] == pytest.approx(float(net[la, h]), abs=1e-4)
        assert all(x["score"] >= role["threshold"] for x in role["candidates"])
        # labelled heads are the candidates, and only when the knock-out evidence holds
        earned = role["evidence"] is not None and role["evidence"]["earned"]
        assert role["heads"] == (role["candidates"] if earned else [])
        assert role["status"].startswith("In this model")
    assert body["labels"] == atlas.labels
    assert {p["key"] for p in body["probes"]} == {"prose", "repeat", "pronoun"}


def test_api_heads_carries_the_badge_labels_and_the_head_score_texts(client):
    """The pages hold no role names: badges, names and score help all come from /api/heads."""
    body = client.get("/api/heads").json()
    assert [(x["key"], x["label"], x["name"]) for x in body["roles"]] == [
        (r.key, r.label, r.name) for r in ROLES
    ]
    assert [x["label"] for x in body["roles"]] == ["prev", "induct", "dup", "sink", "self", "local", "pron"]
    assert [s["key"] for s in body["head_scores"]] == [s.key for s in HEAD_SCORES]
    assert all(s["name"] and s["explanation"] for s in body["head_scores"])
    head = client.post("/api/head", json={"prompt": PROMPT, "layer": 0, "head": 0}).json()
    assert list(head["scores"]) == [s["key"] for s in body["head_scores"]]


def test_api_heads_sink_sentence_and_head_notes_come_from_the_atlas(client):
    from app.heads.text import head_note, sink_fact

    body = client.get("/api/heads").json()
    atlas = compute_atlas(client.app.state.runtime.lm(None))
    assert body["sink_fact"] == sink_fact(atlas)
    sink = next(r for r in body["roles"] if r["key"] == "first_token")
    over_half = sum(x > 0.5 for row in sink["scores"] for x in row)
    assert body["sink_fact"].startswith(
        "In this model no head" if over_half == 0 else f"In this model {over_half} of 8"
    )
    for la, row in enumerate(body["head_notes"]):
        for h, note in enumerate(row):
            assert note == head_note(atlas, la, h)
            assert ("has no role" in note) == (not body["labels"][la][h])


def test_api_heads_probe_sends_every_head_on_the_probe(client):
    body = client.get("/api/heads/probe", params={"probe": "repeat"}).json()
    R = client.get("/api/heads").json()["repeat_length"]
    assert body["n"] == 2 * R and body["tokens"][:R] == body["tokens"][R:]
    att = decode_attention(body["attention"])
    assert att.shape == (2, 4, 2 * R, 2 * R)
    lm = client.app.state.runtime.lm(None)
    ref = lm.trace(body["token_ids"]).attention
    assert (att - ref).abs().max() <= 1 / 255


def test_api_heads_unknown_model_and_probe_are_4xx_in_words(client):
    r = client.get("/api/heads", params={"model": "nope"})
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    r = client.get("/api/heads/probe", params={"probe": "/etc/passwd"})
    assert r.status_code == 422 and isinstance(r.json()["detail"], str)


def test_api_heads_prompt_scores(client):
    body = client.post("/api/heads/prompt", json={"prompt": "the cat sat. the cat sat."}).json()
    assert body["scores"]["previous_token"] is not None and body["scores"]["induction"] is not None
    assert "pronoun" not in body["scores"]
    body = client.post("/api/heads/prompt", json={"prompt": "a b"}).json()
    assert body["scores"]["local"] is None


def test_api_heads_prompt_scores_equal_a_fresh_forward_after_a_trace(client, tiny_folder):
    """After /api/trace the scores come from its cached attention; they must equal a forward of their own."""
    lm = load(tiny_folder)
    prompt = "the cat sat on the mat. the cat sat on the mat."
    ids = lm.tokenizer.encode(prompt)
    want = prompt_scores(probe_attention(lm, [ids])[0], ids)
    cold = client.post("/api/heads/prompt", json={"prompt": prompt}).json()["scores"]
    assert client.post("/api/trace", json={"prompt": prompt + " the"}).status_code == 200
    assert client.post("/api/trace", json={"prompt": prompt}).status_code == 200
    warm = client.post("/api/heads/prompt", json={"prompt": prompt}).json()["scores"]
    for key, value in want.items():
        for got in (cold[key], warm[key]):
            torch.testing.assert_close(torch.tensor(got), value.float(), atol=1e-4, rtol=0)


def test_api_heads_ablation_of_one_head(client):
    r = client.post("/api/heads/ablation", json={"prompt": PROMPT, "heads": [[1, 2]], "top_k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["heads"] == [[1, 2]] and body["mode"] == "zero" and body["role"] is None
    p = body["prompt"]
    assert p["sentence"].startswith("Without L1H2 the top guess after") and len(p["intact"]) == 3
    assert [x["prob"] for x in p["intact"]] != [x["prob"] for x in p["ablated"]]
    rep = body["repeat"]
    assert len(rep["random"]) == 5 and all([1, 2] not in s["heads"] for s in rep["random"])
    assert rep["second_copy_loss_random"] == pytest.approx(
        statistics.median(s["second_copy_loss"] for s in rep["random"]), abs=1e-3
    )
    assert "L1H2" in rep["sentence"]
    # The same request gives the same numbers (seeded random heads).
    again = client.post("/api/heads/ablation", json={"prompt": PROMPT, "heads": [[1, 2]], "top_k": 3}).json()
    assert again == body


def test_api_heads_ablation_mean_mode_differs_from_zero(client):
    zero = client.post("/api/heads/ablation", json={"prompt": PROMPT, "heads": [[0, 1]]}).json()
    mean = client.post(
        "/api/heads/ablation", json={"prompt": PROMPT, "heads": [[0, 1]], "mode": "mean"}
    ).json()
    assert mean["mode"] == "mean"
    assert mean["repeat"]["second_copy_loss_ablated"] != zero["repeat"]["second_copy_loss_ablated"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"prompt": PROMPT}, "either heads"),
        ({"prompt": PROMPT, "heads": [[0, 0]], "role": "induction"}, "not both"),
        ({"prompt": PROMPT, "heads": []}, "at least one"),
        ({"prompt": PROMPT, "heads": [[9, 0]]}, "no head [9, 0]"),
        ({"prompt": PROMPT, "role": "poetry"}, "role"),
        ({"prompt": PROMPT, "heads": [[0, 0]], "mode": "half"}, "mode"),
        ({"prompt": "", "heads": [[0, 0]]}, "empty"),
        ({"prompt": PROMPT, "heads": [[0, 0]], "top_k": 10_000}, "top_k"),
        ({"prompt": PROMPT, "heads": [[0, 0]], "path": "/etc"}, "Unknown field"),
    ],
)
def test_api_heads_ablation_bad_input_is_422_in_words(client, body, words):
    r = client.post("/api/heads/ablation", json=body)
    assert r.status_code == 422
    assert words.lower() in r.json()["detail"].lower()


def test_api_heads_role_without_heads_says_so(client):
    body = client.get("/api/heads").json()
    empty = next((r for r in body["roles"] if not r["heads"]), None)
    if empty is None:
        pytest.skip("the tiny model happens to label a head with every role")
    r = client.post("/api/heads/ablation", json={"prompt": PROMPT, "role": empty["key"]})
    assert r.status_code == 422 and f"no {empty['name']} head" in r.json()["detail"]


def test_api_heads_openapi_documents_examples(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert {"/api/heads", "/api/heads/probe", "/api/heads/ablation", "/api/heads/prompt"} <= set(paths)
    schema = spec["components"]["schemas"]["HeadAblationRequest"]
    assert schema["examples"][0]["heads"] == [[1, 3]]


classroom = pytest.mark.skipif(
    not (bundled_path("classroom") / "model.safetensors").exists(),
    reason="the classroom model is not trained yet",
)


@classroom
@pytest.mark.slow
def test_api_heads_role_group_ablation_on_the_bundled_model():
    with TestClient(create_app(Settings(models=["classroom"], cache_bytes=0))) as c:
        roles = {r["key"]: r for r in c.get("/api/heads").json()["roles"]}
        order = ["induction", "previous_token", *roles]
        role = next((k for k in order if roles[k]["heads"]), None)
        if role is None:
            pytest.skip("this checkpoint labels no head with any role (a smoke-test checkpoint?)")
        r = c.post("/api/heads/ablation", json={"prompt": PROMPT, "role": role})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["heads"] == [[h["layer"], h["head"]] for h in roles[role]["heads"]]
        heads = [tuple(h) for h in body["heads"]]
        lm = c.app.state.runtime.lm(None)
        assert body["repeat"]["second_copy_loss_ablated"] == pytest.approx(
            repeat_losses(lm, heads)[1], abs=1e-3
        )
        assert body["prompt"]["sentence"].startswith("Without ")
