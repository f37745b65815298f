"""POST /api/rope/stretch: the curves are the lab's, computed once, refused with a sentence when asked wrongly."""

from __future__ import annotations

import pytest
import torch

from app.position.schemas import StretchResponse
from labs.stretch import stretch
from model import load
from tests.api_helpers import client_for, save_tiny


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("m")
    return save_tiny(root / "tiny", context_length=16), save_tiny(
        root / "tinygpt", arch="gpt2", context_length=16
    )


@pytest.fixture(scope="module")
def client(folders):
    with client_for(*folders, cache_bytes=0) as c:
        yield c


def test_stretch_answers_the_labs_numbers(client, folders):
    r = client.post("/api/rope/stretch", json={"factor": 4, "scales": [2, 4], "windows": 2})
    assert r.status_code == 200, r.text
    data = StretchResponse.model_validate(r.json())
    assert data.applies and data.unit == "nats" and (data.context_length, data.length) == (16, 64)
    assert [c.scale for c in data.curves] == [1.0, 2.0, 4.0]  # no scaling is always there
    assert all(len(c.bins) == len(data.bin_starts) for c in data.curves)
    assert [c.covers for c in data.curves] == [16, 32, 64]
    ref = stretch(load(folders[0]), 4, [1.0, 2.0, 4.0], 2)
    for got, want in zip(data.curves, ref.curves, strict=True):
        torch.testing.assert_close(
            torch.tensor(got.bins, dtype=torch.float64), want.bins.double(), atol=1e-4, rtol=0
        )
    assert "nats" in data.sentence and f"{data.curves[0].inside:.2f}" in data.sentence


def test_stretch_is_computed_once(client):
    body = {"factor": 2, "scales": [1, 2], "windows": 1}
    first = client.post("/api/rope/stretch", json=body).json()
    again = client.post("/api/rope/stretch", json=body).json()
    assert again == first  # the same answer, seconds included: not measured again


def test_stretch_on_learned_positions_says_why(client):
    data = client.post("/api/rope/stretch", json={"model": "tinygpt"}).json()
    assert data["applies"] is False and data["curves"] == []
    assert "16 vectors" in data["message"] and "Position 16 has no row" in data["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"factor": 5}, "less than or equal to 4"),
        ({"factor": 1}, "greater than or equal to 2"),
        ({"scales": [0.5]}, "between 1 (no scaling) and 16"),
        ({"scales": [1, 2, 3, 4, 5]}, "at most 4"),
        ({"windows": 0}, "greater than or equal to 1"),
        ({"windows": "2"}, "valid integer"),
        ({"model": "nope"}, "No model named"),
    ],
)
def test_stretch_bad_params_are_sentences(client, body, words):
    r = client.post("/api/rope/stretch", json=body)
    assert r.status_code in (404, 422), r.text
    assert words in r.text


def test_stretch_longer_than_the_server_runs_is_a_422(folders):
    with client_for(folders[0], cache_bytes=0, max_cost_n=32) as c:
        r = c.post("/api/rope/stretch", json={"factor": 4})
    assert r.status_code == 422 and "limits.max_cost_n" in r.json()["detail"]
