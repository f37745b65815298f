"""Map Hugging Face model folders (GPT2LMHeadModel, the Llama family) onto our Transformer."""

from __future__ import annotations

import torch

from .config import ModelConfig

LLAMA_FAMILY = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}
SUPPORTED = "GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"


class UnsupportedModel(ValueError):
    pass


def config_from_hf(hf: dict, name: str) -> ModelConfig:
    model_type = hf.get("model_type")
    if model_type == "gpt2":
        return _gpt2_config(hf, name)
    if model_type in LLAMA_FAMILY:
        return _llama_config(hf, name, model_type)
    archs = ", ".join(hf.get("architectures") or []) or model_type or "unknown"
    raise UnsupportedModel(f"unsupported architecture {archs!r}; supported: {SUPPORTED}")


def _gpt2_config(hf: dict, name: str) -> ModelConfig:
    act = hf.get("activation_function", "gelu_new")
    if act not in ("gelu_new", "gelu_pytorch_tanh"):
        raise UnsupportedModel(f"GPT-2 activation {act!r} is not supported (only gelu_new)")
    if hf.get("scale_attn_by_inverse_layer_idx") or hf.get("tie_word_embeddings") is False:
        raise UnsupportedModel(
            "GPT-2 variants with per-layer attention scaling or untied embeddings are not supported"
        )
    d = hf["n_embd"]
    return ModelConfig(
        arch="gpt2", name=name, vocab_size=hf["vocab_size"], n_layer=hf["n_layer"], n_head=hf["n_head"],
        n_kv_head=hf["n_head"], d_model=d, d_ff=hf.get("n_inner") or 4 * d,
        context_length=hf.get("n_positions", 1024), norm_eps=hf.get("layer_norm_epsilon", 1e-5),
        tie_embeddings=True,
    )  # fmt: skip


LLAMA3_KEYS = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")


def _rope(hf: dict) -> tuple[float, float, dict | None]:
    """(base, linear scale, llama3 scaling) from the classic keys or the newer `rope_parameters` form."""
    params = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    base = float(params.get("rope_theta", hf.get("rope_theta", 10000.0)))
    kind = params.get("rope_type", params.get("type", "default"))
    if kind == "default":
        return base, 1.0, None
    if kind == "linear":
        return base, float(params["factor"]), None
    if kind == "llama3":
        return base, 1.0, {k: float(params[k]) for k in LLAMA3_KEYS}
    raise UnsupportedModel(f"RoPE type {kind!r} is not supported (default, linear and llama3 are)")


def _llama_config(hf: dict, name: str, model_type: str) -> ModelConfig:
    d, H = hf["hidden_size"], hf["num_attention_heads"]
    base, scale, llama3 = _rope(hf)
    head_dim = hf.get("head_dim") or d // H
    return ModelConfig(
        arch="llama", name=name, vocab_size=hf["vocab_size"], n_layer=hf["num_hidden_layers"], n_head=H,
        n_kv_head=hf.get("num_key_value_heads") or H, d_model=d, d_ff=hf["intermediate_size"],
        head_dim=None if head_dim == d // H else head_dim,
        context_length=hf.get("max_position_embeddings", 2048), rope_base=base, rope_scale=scale, rope_llama3=llama3,
        norm_eps=hf.get("rms_norm_eps", 1e-6), tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
        qkv_bias=model_type == "qwen2" or bool(hf.get("attention_bias", False)),
        o_bias=model_type != "qwen2" and bool(hf.get("attention_bias", False)),
        mlp_bias=bool(hf.get("mlp_bias", False)),
    )  # fmt: skip


def state_dict_from_hf(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return _gpt2_weights(cfg, sd) if cfg.arch == "gpt2" else _llama_weights(cfg, sd)


def _strip(sd: dict, prefix: str) -> dict:
    return {k.removeprefix(prefix): v for k, v in sd.items()}


def _gpt2_weights(cfg: ModelConfig, sd: dict) -> dict:
    sd = _strip(sd, "transformer.")
    D = cfg.d_model
    out = {"embed.weight": sd["wte.weight"], "pos_embed.weight": sd["wpe.weight"]}
    out |= {"ln_final.norm.weight": sd["ln_f.weight"], "ln_final.norm.bias": sd["ln_f.bias"]}
    for i in range(cfg.n_layer):
        h, b = f"h.{i}.", f"blocks.{i}."
        # GPT-2 stores Conv1D weights as (in, out): transpose into nn.Linear's (out, in).
        w, bias = sd[h + "attn.c_attn.weight"], sd[h + "attn.c_attn.bias"]
        for j, p in enumerate(("q_proj", "k_proj", "v_proj")):
            out[b + f"attn.{p}.weight"] = w[:, j * D : (j + 1) * D].t()
            out[b + f"attn.{p}.bias"] = bias[j * D : (j + 1) * D]
        pairs = {"attn.c_proj": "attn.o_proj", "mlp.c_fc": "mlp.up_proj", "mlp.c_proj": "mlp.down_proj"}
        for src, dst in pairs.items():
            out[b + dst + ".weight"] = sd[h + src + ".weight"].t()
            out[b + dst + ".bias"] = sd[h + src + ".bias"]
        for src, dst in (("ln_1", "ln1"), ("ln_2", "ln2")):
            out[b + dst + ".weight"] = sd[h + src + ".weight"]
            out[b + dst + ".bias"] = sd[h + src + ".bias"]
    out["unembed.weight"] = out["embed.weight"]
    return {k: v.contiguous() for k, v in out.items()}


def _llama_weights(cfg: ModelConfig, sd: dict) -> dict:
    lm_head = sd.get("lm_head.weight")
    sd = _strip(sd, "model.")
    out = {"embed.weight": sd["embed_tokens.weight"], "ln_final.norm.weight": sd["norm.weight"]}
    out["unembed.weight"] = sd["embed_tokens.weight"] if cfg.tie_embeddings or lm_head is None else lm_head
    for i in range(cfg.n_layer):
        h, b = f"layers.{i}.", f"blocks.{i}."
        out[b + "ln1.weight"] = sd[h + "input_layernorm.weight"]
        out[b + "ln2.weight"] = sd[h + "post_attention_layernorm.weight"]
        for k, v in sd.items():
            if k.startswith(h + "self_attn."):
                out[b + "attn." + k.removeprefix(h + "self_attn.")] = v
            elif k.startswith(h + "mlp."):
                out[b + k.removeprefix(h)] = v
    return out
