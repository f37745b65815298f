"""The API on the bundled classroom models, as `make run` serves them (the classroom model and its twins)."""

from __future__ import annotations

import re

import pytest
import torch

from app.settings import DEFAULT_MODELS
from app.wire import decode_thumbnails
from labs.census import param_census
from labs.presets import PRESETS
from model import load
from tests.api_helpers import client_for

PROMPT = "Once upon a time there was a little girl called Lily. Lily"


@pytest.fixture(scope="module")
def lm():
    return load("classroom")


@pytest.fixture(scope="module")
def client():
    with client_for(*DEFAULT_MODELS) as c:  # the CLI default
        yield c


def test_bundled_model_is_described_and_counted(client, lm):
    body = client.get("/api/models").json()
    assert body["default"] == "classroom"
    assert [m["name"] for m in body["models"]] == ["classroom", "classroom-gpt2", "classroom-nope"]
    assert [m["positional"] for m in body["models"]] == ["rope", "learned", "none"]
    info = body["models"][0]
    assert info["params"] == param_census(lm.config)
    assert info["params"]["total"] == sum(p.numel() for p in lm.net.parameters())
    assert info["has_card"] and body["limits"]["max_tokens"] == lm.config.context_length


def test_bundled_trace_matches_the_model(client, lm):
    r = client.post("/api/trace", json={"prompt": PROMPT, "top_k": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    ref = lm.trace(PROMPT)
    assert body["tokens"] == ref.tokens and body["thumbnails"]["format"] == "u8-tril"
    assert (decode_thumbnails(body["thumbnails"]) - ref.attention).abs().max().item() <= 0.5 / 255 + 1e-6
    top = torch.softmax(ref.logits[-1], -1).topk(5).indices.tolist()
    assert [t["id"] for t in body["predictions"][-1]["top"]] == top


def test_bundled_context_length_is_the_token_limit(client, lm):
    n = lm.config.context_length
    ids = lm.encode("The cat sat on the mat. " * n)
    fits = lm.tokenizer.decode(ids[:n])
    while len(lm.encode(fits)) > n:  # decoding and re-encoding may merge differently
        fits = fits[:-1]
    assert client.post("/api/trace", json={"prompt": fits, "top_k": 1}).status_code == 200
    r = client.post("/api/trace", json={"prompt": fits + " The cat sat on the mat.", "top_k": 1})
    assert r.status_code == 422 and f"reads at most {n} tokens" in r.json()["detail"]


def test_bundled_index_page_names_the_model(client):
    r = client.get("/")
    assert r.status_code == 200 and "classroom" in r.text


def test_every_class_demo_is_offered_and_runs_on_every_bundled_model(client):
    page = client.get("/").text
    for p in PRESETS:
        assert f'<option value="{p.text}">{p.label}</option>' in page
    for model in DEFAULT_MODELS:
        for p in PRESETS:
            r = client.post("/api/trace", json={"prompt": p.text, "model": model, "top_k": 3})
            assert r.status_code == 200, (model, p.label, r.text)
            if p.real_words:  # one token per word and punctuation mark: what the class sees is words
                assert r.json()["n"] == len(re.findall(r"\w+|[^\w\s]", p.text)), (model, p.text)
