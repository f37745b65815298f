"""POST /api/permutation, /api/word-order and /api/rope: the lab's numbers are the model's, bad input is a 422."""

from __future__ import annotations

import math

import pytest
import torch

from app.position.schemas import PermutationResponse, RopeResponse, WordOrderResponse
from labs.position import make_permutation, permutation_experiment
from model import load
from tests.api_helpers import client_for, save_tiny

PROMPT = "The dog bites the man."


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("m")
    return save_tiny(root / "tiny"), save_tiny(root / "tinygpt", arch="gpt2")


@pytest.fixture(scope="module")
def client(folders):
    with client_for(*folders, cache_bytes=0) as c:
        yield c


def post(client, path, **body):
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def condition(data, position, causal):
    return next(c for c in data["conditions"] if c["position"] == position and c["causal"] == causal)


def test_permutation_matches_the_model(client, folders):
    data = post(client, "/api/permutation", prompt=PROMPT, layer=1, head=3, permutation="reverse")
    PermutationResponse.model_validate(data)
    n = data["n"]
    assert data["permutation"] == list(range(n - 1, -1, -1)) and data["kv_head"] == 1
    assert data["permuted_tokens"] == data["tokens"][::-1]
    assert len(data["conditions"]) == 4
    free = condition(data, False, False)
    assert free["equivariant"] and free["probs_max_diff"] <= 1e-5 and free["head_max_diff"] <= 1e-5
    assert not condition(data, False, True)["equivariant"]  # the mask alone carries order
    ref = permutation_experiment(load(folders[0]), data["token_ids"], data["permutation"], 1, 3)
    rope = ref.condition(True, False)
    got = condition(data, True, False)
    assert got["head_max_diff"] == pytest.approx(rope.head_max_diff)
    torch.testing.assert_close(torch.tensor(got["original"]), rope.original, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.tensor(got["diff"]), rope.diff, atol=1e-6, rtol=1e-2)


def test_permutation_kinds(client):
    shuffled = post(client, "/api/permutation", prompt=PROMPT, permutation="shuffle", seed=4)
    assert shuffled["permutation"] == make_permutation(shuffled["n"], "shuffle", seed=4)
    swapped = post(client, "/api/permutation", prompt=PROMPT, permutation="swap", swap=[0, 2])
    assert swapped["permutation"][:3] == [2, 1, 0]
    order = list(range(swapped["n"]))[::-1]
    explicit = post(client, "/api/permutation", prompt=PROMPT, permutation="explicit", order=order)
    assert explicit["permutation"] == order


@pytest.mark.parametrize(
    "body, words",
    [
        ({"permutation": "swap", "swap": [0, 99]}, "out of range"),
        ({"permutation": "swap", "swap": [1, 1]}, "two different positions"),
        ({"permutation": "swap"}, "needs 'swap'"),
        ({"permutation": "explicit", "order": [0, 0, 1]}, "exactly once"),
        ({"permutation": "explicit"}, "needs 'order'"),
        ({"permutation": "sideways"}, "permutation"),
        ({"layer": 7}, "no head"),
        ({"head": 4}, "no head"),
        ({"prompt": "cat " * 80}, "at most 64"),
        ({"prompt": "The"}, "at least two"),
        ({"prompt": "   "}, "empty"),
        ({"seed": -1}, "seed"),
    ],
)
def test_permutation_bad_input_is_a_readable_422(client, body, words):
    r = client.post("/api/permutation", json={"prompt": PROMPT, **body})
    assert r.status_code == 422, r.text
    assert words.lower() in r.json()["detail"].lower()


def test_word_order_identical_without_position(client):
    data = post(client, "/api/word-order")
    WordOrderResponse.model_validate(data)
    assert data["tokens_a"][data["focus"]] == "·bites" and data["same_last_token"]
    free = condition(data, False, False)
    assert max(free["token_diffs"]) <= 1e-5 and free["next"]["max_diff"] <= 1e-5
    assert [t["id"] for t in free["next"]["a"]] == [t["id"] for t in free["next"]["b"]]
    assert free["focus"]["a"] == pytest.approx(free["focus"]["b"], abs=1e-5)
    assert condition(data, True, False)["focus"]["max_diff"] > 1e-6  # random tiny model: small but real
    assert "·The·dog" in data["notes"]["causal"] or "The·dog" in data["notes"]["causal"]


def test_word_order_needs_the_same_tokens(client):
    r = client.post(
        "/api/word-order", json={"prompt_a": "The dog bites the man.", "prompt_b": "The cat sat."}
    )
    assert r.status_code == 422 and "same tokens" in r.json()["detail"]
    r = client.post("/api/word-order", json={"focus": 40})
    assert r.status_code == 422 and "focus" in r.json()["detail"]


def test_rope_clock_and_offset_curves(client):
    data = post(client, "/api/rope", max_offset=40)
    RopeResponse.model_validate(data)
    clock, curves = data["clock"], data["curves"]
    assert clock["head_dim"] == 8 and len(clock["periods"]) == 4
    assert clock["periods"][0] == pytest.approx(2 * math.pi)
    assert clock["positions"] == list(range(64))  # tiny context: every position is a stop
    assert clock["angles"][1] == pytest.approx(clock["inv_freq"], abs=1e-4)
    assert curves["source"] == "model" and "head 0" in curves["detail"] and curves["spread"] <= 1e-5
    assert len(curves["scores"]) == len(curves["key_positions"]) and len(curves["offsets"]) == 41
    assert curves["reference"] is None


def test_rope_interpolation_scale_slows_the_hands(client):
    plain = post(client, "/api/rope", source="random", seed=2)
    slow = post(client, "/api/rope", source="random", seed=2, scale=4)
    assert slow["clock"]["periods"][0] == pytest.approx(4 * plain["clock"]["periods"][0])
    assert slow["clock"]["positions"][-1] == 4 * 64 - 1
    assert slow["clock"]["trained_positions"] == 4 * 64 and plain["clock"]["trained_positions"] == 64
    # What training saw does not depend on the scale asked for; the fastest hands went round 64 / 2pi times.
    assert slow["clock"]["turns_in_context"] == plain["clock"]["turns_in_context"]
    assert plain["clock"]["turns_in_context"][0] == pytest.approx(64 / (2 * math.pi))
    assert slow["curves"]["reference"] == pytest.approx(plain["curves"]["scores"][0], abs=1e-5)


@pytest.mark.parametrize(
    "body, words",
    [
        ({"scale": 0}, "scale"),
        ({"scale": 1000}, "scale"),
        ({"key_positions": [-1]}, "key positions"),
        ({"key_positions": [10**7]}, "key positions"),
        ({"max_offset": 5000}, "max_offset"),
        ({"query": 50}, "outside"),
        ({"layer": 9}, "no head"),
        ({"source": "oracle"}, "source"),
    ],
)
def test_rope_bad_input_is_a_readable_422(client, body, words):
    r = client.post("/api/rope", json=body)
    assert r.status_code == 422, r.text
    assert words.lower() in r.json()["detail"].lower()


def test_rope_on_gpt2_returns_learned_positions(client):
    data = post(client, "/api/rope", model="tinygpt")
    RopeResponse.model_validate(data)
    assert data["positional"] == "learned" and data["clock"] is None and data["curves"] is None
    learned = data["learned"]
    assert (
        len(learned["positions"]) == 64 and len(learned["similarity"]) == 64 and len(learned["pca"][0]) == 3
    )
    assert learned["similarity"][5][5] == pytest.approx(1.0, abs=1e-3)
    assert "learned" in data["message"]


def test_unknown_model_is_a_404(client):
    assert client.post("/api/rope", json={"model": "nope"}).status_code == 404
