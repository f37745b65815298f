"""The one config that describes every model we run: Llama-style and GPT-2-style."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal

Arch = Literal["llama", "gpt2"]


@dataclass(frozen=True)
class ModelConfig:
    arch: Arch = "llama"
    vocab_size: int = 4096
    n_layer: int = 4
    n_head: int = 8
    n_kv_head: int = 2  # query heads share K/V heads in groups of n_head // n_kv_head (GQA)
    d_model: int = 256
    d_ff: int = 704  # SwiGLU hidden size; GPT-2 uses 4 * d_model
    head_dim: int | None = None  # defaults to d_model // n_head
    context_length: int = 512
    rope_base: float = 10000.0
    rope_scale: float = 1.0  # position interpolation: positions are divided by this
    # Llama-3.1-style frequency-dependent RoPE scaling: {"factor", "low_freq_factor", "high_freq_factor",
    # "original_max_position_embeddings"}; None for plain RoPE.
    rope_llama3: dict | None = None
    norm_eps: float = 1e-5
    tie_embeddings: bool = True
    qkv_bias: bool = False  # Qwen2 has biases on q/k/v only
    o_bias: bool = False
    mlp_bias: bool = False
    # No positional encoding at all (no RoPE, no position vectors): order can only come from the causal
    # mask, as in the chapter's caveat; the `classroom-nope` twin is trained this way.
    no_position: bool = False
    name: str = "model"

    def __post_init__(self) -> None:
        if self.arch not in ("llama", "gpt2"):
            raise ValueError(f"arch must be 'llama' or 'gpt2', not {self.arch!r}")
        if self.n_head % self.n_kv_head:
            raise ValueError(f"n_kv_head ({self.n_kv_head}) must divide n_head ({self.n_head})")
        if self.arch == "gpt2" and self.n_kv_head != self.n_head:
            raise ValueError("GPT-2-style blocks use full multi-head attention (n_kv_head == n_head)")
        if self.head_dim is None and self.d_model % self.n_head:
            raise ValueError(f"n_head ({self.n_head}) must divide d_model ({self.d_model})")
        if self.rope_scale <= 0:
            raise ValueError("rope_scale must be positive")

    @property
    def hd(self) -> int:
        return self.head_dim or self.d_model // self.n_head

    @property
    def n_rep(self) -> int:
        """How many query heads share one K/V head."""
        return self.n_head // self.n_kv_head

    @property
    def positional(self) -> str:
        if self.no_position:
            return "none"
        return "rope" if self.arch == "llama" else "learned"

    @property
    def norm(self) -> str:
        return "RMSNorm" if self.arch == "llama" else "LayerNorm"

    @property
    def mlp_kind(self) -> str:
        return "SwiGLU" if self.arch == "llama" else "GELU"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown config keys: {sorted(unknown)}")
        return cls(**d)

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
