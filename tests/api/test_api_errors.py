"""Bad input of every kind gets a 4xx whose detail is a sentence, never a 500 and never a crash."""

from __future__ import annotations

import pytest

from tests.api_helpers import client_for, save_tiny

OK = {"prompt": "The cat sat on the mat."}
LONG = "the cat " * 40  # 80 tokens with the tiny tokenizer: over its context of 64, under 400 chars


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    folder = save_tiny(tmp_path_factory.mktemp("m") / "tiny")
    with client_for(folder, max_prompt_chars=400, max_request_bytes=4096, max_top_k=20) as c:
        yield c


CASES = [
    # (path, body, status, words the sentence must contain)
    ("/api/trace", {"prompt": ""}, 422, "empty"),
    ("/api/trace", {"prompt": "   \n\t "}, 422, "empty"),
    ("/api/trace", {"prompt": "x" * 401}, 422, "401 characters; the limit is 400"),
    ("/api/trace", {"prompt": LONG}, 422, "reads at most 64 tokens"),
    ("/api/trace", {"prompt": 42}, 422, "prompt"),
    ("/api/trace", {"prompt": ["a"]}, 422, "prompt must be a string, not a list"),
    ("/api/trace", {}, 422, "'prompt' is required"),
    ("/api/trace", {**OK, "temperature": 0}, 422, "temperature"),
    ("/api/trace", {**OK, "temperature": -1}, 422, "greater than 0"),
    ("/api/trace", {**OK, "temperature": "hot"}, 422, "temperature"),
    ("/api/trace", {**OK, "top_k": 10**9}, 422, "the limit is 20"),
    ("/api/trace", {**OK, "top_k": 0}, 422, "top_k"),
    ("/api/trace", {**OK, "top_k": 2.5}, 422, "top_k"),
    ("/api/trace", {**OK, "causal": "maybe"}, 422, "causal"),
    ("/api/trace", {**OK, "ablate": [[5, 0]]}, 422, "no head [5, 0]"),
    ("/api/trace", {**OK, "ablate": [[0, -1]]}, 422, "no head [0, -1]"),
    ("/api/trace", {**OK, "ablate": [[0]]}, 422, "ablate"),
    ("/api/trace", {**OK, "ablate": "all"}, 422, "ablate"),
    ("/api/trace", {**OK, "model": "nope"}, 404, "No model named 'nope'"),
    ("/api/trace", {**OK, "model": "/etc/passwd"}, 404, "No model named"),
    ("/api/trace", {**OK, "colour": "red"}, 422, "Unknown field 'colour'"),
    ("/api/trace", [OK], 422, "JSON object"),
    ("/api/head", {**OK, "layer": 2, "head": 0}, 422, "no head [2, 0]"),
    ("/api/head", {**OK, "layer": 0, "head": 4}, 422, "no head [0, 4]"),
    ("/api/head", {**OK, "layer": -1, "head": 0}, 422, "layer"),
    ("/api/head", {**OK, "layer": 0}, 422, "'head' is required"),
    ("/api/head", {"prompt": " ", "layer": 0, "head": 0}, 422, "empty"),
    ("/api/head", {**OK, "layer": 0, "head": 0, "model": "x"}, 404, "No model named 'x'"),
    ("/api/ablation", {**OK, "ablate": []}, 422, "ablate"),
    ("/api/ablation", {**OK, "ablate": [[0, 9]]}, 422, "no head [0, 9]"),
    ("/api/ablation", {**OK, "ablate": [[0, 0]], "mode": "half"}, 422, "mode"),
    ("/api/ablation", {**OK, "ablate": [[0, 0]], "index": 99}, 422, "outside the prompt"),
    ("/api/ablation", {**OK, "ablate": [[0, 0]], "index": -1}, 422, "outside the prompt"),
    ("/api/ablation", {**OK, "ablate": [[0, 0]], "top_k": 21}, 422, "the limit is 20"),
    ("/api/ablation", {**OK, "ablate": [[0, 0]], "temperature": 0}, 422, "greater than 0"),
    ("/api/ablation", {"prompt": "", "ablate": [[0, 0]]}, 422, "empty"),
    ("/api/ablation", {**OK, "ablate": [[0, 0]], "model": "y"}, 404, "No model named 'y'"),
]


def assert_sentence(r, status: int, words: str) -> None:
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail[0].isalpha() and detail.endswith((".", ")")), detail
    assert words in detail, detail


@pytest.mark.parametrize(("path", "body", "status", "words"), CASES)
def test_api_bad_input_gets_a_sentence(client, path, body, status, words):
    assert_sentence(client.post(path, json=body), status, words)


@pytest.mark.parametrize("path", ["/api/trace", "/api/head", "/api/ablation"])
@pytest.mark.parametrize(
    ("raw", "words"), [(b"{bad", "not valid JSON"), (b"", "body is required"), (b"null", "JSON object")]
)
def test_api_invalid_json_gets_a_sentence(client, path, raw, words):
    r = client.post(path, content=raw, headers={"content-type": "application/json"})
    assert_sentence(r, 422, words)


def test_api_request_over_the_size_limit_gets_413(client):
    r = client.post("/api/trace", json={"prompt": "x" * 5000})
    assert_sentence(r, 413, "the limit is 4096 bytes")

    def chunks():  # no Content-Length: the limit is enforced by counting
        for _ in range(10):
            yield b"x" * 1000

    assert_sentence(client.post("/api/trace", content=chunks()), 413, "limit is 4096 bytes")


def test_api_schema_errors_keep_the_list_for_programs(client):
    r = client.post("/api/trace", json={**OK, "temperature": 0, "top_k": 0})
    body = r.json()
    assert "temperature" in body["detail"] and "top_k" in body["detail"]
    assert [e["loc"] for e in body["errors"]] == [["body", "temperature"], ["body", "top_k"]]


def test_api_wrong_method_and_unknown_path_are_4xx(client):
    assert client.get("/api/trace").status_code == 405
    assert client.get("/api/nothing").status_code == 404
    assert client.get("/static/../app/main.py").status_code == 404
    assert client.get("/static/vendor/plotly-0.0.1.min.js").status_code == 404
    assert client.get("/static/vendor/swagger-ui/..%2F__init__.py").status_code == 404


def test_api_survives_bad_input_and_still_answers(client):
    for path, body, *_ in CASES:
        client.post(path, json=body)
    assert client.post("/api/trace", json=OK).status_code == 200
