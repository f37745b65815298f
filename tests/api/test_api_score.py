"""POST /api/score: every step of one attention score is the model's own arithmetic, read back from its hooks."""

from __future__ import annotations

import math

import pytest
import torch

from model import act_name, load
from tests.api_helpers import client_for, save_tiny

PROMPT = "The cat sat on the mat. The dog bites the man."


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("score")
    return {"llama": save_tiny(root / "llama"), "gpt2": save_tiny(root / "gpt2", arch="gpt2")}


@pytest.fixture(scope="module")
def client(folders):
    with client_for(folders["llama"], folders["gpt2"], cache_bytes=0) as c:
        yield c


def score(client, **body):
    r = client.post("/api/score", json={"prompt": PROMPT, **body})
    assert r.status_code == 200, r.text
    return r.json()


def model_rows(folder, layer, head, index, **switches):
    lm = load(folder)
    names = [act_name(k, layer) for k in ("attn_scores", "pattern", "z")]
    _, cache = lm.run_with_cache(PROMPT, names, logits=False, **switches)
    return lm, [cache[name][0] for name in names]


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("causal", [True, False])
def test_score_steps_equal_the_models_hooks(client, folders, arch, causal):
    layer, head, index = 1, 3, 7
    got = score(
        client, model=folders[arch].name, layer=layer, head=head, index=index, causal=causal, vectors=32
    )
    lm, (scores, pattern, z) = model_rows(folders[arch], layer, head, index, causal=causal)
    keys = got["keys"]
    weights = torch.tensor([k["weight"] for k in keys], dtype=torch.float64)
    # The softmax row shown is the head's attention row.
    torch.testing.assert_close(weights, pattern[head, index].double(), atol=1e-6, rtol=0)
    # q.k / sqrt(d) before masking is what the model recorded for every key the mask lets through.
    visible = [k for k in keys if not k["masked"]]
    assert len(visible) == (index + 1 if causal else got["n"])
    for k in visible:
        assert k["scaled"] == pytest.approx(float(scores[head, index, k["position"]]), abs=1e-5)
        assert k["scaled"] == pytest.approx(k["dot"] / math.sqrt(lm.config.hd), abs=1e-6)
    assert all(math.isinf(float(scores[head, index, k["position"]])) for k in keys if k["masked"])
    # The weighted sum of the value vectors is the head's output (hook_z).
    v = torch.tensor([k["v"] for k in visible], dtype=torch.float64)
    w = torch.tensor([k["weight"] for k in visible], dtype=torch.float64)
    torch.testing.assert_close(w @ v, z[index, head].double(), atol=1e-3, rtol=0)
    torch.testing.assert_close(torch.tensor(got["z"]), z[index, head].float(), atol=1e-4, rtol=0)
    assert got["z_check"] < 1e-5


def test_score_rotary_and_grouped_query(client, folders):
    got = score(client, model="llama", layer=0, head=3, index=5)
    assert got["rotary"] and got["q_rot"] is not None and got["kv_head"] == 1 and got["group"] == [2, 3]
    k5 = got["keys"][5]
    # RoPE rotates each pair of dimensions: lengths stay, directions change (position 5 is not 0).
    assert math.dist(got["q"], got["q_rot"]) > 1e-3
    assert sum(x * x for x in k5["k"]) == pytest.approx(sum(x * x for x in k5["k_rot"]), rel=1e-3)
    assert got["keys"][0]["k"] == pytest.approx(got["keys"][0]["k_rot"], abs=1e-4)  # position 0: no turn
    assert any("Grouped-query" in s for s in got["notes"])
    off = score(client, model="llama", layer=0, head=3, index=5, position=False)
    assert off["q"] == pytest.approx(off["q_rot"], abs=1e-6)
    gpt2 = score(client, model="gpt2", layer=0, head=1)
    assert not gpt2["rotary"] and gpt2["q_rot"] is None and gpt2["keys"][0]["k_rot"] is None
    assert gpt2["index"] == gpt2["n"] - 1  # default: the last token


def test_score_sends_the_heaviest_vectors_when_they_do_not_fit(client):
    got = score(client, model="llama", layer=1, head=0, vectors=3)
    assert len(got["shown"]) == 3
    weights = [k["weight"] for k in got["keys"]]
    assert sorted(got["shown"]) == got["shown"]
    assert min(weights[j] for j in got["shown"]) >= sorted(weights)[-3] - 1e-12
    assert sum(weights) - sum(weights[j] for j in got["shown"]) == pytest.approx(
        got["hidden_weight"], abs=1e-6
    )
    assert all(k["v"] is None for k in got["keys"] if k["position"] not in got["shown"])


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"layer": 9, "head": 0}, "There is no head [9, 0]"),
        ({"layer": 0, "head": 4}, "heads 0-3"),
        ({"layer": 0, "head": 0, "index": 999}, "outside the prompt"),
        ({"layer": 0, "head": 0, "index": -1}, "outside the prompt"),
        ({"layer": 0, "head": 0, "prompt": "   "}, "empty"),
        ({"layer": 0, "head": 0, "vectors": 0}, "vectors"),
    ],
)
def test_score_bad_input_is_a_422_sentence(client, body, words):
    r = client.post("/api/score", json={"prompt": PROMPT, **body})
    assert r.status_code == 422, r.text
    assert words in r.json()["detail"]
