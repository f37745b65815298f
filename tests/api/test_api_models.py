"""GET /api/models: every loaded model with its architecture and census, and the limits in force."""

from __future__ import annotations

import pytest

from app.trace.schemas import ModelsResponse
from labs.census import param_census
from model.loading import load
from tests.api_helpers import client_for, save_tiny

FIELDS = {"name", "arch", "n_layer", "n_head", "n_kv_head", "d_model", "d_ff", "head_dim", "vocab_size",
          "context_length", "positional", "norm", "mlp", "rope_base", "rope_scale", "params", "has_card", "max_timing_n"}  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return save_tiny(root / "tiny"), save_tiny(root / "tinygpt2", "gpt2", seed=1, card=None)


def test_api_models_lists_every_model_with_contract_fields(folders):
    with client_for(*folders, max_prompt_chars=123, max_tokens=40, max_top_k=7) as client:
        r = client.get("/api/models")
    assert r.status_code == 200
    body = ModelsResponse.model_validate(r.json()).model_dump()
    assert body["default"] == "tiny" and [m["name"] for m in body["models"]] == ["tiny", "tinygpt2"]
    llama, gpt2 = body["models"]
    assert FIELDS <= set(llama) and FIELDS <= set(gpt2)
    assert (llama["arch"], llama["positional"], llama["norm"], llama["mlp"]) == (
        "llama",
        "rope",
        "RMSNorm",
        "SwiGLU",
    )
    assert (gpt2["arch"], gpt2["positional"], gpt2["norm"], gpt2["mlp"]) == (
        "gpt2",
        "learned",
        "LayerNorm",
        "GELU",
    )
    assert (llama["n_layer"], llama["n_head"], llama["n_kv_head"], llama["head_dim"]) == (2, 4, 2, 8)
    assert llama["has_card"] and not gpt2["has_card"]
    assert llama["context_length"] == 64 and llama["max_tokens"] == 40
    assert body["limits"] == {"max_prompt_chars": 123, "max_tokens": 40, "max_cost_n": 4096,
                              "max_timing_n": 2048, "max_timing_bytes": 256 * 2**20,
                              "max_request_bytes": 65536, "max_top_k": 7, "max_waiting": 64}  # fmt: skip


def test_api_models_census_counts_the_loaded_weights(folders):
    with client_for(*folders) as client:
        models = client.get("/api/models").json()["models"]
    for info, folder in zip(models, folders, strict=True):
        lm = load(folder)
        assert info["params"] == param_census(lm.config)
        assert info["params"]["total"] == sum(p.numel() for p in lm.net.parameters())
