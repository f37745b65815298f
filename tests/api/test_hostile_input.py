"""Whatever a curious class types or a script sends, every `/api/*` endpoint answers with a 2xx or a
4xx whose `detail` is a sentence, never a 5xx, and the server keeps answering afterwards.

Endpoints are discovered from the app's OpenAPI schema, so an endpoint added later is covered without
touching this file. Each request body is one of the schema's own examples with one field replaced by a
hostile value, or a hostile body as a whole (broken JSON, invalid UTF-8, arrays, deep nesting...).
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
import torch
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.api_helpers import save_tiny

# Limits of the server under test: roomy enough that a 10k-token prompt reaches the tokenizer (and the
# model's token limit), small enough that the cost lab's live timing stays quick.
LIMITS = dict(max_prompt_chars=50_000, max_request_bytes=256 * 1024, max_cost_n=128)

HOSTILE_STRINGS = {
    "empty": "",
    "whitespace": " \t\n\r\u00a0\u2003\u3000 ",
    "control": "\x00\x01\x02\x1b[31mred\x7f\x9b",
    "nul_inside": "The cat\x00sat on the mat",
    "emoji_combining": "👩‍👩‍👧‍👦 e\u0301\u0301\u0301 Z\u0334\u0321\u0322\u034e\u0344a\u0337 🏳️‍🌈 \ufe0f",
    "rtl": "\u202eThe cat sat\u202c مرحبا بالعالم שלום עולם",
    "html_js": '<script>alert(1)</script><img src=x onerror="alert(1)">{{7*7}}${7*7}',
    "path_sql": "../../../../etc/passwd'; DROP TABLE x; --",
    "lone_surrogate": "ab\ud800cd",
    "bom_zero_width": "\ufeff\u200b\u200d\u2060",
    "ten_k_tokens": " the cat" * 5000,
    "one_megabyte": "a" * (1 << 20),
}
HOSTILE_NUMBERS = [-1, 0, 2**31, 2**63, 2**64 + 1, -(2**63) - 1, 10**100, 1e308, -1e308, 5e-324, 2.5,
                   float("nan"), float("inf"), float("-inf")]  # fmt: skip
WRONG_TYPES = [None, True, False, [], {}, [[]], [[0, 0, 0]], [["a", "b"]], {"a": 1}, "7", [None]]
FIELD_VALUES = [*HOSTILE_STRINGS.values(), *HOSTILE_NUMBERS, *WRONG_TYPES]

RAW_BODIES = {
    "no body": b"",
    "null": b"null",
    "array": b"[]",
    "array of object": b"[{}]",
    "string": b'"The cat sat"',
    "number": b"123",
    "truncated": b'{"prompt": "The cat',
    "trailing garbage": b'{"prompt": "The cat"} x',
    "invalid utf-8 outside strings": b'\xff\xfe{"prompt": "x"}',
    "invalid utf-8 in a string": b'{"prompt": "The \xff\xfe\xc3 cat"}',
    "utf-8 bom": b'\xef\xbb\xbf{"prompt": "The cat"}',
    "utf-16": '{"prompt": "The cat"}'.encode("utf-16"),
    "duplicate keys": b'{"prompt": "a", "prompt": "b"}',
    "lone surrogate as a key": b'{"prompt": "x", "\\ud800": 1}',
    "deep nesting": b"[" * 50_000 + b"]" * 50_000,
    "deep objects": b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
    "huge number literal": b'{"prompt": "x", "top_k": 1' + b"0" * 5000 + b"}",
    "NaN literal": b'{"prompt": "x", "temperature": NaN, "top_k": NaN, "n": NaN, "layer": NaN}',
}


def operations() -> list[tuple[str, str]]:
    """(METHOD, path) of every JSON API operation in the schema; needs no model loaded."""
    spec = create_app(Settings(models=["schema-only"])).openapi()
    return sorted(
        (method.upper(), path)
        for path, ops in spec["paths"].items()
        if path.startswith("/api/")
        for method in ops
        if method in ("get", "post")
    )


OPERATIONS = operations()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    folder = save_tiny(tmp_path_factory.mktemp("hostile") / "tiny", context_length=256)
    # One torch thread: on a busy 2-core machine two threads spin-wait on each other, and a tiny model's
    # forward goes from ~5 ms to ~500 ms. Restored afterwards: the setting is process-wide.
    threads = torch.get_num_threads()
    app = create_app(Settings(models=[str(folder)], torch_threads=1, **LIMITS))
    # A crash must come back as the 500 a browser would see, so that every problem is listed at once.
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def spec(client) -> dict:
    return client.app.openapi()


def resolve(spec: dict, schema: dict) -> dict:
    ref = schema.get("$ref")
    return spec["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


def base_body(spec: dict, op: dict) -> dict:
    """The schema's first example, or its required fields filled with a plain sentence."""
    schema = resolve(spec, op["requestBody"]["content"]["application/json"]["schema"])
    examples = schema.get("examples") or []
    if examples:
        return dict(examples[0])
    return {name: "The cat sat on the mat." for name in schema.get("required", [])}


def problem(r, what: str) -> str | None:
    """Why the response breaks the contract, or None."""
    if r.status_code >= 500:
        return f"{what}: HTTP {r.status_code} {r.text[:200]!r}"
    if not r.headers.get("content-type", "").startswith("application/json"):
        return f"{what}: answered {r.headers.get('content-type')!r}, not JSON"
    if r.status_code >= 400:
        try:
            detail = r.json().get("detail")
        except (ValueError, AttributeError):
            return f"{what}: HTTP {r.status_code} without a JSON object body"
        if not isinstance(detail, str) or len(detail.split()) < 3:
            return f"{what}: HTTP {r.status_code} whose detail is not a sentence: {detail!r}"
    return None


def post_raw(client, path: str, content: bytes, content_type: str = "application/json"):
    return client.post(path, content=content, headers={"content-type": content_type})


def post_cases(spec: dict, path: str) -> list[tuple[str, bytes, str]]:
    op = spec["paths"][path]["post"]
    base = base_body(spec, op)
    fields = resolve(spec, op["requestBody"]["content"]["application/json"]["schema"])["properties"]
    ok = json.dumps(base).encode()
    cases = [(f"raw {name}", body, "application/json") for name, body in RAW_BODIES.items()]
    cases += [
        ("example as text/plain", ok, "text/plain"),
        ("example as form data", ok, "application/x-www-form-urlencoded"),
        ("example without content type", ok, ""),
        ("example in an array", json.dumps([base]).encode(), "application/json"),
        ("example with an unknown field", json.dumps({**base, "__proto__": {"x": 1}}).encode(), "application/json"),
    ]  # fmt: skip
    for field in fields:
        for value in FIELD_VALUES:
            # allow_nan: NaN and Infinity go out as the bare literals a sloppy client would send.
            body = json.dumps({**base, field: value}, allow_nan=True).encode("utf-8", "surrogatepass")
            cases.append((f"{field}={str(value)[:30]!r}", body, "application/json"))
    return cases


def get_urls(spec: dict, path: str) -> list[str]:
    params = [p["name"] for p in spec["paths"][path]["get"].get("parameters", []) if p["in"] == "query"]
    raw_values = ["%FF%FE", "%00", "%", "%zz", "%ED%A0%80", "a" * 8000]
    urls = [path + "?unknown=1", path + "?" + "&".join(f"p{i}=1" for i in range(500))]
    for name in params:
        values = [
            quote(str(v).encode("utf-8", "surrogatepass"), safe="")
            for v in FIELD_VALUES
            if not isinstance(v, str) or len(v) < 50_000
        ]
        urls += [f"{path}?{name}={v}" for v in values + raw_values]
        urls += [f"{path}?{name}=1&{name}=2", f"{path}?{name}[]=1", f"{path}?{name}"]
    return urls


@pytest.mark.slow
@pytest.mark.parametrize("method,path", OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_hostile_input_never_5xx_and_rejections_are_sentences(client, spec, method, path):
    problems = []
    if method == "POST":
        for what, body, ctype in post_cases(spec, path):
            problems.append(problem(post_raw(client, path, body, ctype), what))
    else:
        for url in get_urls(spec, path):
            problems.append(problem(client.get(url), url[:80]))
    problems = [p for p in problems if p]
    assert not problems, f"{len(problems)} bad answers from {method} {path}:\n" + "\n".join(problems[:25])
    # Still alive, and still right: a plain request after the barrage.
    assert client.get("/api/models").status_code == 200
    assert client.post("/api/trace", json={"prompt": "The cat sat on the mat."}).status_code == 200


def test_hostile_input_covers_every_api_operation(spec):
    """The list under test is the schema's list: new endpoints cannot slip past."""
    listed = {(m.upper(), p) for p, ops in spec["paths"].items() if p.startswith("/api/") for m in ops}
    assert listed == set(OPERATIONS)
    assert ("POST", "/api/trace") in listed and ("GET", "/api/models") in listed


def test_hostile_input_oversized_body_is_413_before_parsing(client):
    r = post_raw(client, "/api/trace", json.dumps({"prompt": HOSTILE_STRINGS["one_megabyte"]}).encode())
    assert r.status_code == 413
    assert "limit" in r.json()["detail"]


def test_hostile_input_ten_thousand_tokens_reach_the_token_limit(client):
    r = client.post("/api/trace", json={"prompt": HOSTILE_STRINGS["ten_k_tokens"]})
    assert r.status_code == 422
    assert "tokens long" in r.json()["detail"]


def test_hostile_input_odd_text_is_traced_and_returned_as_text(client):
    """Emoji, combining marks, right-to-left marks and HTML are prompts like any other: 200, as JSON."""
    for name in ("emoji_combining", "rtl", "html_js", "control", "nul_inside"):
        r = client.post("/api/trace", json={"prompt": HOSTILE_STRINGS[name]})
        assert r.status_code == 200, (name, r.text[:200])
        assert r.headers["content-type"].startswith("application/json")
        data = r.json()
        assert data["n"] == len(data["tokens"]) > 0
