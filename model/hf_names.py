"""Map Hugging Face model folders (GPT2LMHeadModel, the Llama family) onto our Transformer and back:
configs one way, weights both ways through one declarative name map per architecture."""

from __future__ import annotations

from dataclasses import dataclass

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


# ---------------------------------------------------------------- weights: one map, read both ways


@dataclass(frozen=True)
class Rule:
    """Our tensor name(s) and the Hugging Face one, `{i}` standing for the layer. Several of ours to one
    HF name means HF fuses them (GPT-2's c_attn: q, k, v stacked along HF's output dimension)."""

    ours: tuple[str, ...]
    hf: str
    transpose: bool = False  # GPT-2's Conv1D stores (in, out); nn.Linear stores (out, in)


def _linear(ours: str, hf: str, transpose: bool = False) -> list[Rule]:
    return [Rule((f"{ours}.{p}",), f"{hf}.{p}", transpose and p == "weight") for p in ("weight", "bias")]


GPT2_MAP = [
    Rule(("embed.weight",), "transformer.wte.weight"),
    Rule(("pos_embed.weight",), "transformer.wpe.weight"),
    *_linear("ln_final.norm", "transformer.ln_f"),
    *_linear("blocks.{i}.ln1", "transformer.h.{i}.ln_1"),
    *_linear("blocks.{i}.ln2", "transformer.h.{i}.ln_2"),
    Rule(tuple(f"blocks.{{i}}.attn.{x}_proj.weight" for x in "qkv"), "transformer.h.{i}.attn.c_attn.weight", True),
    Rule(tuple(f"blocks.{{i}}.attn.{x}_proj.bias" for x in "qkv"), "transformer.h.{i}.attn.c_attn.bias"),
    *_linear("blocks.{i}.attn.o_proj", "transformer.h.{i}.attn.c_proj", transpose=True),
    *_linear("blocks.{i}.mlp.up_proj", "transformer.h.{i}.mlp.c_fc", transpose=True),
    *_linear("blocks.{i}.mlp.down_proj", "transformer.h.{i}.mlp.c_proj", transpose=True),
    Rule(("unembed.weight",), "lm_head.weight"),
]  # fmt: skip

LLAMA_MAP = [
    Rule(("embed.weight",), "model.embed_tokens.weight"),
    Rule(("ln_final.norm.weight",), "model.norm.weight"),
    Rule(("blocks.{i}.ln1.weight",), "model.layers.{i}.input_layernorm.weight"),
    Rule(("blocks.{i}.ln2.weight",), "model.layers.{i}.post_attention_layernorm.weight"),
    *[r for x in "qkvo" for r in _linear(f"blocks.{{i}}.attn.{x}_proj", f"model.layers.{{i}}.self_attn.{x}_proj")],
    *[r for x in ("gate", "up", "down") for r in _linear(f"blocks.{{i}}.mlp.{x}_proj", f"model.layers.{{i}}.mlp.{x}_proj")],
    Rule(("unembed.weight",), "lm_head.weight"),
]  # fmt: skip

NAME_MAPS = {"gpt2": GPT2_MAP, "llama": LLAMA_MAP}
PREFIXES = {"gpt2": "transformer.", "llama": "model."}  # some checkpoints store names without it


def layer_rules(cfg: ModelConfig) -> list[Rule]:
    """The architecture's map with `{i}` spelled out for every layer."""
    out = []
    for rule in NAME_MAPS[cfg.arch]:
        layers = range(cfg.n_layer) if "{i}" in rule.hf else [None]
        out += [
            Rule(tuple(o.format(i=i) for o in rule.ours), rule.hf.format(i=i), rule.transpose) for i in layers
        ]
    return out


def state_dict_from_hf(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """HF names -> ours. Optional tensors (biases, an untied head) are mapped where present."""
    prefix = PREFIXES[cfg.arch]
    sd = {k if k.startswith(prefix) or k.startswith("lm_head.") else prefix + k: v for k, v in sd.items()}
    out = {}
    for rule in layer_rules(cfg):
        if rule.hf in sd:
            w = sd[rule.hf].t() if rule.transpose else sd[rule.hf]
            out |= dict(zip(rule.ours, w.chunk(len(rule.ours), dim=0), strict=True))
    if cfg.tie_embeddings or "unembed.weight" not in out:
        out["unembed.weight"] = out["embed.weight"]
    return {k: v.contiguous() for k, v in out.items()}


def state_dict_to_hf(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Ours -> HF names: the same map read backwards (fused tensors concatenated, Conv1D transposed)."""
    sd = {**sd, "unembed.weight": sd.get("unembed.weight", sd["embed.weight"])}
    out = {}
    for rule in layer_rules(cfg):
        if all(o in sd for o in rule.ours):
            w = torch.cat([sd[o] for o in rule.ours], dim=0)
            out[rule.hf] = (w.t() if rule.transpose else w).contiguous()
    return out
