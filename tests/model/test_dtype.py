"""Weights in bfloat16 and float16: our model against Hugging Face's at the same dtype, within the
tolerance below, with RoPE's speeds and the attention probabilities still float32."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Qwen2Config, Qwen2ForCausalLM

from model import ModelLoadError, load
from model.loading import resolve_dtype
from tests.model.test_hf_parity import _eager, llama, save_reference

# bfloat16 keeps 8 significant bits (relative steps of 2^-8 = 0.4%). Measured on these models (logits up
# to 0.48): ours and Hugging Face's, both in bfloat16, differ by at most 0.002 in a logit and 0.0017 in
# a probability (HF rounds its probabilities to bfloat16; ours stay float32, so against our own float32
# model they move by at most 1e-4). The tolerances leave a tenfold margin.
BF16_LOGITS = dict(atol=0.02, rtol=0.02)
BF16_PATTERN_HF = dict(atol=0.01, rtol=0.0)
BF16_PATTERN_OURS = dict(atol=1e-3, rtol=0.0)


def reference(family: str):
    """A tiny Hugging Face model of the family, in eval mode (no dropout)."""
    torch.manual_seed(0)
    if family == "llama-gqa":
        return llama(4, 2).eval()
    small = dict(vocab_size=300, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64)
    if family == "qwen2":
        cfg = Qwen2Config(
            hidden_size=32, intermediate_size=64, num_key_value_heads=2, tie_word_embeddings=False, **small
        )
        return _eager(Qwen2ForCausalLM, cfg).eval()
    gpt2 = GPT2Config(
        vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    return _eager(GPT2LMHeadModel, gpt2).eval()


@pytest.mark.parametrize("family", ["llama-gqa", "qwen2", "gpt2"])
def test_dtype_bfloat16_matches_hugging_face_in_bfloat16(tmp_path, tokenizer, family):
    ref = reference(family)
    save_reference(ref, tmp_path, tokenizer)
    lm = load(tmp_path, dtype="bfloat16")
    assert {p.dtype for p in lm.net.parameters()} == {torch.bfloat16}
    ids = torch.randint(0, 300, (1, 23), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = ref.to(torch.bfloat16)(ids, output_attentions=True)
    t = lm.trace(ids[0].tolist())
    assert t.attention.dtype == torch.float32 and t.logits.dtype == torch.float32
    torch.testing.assert_close(t.logits, out.logits[0].float(), **BF16_LOGITS)
    torch.testing.assert_close(
        t.attention, torch.stack([a[0] for a in out.attentions]).float(), **BF16_PATTERN_HF
    )
    # and against our own float32 model: what a teacher sees changes by no more than that
    full = load(tmp_path, dtype="float32").trace(ids[0].tolist())
    torch.testing.assert_close(t.logits, full.logits, **BF16_LOGITS)
    torch.testing.assert_close(t.attention, full.attention, **BF16_PATTERN_OURS)


def test_dtype_rope_speeds_stay_float32_and_tied_weights_stay_one(tmp_path, tokenizer):
    save_reference(llama(4, 2, tie=True), tmp_path, tokenizer)
    lm = load(tmp_path, dtype=torch.bfloat16)
    # rounded to bfloat16, the slow hands of the RoPE clock would be off by up to 0.4% of their speed
    assert {b.attn.inv_freq.dtype for b in lm.net.blocks} == {torch.float32}
    assert lm.net.unembed.weight is lm.net.embed.weight
    assert not any(t.is_meta for t in [*lm.net.parameters(), *lm.net.buffers()])


def test_dtype_float16_loads_and_traces(tmp_path, tokenizer):
    save_reference(reference("gpt2"), tmp_path, tokenizer)
    lm = load(tmp_path, dtype="float16")
    t = lm.trace("The cat sat on the mat")
    assert next(lm.net.parameters()).dtype == torch.float16 and torch.isfinite(t.logits).all()
    torch.testing.assert_close(t.attention.sum(-1), torch.ones(t.attention.shape[:-1]), atol=1e-3, rtol=0)


def test_dtype_defaults_by_device_and_refuses_others():
    assert resolve_dtype(None, "cpu") == torch.float32 and resolve_dtype(None, "cuda") == torch.bfloat16
    assert resolve_dtype("float16") == torch.float16 and resolve_dtype(torch.bfloat16) == torch.bfloat16
    for bad in ("float64", "int8", torch.int8, "half precision"):
        with pytest.raises(ModelLoadError, match="float32, bfloat16, float16"):
            resolve_dtype(bad)
