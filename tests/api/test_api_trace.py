"""POST /api/trace and /api/head against the model itself: every number the page draws is the model's."""

from __future__ import annotations

import base64

import pytest
import torch

from app.trace.schemas import AblationResponse, HeadResponse, LensResponse, TraceResponse
from app.wire import decode_attention, decode_thumbnails, encode_attention
from model import load
from tests.api_helpers import client_for, save_tiny

PROMPT = "The cat sat on the mat. The dog bites the man."


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("m") / "tiny")


@pytest.fixture(scope="module")
def lm(folder):
    return load(folder)


@pytest.fixture(scope="module")
def client(folder):
    with client_for(folder, cache_bytes=0) as c:
        yield c


def post(client, path, **body):
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_api_trace_matches_the_model(client, lm):
    body = TraceResponse.model_validate(post(client, "/api/trace", prompt=PROMPT, top_k=3)).model_dump()
    ref = lm.trace(PROMPT)
    L, n = lm.config.n_layer, ref.n_tokens
    assert body["n"] == n and body["token_ids"] == ref.token_ids and body["tokens"] == ref.tokens
    assert body["resid"]["stages"] == ref.stage_names and len(body["resid"]["norms"]) == 2 * L + 1
    torch.testing.assert_close(torch.tensor(body["resid"]["norms"]), ref.resid_norms, atol=1e-3, rtol=0)
    torch.testing.assert_close(torch.tensor(body["writes"]["attn"]), ref.attn_write_norms, atol=1e-3, rtol=0)
    torch.testing.assert_close(torch.tensor(body["writes"]["mlp"]), ref.mlp_write_norms, atol=1e-3, rtol=0)
    assert "lens" not in body and "attention" not in body  # on demand: /api/lens, /api/head
    top = torch.softmax(ref.logits, -1).topk(3)
    assert [p["position"] for p in body["predictions"]] == list(range(n))
    assert [[t["id"] for t in p["top"]] for p in body["predictions"]] == top.indices.tolist()


def test_api_trace_predict_last_is_the_last_row_of_all(client):
    """What the page asks for while typing: the same answer, with the last position's prediction only."""
    every = post(client, "/api/trace", prompt=PROMPT, top_k=4, temperature=0.7)
    last = post(client, "/api/trace", prompt=PROMPT, top_k=4, temperature=0.7, predict="last")
    assert last["predictions"] == every["predictions"][-1:]
    assert last["predictions"][0]["position"] == every["n"] - 1
    assert {k: v for k, v in last.items() if k != "predictions"} == {
        k: v for k, v in every.items() if k != "predictions"
    }
    r = client.post("/api/trace", json={"prompt": PROMPT, "predict": "first"})
    assert r.status_code == 422 and "predict" in r.text


def test_api_lens_equals_the_model_lens(client, lm):
    body = LensResponse.model_validate(post(client, "/api/lens", prompt=PROMPT)).model_dump()
    ref = lm.trace(PROMPT, lens_k=5)
    assert body["n"] == ref.n_tokens and body["tokens"] == ref.tokens and body["lens"]["k"] == 5
    assert body["lens"]["tokens"] == [
        [lm.tokenizer.displays(r) for r in layer] for layer in ref.lens_ids.tolist()
    ]
    torch.testing.assert_close(torch.tensor(body["lens"]["probs"]), ref.lens_probs, atol=1e-5, rtol=0)
    knocked = post(client, "/api/lens", prompt=PROMPT, ablate=[[0, 1]])["lens"]["probs"]
    ref = lm.trace(PROMPT, ablate=[(0, 1)], lens_k=5).lens_probs
    torch.testing.assert_close(torch.tensor(knocked), ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("causal", [True, False])
def test_api_trace_thumbnails_are_the_exact_bytes_at_short_prompts(client, lm, causal):
    att = post(client, "/api/trace", prompt=PROMPT, causal=causal)["thumbnails"]
    ref = lm.trace(PROMPT, causal=causal).attention
    assert att["block"] == 1 and att["size"] == att["n"]
    att = {k: v for k, v in att.items() if k not in ("size", "block")}  # the full payload, as documented
    L, H, n, _ = ref.shape
    assert (att["format"], att["n_layer"], att["n_head"], att["n"]) == (
        "u8-tril" if causal else "u8-full",
        L,
        H,
        n,
    )
    raw = base64.b64decode(att["data"])
    assert len(raw) == L * H * (n * (n + 1) // 2 if causal else n * n)
    decoded = decode_attention(att)
    assert (decoded - ref).abs().max().item() <= 0.5 / 255 + 1e-6  # rounding, never more
    # The documented order by hand: layer-major, then head, then row i holding keys 0..i.
    layer, h, i = L - 1, H - 1, n - 1
    offset = (
        ((layer * H + h) * (n * (n + 1) // 2) + i * (i + 1) // 2) if causal else ((layer * H + h) * n + i) * n
    )
    row = torch.tensor(list(raw[offset : offset + i + 1])) / 255
    torch.testing.assert_close(row, ref[layer, h, i, : i + 1], atol=1 / 255, rtol=0)


def test_encode_attention_rounds_to_the_nearest_byte():
    p = torch.tensor([[1.0, 0.0], [0.2, 0.8]])[None, None]
    payload = encode_attention(p, causal=True)
    assert list(base64.b64decode(payload["data"])) == [255, 51, 204]  # upper-right 0 is not sent


def test_api_trace_temperature_and_top_k(client, lm):
    body = post(client, "/api/trace", prompt=PROMPT, temperature=0.5, top_k=4)
    probs = torch.softmax(lm.trace(PROMPT).logits / 0.5, -1).topk(4)
    got = torch.tensor([[t["prob"] for t in p["top"]] for p in body["predictions"]])
    torch.testing.assert_close(got, probs.values, atol=1e-5, rtol=0)
    hot = post(client, "/api/trace", prompt=PROMPT, temperature=5.0, top_k=4)
    assert hot["predictions"][-1]["top"][0]["prob"] < body["predictions"][-1]["top"][0]["prob"]


def test_api_trace_switches_reach_the_model(client, lm):
    for switches in ({"position": False}, {"ablate": [[1, 2], [0, 0]]}, {"causal": False}):
        att = decode_thumbnails(post(client, "/api/trace", prompt=PROMPT, **switches)["thumbnails"])
        kw = {k: [tuple(x) for x in v] if k == "ablate" else v for k, v in switches.items()}
        torch.testing.assert_close(att, lm.trace(PROMPT, **kw).attention, atol=0.5 / 255 + 1e-6, rtol=0)
        assert not torch.allclose(att, lm.trace(PROMPT).attention, atol=0.01)


def test_api_head_sends_one_head_in_full(client, lm):
    body = HeadResponse.model_validate(post(client, "/api/head", prompt=PROMPT, layer=1, head=3)).model_dump()
    ref = lm.trace(PROMPT).attention[1, 3]
    assert (body["layer"], body["head"], body["kv_head"], body["n"]) == (1, 3, 1, ref.shape[0])
    torch.testing.assert_close(torch.tensor(body["pattern"]), ref, atol=1e-5, rtol=0)
    n = ref.shape[0]
    assert body["scores"]["previous_token"] == pytest.approx(
        ref[range(1, n), range(n - 1)].mean().item(), abs=1e-4
    )
    assert body["scores"]["first_token"] == pytest.approx(
        ref[1:, 0].mean().item(), abs=1e-4
    )  # queries 1..n-1
    unablated = post(client, "/api/head", prompt=PROMPT, layer=1, head=3, ablate=[[0, 1]])
    torch.testing.assert_close(torch.tensor(unablated["pattern"]),
                               lm.trace(PROMPT, ablate=[(0, 1)]).attention[1, 3], atol=1e-5, rtol=0)  # fmt: skip


def test_api_ablation_compares_intact_and_knocked_out(client, lm):
    heads = [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [1, 3]]
    body = post(client, "/api/ablation", prompt=PROMPT, ablate=heads, index=2, top_k=5)
    body = AblationResponse.model_validate(body).model_dump()
    ids = lm.encode(PROMPT)
    p = torch.softmax(lm.logits(ids)[2], -1)
    q = torch.softmax(lm.logits(ids, ablate=[tuple(h) for h in heads])[2], -1)
    assert [t["id"] for t in body["intact"]] == p.topk(5).indices.tolist()
    assert [t["id"] for t in body["ablated"]] == q.topk(5).indices.tolist()
    assert body["kl"] == pytest.approx((p * (p.log() - q.log())).sum().item(), abs=1e-4) and body["kl"] > 0
    assert body["next_token"]["id"] == ids[3]
    assert body["next_token"]["intact"] == pytest.approx(p[ids[3]].item(), abs=1e-5)
    assert {r["id"] for r in body["rows"]} == {t["id"] for t in body["intact"] + body["ablated"]}
    mean = post(client, "/api/ablation", prompt=PROMPT, ablate=heads, mode="mean")
    assert mean["index"] == len(ids) - 1 and mean["next_token"] is None and mean["mode"] == "mean"
    assert mean["kl"] != body["kl"]


def test_api_responses_are_cached_by_content(folder):
    with client_for(folder) as client:
        cache = client.app.state.runtime.cache
        client.headers["accept-encoding"] = (
            "identity"  # gzip forms add to the size: tests/api/test_gzip_cache.py
        )
        a = client.post("/api/trace", json={"prompt": PROMPT}).content
        b = client.post("/api/trace", json={"prompt": PROMPT, "model": "tiny", "top_k": 10}).content
        c = client.post("/api/trace", json={"prompt": PROMPT, "top_k": 3}).content
        assert a == b and a != c
        assert (cache.hits, cache.misses, len(cache)) == (1, 2, 2)
        assert cache.size == len(a) + len(c)


def test_trace_groups_byte_tokens_and_names_a_head_to_open(client, lm):
    from labs.showcase import showcase_head

    body = post(client, "/api/trace", prompt="a 🙂 b")
    groups = body["groups"]
    assert [g["text"] for g in groups] == ["🙂"]
    g = groups[0]
    assert "".join(body["tokens"][g["start"] : g["end"]]) == "".join(g["pieces"])
    show, want = body["showcase"], showcase_head(lm.trace("a 🙂 b").attention)
    assert (show["layer"], show["head"]) == (want.layer, want.head)
    assert show["score"] == pytest.approx(want.score, abs=1e-4)
    assert post(client, "/api/trace", prompt="a")["showcase"] is None  # fewer than 3 tokens
