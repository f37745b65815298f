"""Our transformer equals the Hugging Face reference on the same weights (the test oracle only)."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from model import ModelLoadError, Transformer, load
from model.hf_names import config_from_hf, state_dict_from_hf, state_dict_to_hf

TOL = dict(atol=1e-4, rtol=1e-4)


def randomise_norms(hf_model) -> None:
    """HF initialises norm gains to 1 and biases to 0; perturb them so a mapping mistake shows."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in hf_model.named_parameters():
            if "norm" in name or "ln_" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)


def save_reference(hf_model, folder, tokenizer) -> None:
    randomise_norms(hf_model)
    hf_model.save_pretrained(folder)
    tokenizer.hf.save(str(folder / "tokenizer.json"))


def compare(hf_model, folder, n_layer: int) -> None:
    lm = load(folder)
    ids = torch.randint(0, lm.config.vocab_size, (1, 23), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = hf_model.eval()(ids, output_attentions=True, output_hidden_states=True)
    t = lm.trace(ids[0].tolist(), keep_resid=True)
    torch.testing.assert_close(t.logits, ref.logits[0], **TOL)
    torch.testing.assert_close(t.attention, torch.stack([a[0] for a in ref.attentions]), **TOL)
    # HF's hidden states: the embedding and each block's output, the last one after the final norm.
    for i in range(n_layer):
        torch.testing.assert_close(t.resid[i], ref.hidden_states[i][0], **TOL)
    with torch.inference_mode():
        final = lm.net.ln_final(t.resid[-1][None], None)[0]
    torch.testing.assert_close(final, ref.hidden_states[-1][0], **TOL)


def llama(n_head=4, n_kv_head=2, tie=False, **kw):
    cfg = LlamaConfig(
        vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=n_head,
        num_key_value_heads=n_kv_head, max_position_embeddings=64, tie_word_embeddings=tie, **kw,
    )  # fmt: skip
    torch.manual_seed(0)
    return _eager(LlamaForCausalLM, cfg)


def _eager(cls, cfg):
    cfg._attn_implementation = "eager"  # SDPA-backed models return no attentions (transformers 5.x trap)
    return cls(cfg)


@pytest.mark.parametrize(
    "n_head,n_kv_head,tie",
    [(4, 4, False), (4, 2, False), (4, 1, False), (4, 2, True)],
    ids=["mha-untied", "gqa-untied", "mqa-untied", "gqa-tied"],
)
def test_hf_parity_llama(tmp_path, tokenizer, n_head, n_kv_head, tie):
    ref = llama(n_head, n_kv_head, tie)
    save_reference(ref, tmp_path, tokenizer)
    compare(ref, tmp_path, 2)


def test_hf_parity_llama_linear_rope_scaling_and_classic_keys(tmp_path, tokenizer):
    ref = llama(rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0})
    save_reference(ref, tmp_path, tokenizer)
    # Rewrite the config in the classic form (rope_theta at top level, rope_scaling) as older files have it.
    cfg = json.loads((tmp_path / "config.json").read_text())
    del cfg["rope_parameters"]
    cfg |= {"rope_theta": 500.0, "rope_scaling": {"type": "linear", "factor": 2.0}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert load(tmp_path).config.rope_scale == 2.0
    compare(ref, tmp_path, 2)


def test_hf_parity_llama3_rope_scaling(tmp_path, tokenizer):
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 16}  # fmt: skip
    ref = llama(rope_parameters=rope)
    save_reference(ref, tmp_path, tokenizer)
    assert load(tmp_path).config.rope_llama3["factor"] == 8.0
    compare(ref, tmp_path, 2)


def test_hf_parity_qwen2_qkv_bias(tmp_path, tokenizer):
    cfg = Qwen2Config(
        vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(0)
    ref = _eager(Qwen2ForCausalLM, cfg)
    save_reference(ref, tmp_path, tokenizer)
    assert load(tmp_path).config.qkv_bias
    compare(ref, tmp_path, 2)


def test_hf_parity_gpt2(tmp_path, tokenizer):
    cfg = GPT2Config(
        vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    torch.manual_seed(0)
    ref = _eager(GPT2LMHeadModel, cfg)
    save_reference(ref, tmp_path, tokenizer)
    compare(ref, tmp_path, 2)


def test_hf_parity_pytorch_model_bin(tmp_path, tokenizer):
    ref = llama()
    save_reference(ref, tmp_path, tokenizer)
    from safetensors.torch import load_file

    torch.save(load_file(tmp_path / "model.safetensors"), tmp_path / "pytorch_model.bin")
    (tmp_path / "model.safetensors").unlink()
    compare(ref, tmp_path, 2)


def test_load_errors_say_what_is_wrong(tmp_path, tokenizer):
    with pytest.raises(ModelLoadError, match="neither a bundled model"):
        load(tmp_path / "nowhere")
    with pytest.raises(ModelLoadError, match="no config.json"):
        load(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    with pytest.raises(ModelLoadError, match="unsupported architecture 'BertModel'.*LlamaForCausalLM"):
        load(tmp_path)
    ref = llama()
    save_reference(ref, tmp_path, tokenizer)
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelLoadError, match="corrupt"):
        load(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="no model.safetensors"):
        load(tmp_path)


def test_a_tokenizer_bigger_than_the_embedding_table_is_refused_at_load(tmp_path):
    """Ids past the embedding table would otherwise fail inside the first forward, as a 500."""
    from tests.tiny import make_tokenizer

    save_reference(llama(), tmp_path, make_tokenizer(400))  # the weights have 300 embeddings
    with pytest.raises(ModelLoadError, match=r"has \d+ tokens but the model has only 300 embeddings"):
        load(tmp_path)


@pytest.mark.parametrize("arch", ["llama-untied", "llama-tied", "qwen2", "gpt2"])
def test_hf_names_round_trip(arch):
    """HF state dict -> ours -> HF gives back every tensor, through the one name map read both ways."""
    if arch == "gpt2":
        ref = _eager(
            GPT2LMHeadModel, GPT2Config(vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=64)
        )
    elif arch == "qwen2":
        ref = _eager(Qwen2ForCausalLM, Qwen2Config(vocab_size=300, hidden_size=32, intermediate_size=64,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False))  # fmt: skip
    else:
        ref = llama(tie=arch == "llama-tied")
    randomise_norms(ref)
    original = {
        k: v
        for k, v in ref.state_dict().items()
        if k in dict(ref.named_parameters()) or k == "lm_head.weight"
    }
    cfg = config_from_hf(ref.config.to_dict(), "x")
    ours = state_dict_from_hf(cfg, original)
    assert set(ours) == set(Transformer(cfg).state_dict())
    back = state_dict_to_hf(cfg, ours)
    assert set(back) == set(original)
    for k, v in original.items():
        torch.testing.assert_close(back[k], v, atol=0, rtol=0)
