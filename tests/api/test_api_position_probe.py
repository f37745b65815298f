"""POST /api/position/probe: the lab's numbers for any served model, computed once, refused in words; and
the rest of the position lab on a model with no positional encoding at all."""

from __future__ import annotations

import pytest

from app.position.schemas import ProbeResponse
from labs.position_probe import position_probe
from model import load
from tests.api_helpers import client_for, save_tiny


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("m")
    return (save_tiny(root / "tiny"), save_tiny(root / "tinygpt", arch="gpt2"),
            save_tiny(root / "tinynope", no_position=True))  # fmt: skip


@pytest.fixture(scope="module")
def client(folders):
    with client_for(*folders, cache_bytes=0) as c:
        yield c


@pytest.mark.parametrize(
    ("model", "positional"), [("tiny", "rope"), ("tinygpt", "learned"), ("tinynope", "none")]
)
def test_probe_answers_the_labs_numbers(client, folders, model, positional):
    r = client.post("/api/position/probe", json={"model": model})
    assert r.status_code == 200, r.text
    data = ProbeResponse.model_validate(r.json())
    assert (data.model, data.positional, data.window, data.windows) == (model, positional, 64, 48)
    folder = next(f for f in folders if f.name == model)
    ref = position_probe(load(folder))
    for got, want in ((data.causal, ref.causal), (data.no_mask, ref.no_mask)):
        assert [p.name for p in got] == [p.name for p in want] and [p.hook for p in got] == [
            p.hook for p in want
        ]
        assert [p.r2 for p in got] == pytest.approx([p.r2 for p in want], abs=1e-3)
        assert [p.error for p in got] == pytest.approx([p.error for p in want], abs=1e-2)
    assert data.chance_error == pytest.approx(ref.chance_error, abs=1e-2)
    # The sentence quotes the measured numbers, never a typed-in one.
    if positional == "learned":
        assert "position vectors write it" in data.sentence and f"R² {data.causal[1].r2:.2f}" in data.sentence
    else:
        best = max(data.causal, key=lambda p: p.r2)
        assert f"{best.name}" in data.sentence and f"R² {best.r2:.2f}" in data.sentence


def test_probe_is_computed_once(client):
    first = client.post("/api/position/probe", json={}).json()
    again = client.post("/api/position/probe", json={"model": None}).json()
    assert first["model"] == "tiny" and again == first  # the same answer, seconds included


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"model": "missing"}, 404, "No model named"),
        ({"model": 3}, 422, "valid string"),
        ({"windows": 2}, 422, "Extra inputs"),
    ],
)
def test_probe_bad_requests_are_sentences(client, body, status, words):
    r = client.post("/api/position/probe", json=body)
    assert r.status_code == status and words in r.text, r.text


def test_probe_larger_than_a_measurement_may_hold_is_a_422(folders):
    with client_for(folders[0], cache_bytes=0, max_timing_bytes=2**20) as c:
        r = c.post("/api/position/probe", json={})
    assert r.status_code == 422 and "limits.max_timing_bytes" in r.json()["detail"]
    assert "MiB of residual-stream vectors" in r.json()["detail"]


def test_probe_on_a_model_shorter_than_its_window_is_a_422(tmp_path):
    with client_for(save_tiny(tmp_path / "short", context_length=16), cache_bytes=0) as c:
        r = c.post("/api/position/probe", json={})
    assert r.status_code == 422 and "windows of 64 tokens; short reads at most 16" in r.json()["detail"]


def test_the_rest_of_the_lab_says_what_a_model_with_no_position_lacks(client):
    rope = client.post("/api/rope", json={"model": "tinynope"}).json()
    assert (rope["positional"], rope["clock"], rope["curves"], rope["learned"]) == ("none", None, None, None)
    assert "no positional encoding" in rope["message"]
    stretch = client.post("/api/rope/stretch", json={"model": "tinynope"}).json()
    assert stretch["applies"] is False and "no positional encoding" in stretch["message"]
    perm = client.post(
        "/api/permutation", json={"model": "tinynope", "prompt": "The dog bites the man."}
    ).json()
    assert perm["positional"] == "none"
    on = [c for c in perm["conditions"] if c["position"] and not c["causal"]][0]
    assert on["head_max_diff"] <= 1e-5  # "position on" has nothing to turn on
    models = client.get("/api/models").json()["models"]
    assert [m["positional"] for m in models] == ["rope", "learned", "none"]
