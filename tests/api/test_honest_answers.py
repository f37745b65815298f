"""Every answer honest (issue 15): the same validation on every path, a 422 sentence for bodies that do
not parse and for values of the wrong JSON type, the security headers on every answer (400, 413, 422,
500 included), the Host check of a loopback server, and HEAD on the pages."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.middleware import SECURITY_HEADERS, host_name
from app.pages import PAGES
from app.settings import Settings
from tests.api_helpers import client_for, save_tiny

OK = {"prompt": "The cat sat on the mat."}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("honest") / "tiny")


@pytest.fixture(scope="module")
def client(folder):
    with client_for(folder, max_prompt_chars=400, max_request_bytes=4096) as c:
        yield c


def assert_sentence(r, status: int, *words: str) -> None:
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail[0].isalpha() and detail.endswith((".", ")")), detail
    for w in words:
        assert w in detail, detail


def assert_secure(r) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert r.headers.get(name) == value, (r.status_code, name, dict(r.headers))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"source": "random", "prompt": "\ud83d"}, "broken character"),
        ({"source": "random", "prompt": "x" * 401}, "401 characters; the limit is 400"),
        ({"source": "random", "prompt": ""}, "no tokens"),
        ({"source": "model", "prompt": "\ud83d"}, "broken character"),
    ],
)
def test_rope_checks_the_prompt_on_every_path(client, body, words):
    raw = json.dumps(body).encode()  # ASCII: half a surrogate pair travels as the escape \\ud83d
    r = client.post("/api/rope", content=raw, headers={"content-type": "application/json"})
    assert_sentence(r, 422, words)
    assert_secure(r)


def test_rope_random_source_still_answers(client):
    assert client.post("/api/rope", json={"source": "random", "seed": 3}).status_code == 200


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),  # over the 4 KiB limit: a 413 first
        (b'{"prompt": "' + b"[" * 10 + b'"}', None),  # a valid body, for contrast
        (b'{"prompt": "caf\xe9"}', "not valid UTF-8"),
        (b'{"prompt": "x", "top_k": ' + b"9" * 5000 + b"}", None),  # 5 KB: over the 4 KiB limit
        (b'{"prompt": "x", "top_k": ' + b"9" * 4400 + b"}", None),
        (b"{" * 3000, None),
    ],
)
def test_unparsable_bodies_get_a_422_sentence_not_a_400(client, raw, words):
    r = client.post("/api/trace", content=raw, headers={"content-type": "application/json"})
    assert_secure(r)
    if len(raw) > 4096:
        assert_sentence(r, 413, "the limit is 4096 bytes")
        return
    assert r.status_code in (200, 422), r.text
    if r.status_code == 422:
        assert_sentence(r, 422)
        assert "error parsing" not in r.text
    if words:
        assert_sentence(r, 422, words)


def test_deep_nesting_and_huge_integers_within_the_size_limit(folder):
    with client_for(folder, max_request_bytes=1 << 20) as c:
        deep = b"[" * 100_000 + b"]" * 100_000
        r = c.post("/api/trace", content=deep, headers={"content-type": "application/json"})
        assert_sentence(r, 422, "nested too deeply")
        huge = b'{"prompt": "x", "top_k": ' + b"9" * 5000 + b"}"
        r = c.post("/api/trace", content=huge, headers={"content-type": "application/json"})
        assert_sentence(r, 422, "thousands of digits")


@pytest.mark.parametrize(
    ("path", "body", "words"),
    [
        ("/api/trace", {**OK, "top_k": "5"}, "top_k must be a whole number, not a string ('5')"),
        ("/api/trace", {**OK, "position": "yes"}, "position must be true or false, not a string"),
        ("/api/trace", {**OK, "causal": 1}, "causal must be true or false, not a number"),
        (
            "/api/head",
            {**OK, "layer": 3.0, "head": 0},
            "layer must be a whole number, not a number (3.0: write",
        ),
        ("/api/trace", {**OK, "temperature": "0.5"}, "temperature must be a number, not a string"),
        ("/api/trace", {**OK, "ablate": [["0", 0]]}, "must be a whole number"),
        ("/api/ablation", {**OK, "ablate": [[0.0, 0]]}, "must be a whole number"),
        ("/api/permutation", {**OK, "permutation": "swap", "swap": ["1", 2]}, "must be a whole number"),
        ("/api/rope", {"source": "random", "seed": "1"}, "seed must be a whole number"),
        ("/api/word-order", {"top_k": 2.5}, "top_k must be a whole number"),
        ("/api/cost", {"n": "4096"}, "n must be a whole number"),
        ("/api/cost/timing", {"repeats": "3"}, "repeats must be a whole number"),
        ("/api/heads/ablation", {**OK, "heads": [[0, 0]], "top_k": True}, "top_k must be a whole number"),
    ],
)
def test_strict_types_are_a_422_not_a_guess(client, path, body, words):
    r = client.post(path, json=body)
    assert_sentence(r, 422, words)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/trace", {**OK, "temperature": 1, "ablate": [[0, 0]], "top_k": 3, "position": False}),
        ("/api/head", {**OK, "layer": 0, "head": 1}),
        ("/api/permutation", {**OK, "permutation": "swap", "swap": [0, 1]}),
    ],
)
def test_well_typed_bodies_still_pass(client, path, body):
    assert client.post(path, json=body).status_code == 200


def test_get_forms_still_read_numbers_from_text(client):
    assert client.get("/api/cost?n=4096").status_code == 200


def test_every_error_carries_the_security_headers(client):
    cases = [
        client.post("/api/trace", json={"prompt": "x" * 5000}),  # 413
        client.post("/api/trace", content=b"{", headers={"content-type": "application/json"}),  # 422
        client.post("/api/trace", json={"prompt": "x", "model": "nope"}),  # 404
        client.post("/api/trace", content=b"x", headers={"content-length": "abc"}),  # 400
        client.get("/no/such/page"),  # 404
        client.delete("/"),  # 405
    ]
    assert [r.status_code for r in cases] == [413, 422, 404, 400, 404, 405]
    for r in cases:
        assert_secure(r)


def test_a_500_is_a_sentence_with_the_security_headers(folder):
    app = create_app(Settings(models=[str(folder)]))

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("a bug")

    r = TestClient(app, raise_server_exceptions=False).get("/boom")
    assert_sentence(r, 500, "went wrong inside the server")
    assert_secure(r)


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8000", "127.0.0.1"), ("[::1]:80", "[::1]"), ("LocalHost", "localhost"), ("[::1]", "[::1]")],
)
def test_host_name_drops_the_port(header, name):
    assert host_name(header) == name


@pytest.mark.parametrize("bound", ["127.0.0.1", "::1", "localhost"])
def test_loopback_server_answers_only_loopback_names(folder, bound):
    app = create_app(Settings(models=[str(folder)], host=bound))
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        for host in ("localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:8000", "[::1]", "[::1]:8000"):
            assert c.get("/api/models", headers={"host": host}).status_code == 200, host
        for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "192.168.1.5:8000"):
            r = c.get("/api/models", headers={"host": host})
            assert_sentence(r, 400, "this machine only")
            assert_secure(r)


def test_no_host_check_off_loopback_or_in_process(folder):
    for settings in ({"host": "0.0.0.0"}, {"host": "192.168.1.5"}, {}):
        app = create_app(Settings(models=[str(folder)], **settings))
        with TestClient(app) as c:
            assert c.get("/api/models", headers={"host": "atlas.school.example"}).status_code == 200


def test_head_on_every_page_is_200(client):
    for page in PAGES:
        r = client.head(page.path)
        assert r.status_code == 200, page.path
        assert r.headers["content-type"].startswith("text/html") and not r.content
        assert_secure(r)
