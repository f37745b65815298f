"""The Hugging Face reference on our weights: the tool people compare us with.

Builds `LlamaForCausalLM` / `GPT2LMHeadModel` from our config and copies our weights in through
`model/hf_names.py`'s name map read backwards, with eager attention (SDPA-backed models silently return no attentions).
"""

from __future__ import annotations

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from model.hf_names import state_dict_to_hf
from model.transformer import Transformer


def hf_config(net: Transformer):
    c = net.cfg
    if c.arch == "gpt2":
        cfg = GPT2Config(
            vocab_size=c.vocab_size, n_positions=c.context_length, n_embd=c.d_model, n_layer=c.n_layer,
            n_head=c.n_head, n_inner=c.d_ff, activation_function="gelu_new", layer_norm_epsilon=c.norm_eps,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True,
        )  # fmt: skip
    else:
        cfg = LlamaConfig(
            vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_ff, num_hidden_layers=c.n_layer,
            num_attention_heads=c.n_head, num_key_value_heads=c.n_kv_head, head_dim=c.hd,
            max_position_embeddings=c.context_length, rms_norm_eps=c.norm_eps,
            tie_word_embeddings=c.tie_embeddings, attention_bias=c.qkv_bias and c.o_bias, mlp_bias=c.mlp_bias,
            rope_parameters=_rope_parameters(c.rope_base, c.rope_scale),
        )  # fmt: skip
    cfg._attn_implementation = "eager"
    return cfg


def _rope_parameters(base: float, scale: float) -> dict:
    if scale == 1.0:
        return {"rope_type": "default", "rope_theta": base}
    return {"rope_type": "linear", "factor": scale, "rope_theta": base}


def hf_state_dict(net: Transformer) -> dict[str, torch.Tensor]:
    return state_dict_to_hf(net.cfg, net.state_dict())


def hf_model(net: Transformer):
    """An eager HF model with our weights, checked to compute the same logits."""
    cls = GPT2LMHeadModel if net.cfg.arch == "gpt2" else LlamaForCausalLM
    ref = cls(hf_config(net)).eval()
    missing, unexpected = ref.load_state_dict(hf_state_dict(net), strict=False)
    missing = [k for k in missing if k in dict(ref.named_parameters())]
    if missing or unexpected:
        raise RuntimeError(f"weight mapping incomplete: missing {missing[:5]}, unexpected {unexpected[:5]}")
    idx = torch.randint(0, net.cfg.vocab_size, (1, 19), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        torch.testing.assert_close(ref(idx).logits, net(idx), atol=2e-4, rtol=2e-4)
    return ref


@torch.inference_mode()
def hf_capture(ref, idx: torch.Tensor):
    """What a notebook user runs to see attention and hidden states."""
    return ref(idx, output_attentions=True, output_hidden_states=True, use_cache=False)


@torch.inference_mode()
def hf_plain(ref, idx: torch.Tensor):
    return ref(idx, use_cache=False)
