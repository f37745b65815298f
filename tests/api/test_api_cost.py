"""The cost-lab and anatomy endpoints on tiny saved models."""

from __future__ import annotations

import time

import pytest
import torch

import app.cost.handler as service_module
from app.exclusive import exclusive
from labs.census import param_census
from labs.cost import REFERENCE
from tests.api_helpers import client_for, save_tiny

PROMPT = "The cat sat on the mat. The cat"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def client(tiny_folder):
    # A shared, busy machine must not make the time budget cut the ladder short in these tests.
    with pytest.MonkeyPatch.context() as mp, client_for(tiny_folder, cache_bytes=0, max_cost_n=128) as c:
        mp.setattr(service_module, "TIMING_BUDGET_S", 300.0)
        yield c


def test_api_cost_gives_n_squared_for_the_live_and_reference_models(client, tiny_folder):
    r = client.get("/api/cost", params={"n": 4096})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["n"] == 4096 and body["model"] == tiny_folder.name
    live, *refs = body["models"]
    assert live["live"] and live["key"] == "live" and live["config"]["d_model"] == 32
    assert live["scores"]["per_head"] == 4096**2
    assert live["scores"]["total"] == 4096**2 * 4 * 2  # 4 heads, 2 layers
    assert live["scores"]["bytes"]["fp32"]["per_head"] == 4 * 4096**2
    assert [m["key"] for m in refs] == list(REFERENCE)
    l7 = next(m for m in refs if m["key"] == "llama-2-7b")
    assert l7["params"]["total"] == 6_738_415_616 and l7["crossover_n"] == 16_512
    assert l7["quadratic_to_feed_forward"] == pytest.approx(4096 / 16_512)  # linear in n, 1 at the crossover
    assert l7["flops"]["per_layer"]["attention_quadratic"] == 4 * 4096**2 * 32 * 128
    l70 = next(m for m in refs if m["key"] == "llama-2-70b")
    assert l70["kv_cache"]["saving"] == 8 and l70["kv_cache"]["bytes"] == 2 * 80 * 8 * 128 * 4096 * 2


def test_api_cost_chapter_table_is_computed(client):
    rows = client.post("/api/cost", json={"n": 16}).json()["chapter"]
    assert [(r["n"], r["scores"]) for r in rows] == [(100, 10_000), (1_000, 10**6), (100_000, 10**10)]


def test_api_cost_post_equals_get_and_curves_cover_the_slider(client):
    got = client.get("/api/cost", params={"n": 1000}).json()
    assert client.post("/api/cost", json={"n": 1000}).json() == got
    assert got["ns"][0] == 16 and got["ns"][-1] == 131_072
    assert all(len(c["kv_bytes"]) == len(got["ns"]) for c in got["curves"])


@pytest.mark.parametrize(
    "params,status,words",
    [
        ({"n": 0}, 422, "greater than or equal to 1"),
        ({"n": 2**20 + 1}, 422, "less than or equal to"),
        ({"n": "many"}, 422, "integer"),
        ({"n": 64, "model": "gpt-5"}, 404, "No model named"),
        ({"n": 64, "colour": "red"}, 422, "Unknown field"),
    ],
)
def test_api_cost_rejects_bad_input_with_a_sentence(client, params, status, words):
    r = client.get("/api/cost", params=params)
    assert r.status_code == status and words in r.json()["detail"], r.text


def test_api_cost_timing_measures_the_ladder(client):
    r = client.post("/api/cost/timing", json={"max_n": 64, "repeats": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ns"] == [16, 32, 64] and body["skipped"] == [] and body["device"] == "cpu"
    assert set(body["seconds"]) == {"attention", "block"}
    assert all(t > 0 for t in body["seconds"]["attention"])
    fit = body["fits"]["attention"]
    assert fit["doubling_factor"] == pytest.approx(2 ** fit["exponent"], rel=1e-3)
    assert body["sentence"].startswith("Doubling n multiplied the attention time by")


def test_api_cost_timing_defaults_to_the_server_cap(client):
    assert client.post("/api/cost/timing", json={"repeats": 1}).json()["ns"][-1] == 128  # max_cost_n


@pytest.mark.parametrize(
    "body,words", [({"max_n": 256}, "up to n = 128"), ({"max_n": 16}, "max_n"), ({"repeats": 0}, "repeats")]
)
def test_api_cost_timing_limits(client, body, words):
    r = client.post("/api/cost/timing", json=body)
    assert r.status_code == 422 and words in r.json()["detail"], r.text


def test_api_cost_timing_is_one_at_a_time(client):
    # The test client's app runs in this process: its lock is ours (app/exclusive.py: per server).
    with exclusive("timing", hold_s=7):
        start = time.monotonic()
        r = client.post("/api/cost/timing", json={"max_n": 32, "repeats": 1})
        waited = time.monotonic() - start
    assert r.status_code == 503 and "another measurement" in r.json()["detail"]
    assert waited < 1.5  # refused at once, not after sleeping on a shared thread for the lock
    # Retry-After: what the holder said it may still take (7 s), no longer a fixed 5.
    assert (
        r.headers["retry-after"] in {"6", "7"}
        and f"try again in {r.headers['retry-after']} s" in r.json()["detail"]
    )
    assert client.post("/api/cost/timing", json={"max_n": 32, "repeats": 1}).status_code == 200


def test_api_anatomy_numbers_match_the_model(client, tiny_folder):
    r = client.post("/api/anatomy", json={"prompt": PROMPT, "top_k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    lm = client.app.state.runtime.lm(None)
    ids = lm.encode(PROMPT)
    n = len(ids)
    assert body["n"] == n and body["token_ids"] == ids and body["tokens"] == lm.tokenizer.displays(ids)
    assert [s["key"] for s in body["block"]["stages"]] == [
        "x_in", "norm1", "attn_out", "resid_mid", "norm2", "mlp_out", "resid_post"
    ]  # fmt: skip
    norms = torch.tensor(body["block"]["norms"])
    assert norms.shape == (2, 7, n)
    # Against the trace's residual norms (embed, then after each attention and feed-forward add).
    t = lm.trace(ids)
    torch.testing.assert_close(norms[0, 0], t.resid_norms[0], atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(norms[:, 3], t.resid_norms[1::2], atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(norms[:, 6], t.resid_norms[2::2], atol=1e-3, rtol=1e-3)
    # The normalised input, recomputed by hand with the block's own RMSNorm.
    block = lm.net.blocks[0]
    x = lm.net.embed(torch.tensor(ids))
    by_hand = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * block.ln1.weight
    torch.testing.assert_close(norms[0, 1], by_hand.norm(dim=-1).detach(), atol=1e-3, rtol=1e-3)


def test_api_anatomy_pipeline_shapes(client):
    body = client.post("/api/anatomy", json={"prompt": PROMPT}).json()
    n = body["n"]
    steps = body["pipeline"]
    names = [s["name"] for s in steps]
    assert names == ["token ids", "embedding lookup", "transformer block L0", "transformer block L1",
                     "final normalise", "output layer (unembedding)", "softmax"]  # fmt: skip
    assert [s["shape"] for s in steps] == [[n], [n, 32], [n, 32], [n, 32], [n, 32], [n, 300], [n, 300]]
    assert steps[0]["ids"] == body["token_ids"]
    assert body["block"]["shapes"]["scores"] == [4, n, n] and body["block"]["shapes"]["k"] == [n, 2, 8]
    top = steps[-1]["top"]
    assert len(top) == n and len(top[0]) == 5 and top[0][0]["prob"] >= top[0][1]["prob"]


def test_api_anatomy_census_live_and_references(client):
    census = client.post("/api/anatomy", json={"prompt": PROMPT}).json()["census"]
    live = client.get("/api/models").json()["models"][0]["params"]
    assert census[0]["live"] and census[0]["params"] == live
    l7 = next(c for c in census if c["key"] == "llama-2-7b")
    assert l7["params"] == param_census(REFERENCE["llama-2-7b"]) | {"tied": False}
    assert l7["feed_forward_share"] == pytest.approx(2 / 3, abs=0.01)


def test_api_anatomy_gpt2_shows_learned_positions(tmp_path):
    with client_for(save_tiny(tmp_path / "g", arch="gpt2")) as c:
        steps = c.post("/api/anatomy", json={"prompt": PROMPT}).json()["pipeline"]
    assert steps[2]["name"] == "+ learned positions" and steps[2]["shape"][1] == 32


@pytest.mark.parametrize(
    "body,status",
    [({"prompt": "   "}, 422), ({"prompt": "x" * 5000}, 422), ({"prompt": "hi", "top_k": 99}, 422)],
)
def test_api_anatomy_rejects_bad_input(client, body, status):
    r = client.post("/api/anatomy", json=body)
    assert r.status_code == status and r.json()["detail"], r.text


def test_api_cost_openapi_documents_examples(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("CostBody", "TimingRequest", "AnatomyRequest"):
        assert schemas[name]["examples"], name


def test_api_cost_timing_beyond_the_memory_bound_is_refused_with_a_sentence(tiny_folder):
    # 4 heads x n² x 4 bytes x 2 <= 1 MiB: the tiny model is timed up to n = 128.
    with client_for(tiny_folder, cache_bytes=0, max_cost_n=4096, max_timing_bytes=2**20) as c:
        info = c.get("/api/models").json()
        assert info["limits"]["max_timing_n"] == info["models"][0]["max_timing_n"] == 128
        r = c.post("/api/cost/timing", json={"max_n": 256, "repeats": 1})
        assert r.status_code == 422
        assert (
            "2 MiB at once (4 heads x 256² scores" in r.json()["detail"]
            and "up to n = 128" in r.json()["detail"]
        )
        assert c.post("/api/cost/timing", json={"repeats": 1}).json()["ns"][-1] == 128  # the default fits
