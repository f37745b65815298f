"""One decoder-only transformer for both families people bring.

- Llama-style: token embedding, pre-norm RMSNorm, RoPE (rotate-half, configurable base, position
  interpolation scale), grouped-query attention (MHA and MQA as special cases), SwiGLU MLP,
  final RMSNorm, tied or untied unembedding, optional q/k/v biases (Qwen2).
- GPT-2-style: token + learned absolute position embeddings, pre-norm LayerNorm, biases everywhere,
  GELU (tanh) MLP, final LayerNorm, tied unembedding.

Attention is computed explicitly (scores, mask, softmax in float32) so the matrix exists to be seen;
`Run(impl="sdpa")` takes the fused `F.scaled_dot_product_attention` instead where nobody looks
(training), and a test keeps the two equal. Hook points carry TransformerLens's names and meanings.

Notation: B batch, T tokens, H query heads, K key/value heads, D d_model, d head_dim, V vocab.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .hooks import HookPoint, Run, name_hook_points


class Norm(nn.Module):
    """RMSNorm (Llama) or LayerNorm (GPT-2, which centres first and adds a bias), hooked as
    TransformerLens hooks them: `hook_scale` is the divisor sqrt(mean(x^2) + eps) (B, T, 1) and
    `hook_normalized` is x / scale *before* the weight (B, T, D); we never fold the weight away.

    `ln_final` keeps its weights one level down (`ln_final.norm.weight`, the name checkpoints use)
    and its hooks at `ln_final.hook_*`: it passes itself as `hooks`."""

    def __init__(self, cfg: ModelConfig, hooked: bool = True) -> None:
        super().__init__()
        self.centre, self.eps = cfg.arch == "gpt2", cfg.norm_eps
        self.weight = nn.Parameter(torch.ones(cfg.d_model))
        self.bias = nn.Parameter(torch.zeros(cfg.d_model)) if self.centre else None
        if hooked:
            self.hook_scale = HookPoint()  # (B, T, 1)
            self.hook_normalized = HookPoint()  # (B, T, D), before the weight

    def forward(
        self, x: torch.Tensor, run: Run | None = None, hooks: nn.Module | None = None
    ) -> torch.Tensor:
        hooks = self if hooks is None else hooks
        xf = x.float()  # normalise in float32 like the references, whatever the activation dtype
        if self.centre:
            xf = xf - xf.mean(-1, keepdim=True)
        scale = (xf.pow(2).mean(-1, keepdim=True) + self.eps).sqrt()
        if run is not None:
            scale = hooks.hook_scale(scale, run)
        normalized = (xf / scale).to(x.dtype)
        if run is not None:
            normalized = hooks.hook_normalized(normalized, run)
        out = normalized * self.weight
        return out if self.bias is None else out + self.bias


def rope_inv_freq(head_dim: int, base: float, llama3: dict | None = None) -> torch.Tensor:
    """One angular speed per pair of dimensions: the hands of the clock, fastest first."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    return inv_freq if llama3 is None else llama3_scaled(inv_freq, **llama3)


def llama3_scaled(inv_freq, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings):
    """Llama 3.1: slow hands (long wavelengths) are slowed by `factor`, fast hands kept, a blend between."""
    old = original_max_position_embeddings
    wavelen = 2 * math.pi / inv_freq
    smooth = ((old / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)).clamp(0, 1)
    return (1 - smooth) * inv_freq / factor + smooth * inv_freq


def rope_cos_sin(inv_freq: torch.Tensor, positions: torch.Tensor, scale: float):
    angles = torch.outer(positions.double() / scale, inv_freq.double())  # (T, d/2)
    emb = torch.cat([angles, angles], dim=-1)  # (T, d), rotate-half layout
    return emb.cos().float(), emb.sin().float()


ROWS = 64  # query rows per block of explicit causal attention: H x 64 x n scores fit the CPU's cache
# Up to this many tokens the whole (H, n, n) score matrix fits the cache anyway, and one product with the
# mask added (baddbmm) is fewer, larger ops than the blocks' five per block plus the zeroed future:
# at n = 128 a classroom-sized forward is mostly small ops (`python -m bench.attention 2 128 30` times both).
WHOLE_UP_TO = 256


@functools.lru_cache(maxsize=16)
def causal_mask(T: int, device: torch.device) -> torch.Tensor:
    """(T, T) bool, True above the diagonal: the future a token may not see. Cached, read-only."""
    with torch.inference_mode(False):
        return torch.ones(T, T, dtype=torch.bool, device=device).triu(1)


@functools.lru_cache(maxsize=16)
def causal_bias(T: int, device: torch.device) -> torch.Tensor:
    """(T, T) float32, -inf above the diagonal and 0 elsewhere: the mask as a term added to the scores,
    so the product and the mask are one op. Cached, read-only."""
    with torch.inference_mode(False):
        return torch.zeros(T, T, device=device).masked_fill_(causal_mask(T, device), float("-inf"))


# A score this far below its row's largest gets probability exactly 0 instead of under e^-70 (4e-31), a
# difference no view, sum or test can see. Left alone, such scores make the softmax write subnormal floats
# (below 1.2e-38), which this CPU's exp and weighted sum handle on a slow path: on the bundled
# model's layer 0, whose self heads are sharp, the softmax and pattern @ v took 580 us instead of 110.
NEGLIGIBLE_SCORE = -70.0


def softmax_(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, written into `scores` (whose values it overwrites), with the
    probabilities below e^NEGLIGIBLE_SCORE set to 0 (see NEGLIGIBLE_SCORE); -inf stays probability 0."""
    scores.sub_(scores.amax(-1, keepdim=True))
    F.threshold_(scores, NEGLIGIBLE_SCORE, float("-inf"))
    return torch.softmax(scores, -1, out=scores)


def softmax_new(scores: torch.Tensor) -> torch.Tensor:
    """`softmax_` into a new tensor: for scores the cache keeps or autograd follows (which cannot follow
    writes in place, so it gets out-of-place ops)."""
    if scores.requires_grad:
        shifted = scores - scores.amax(-1, keepdim=True)
        return torch.softmax(F.threshold(shifted, NEGLIGIBLE_SCORE, float("-inf")), -1)
    return softmax_(scores.clone())


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return (x * cos.to(x.dtype)) + (rotate_half(x) * sin.to(x.dtype))


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.cfg, self.layer = cfg, layer
        H, K, d, D = cfg.n_head, cfg.n_kv_head, cfg.hd, cfg.d_model
        bias = cfg.qkv_bias or cfg.arch == "gpt2"
        self.q_proj = nn.Linear(D, H * d, bias=bias)
        self.k_proj = nn.Linear(D, K * d, bias=bias)
        self.v_proj = nn.Linear(D, K * d, bias=bias)
        self.o_proj = nn.Linear(H * d, D, bias=cfg.o_bias or cfg.arch == "gpt2")
        if cfg.arch == "llama":
            self.register_buffer(
                "inv_freq", rope_inv_freq(d, cfg.rope_base, cfg.rope_llama3).float(), persistent=False
            )
            self._rope_tables: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
            self.hook_rot_q = HookPoint()  # (B, T, H, d), after RoPE (= hook_q without positions)
            self.hook_rot_k = HookPoint()  # (B, T, K, d), after RoPE
        self.hook_q = HookPoint()  # (B, T, H, d), before RoPE
        self.hook_k = HookPoint()  # (B, T, K, d), before RoPE
        self.hook_v = HookPoint()  # (B, T, K, d)
        self.hook_attn_scores = HookPoint()  # (B, H, T, T), scaled and masked, before softmax
        self.hook_pattern = HookPoint()  # (B, H, T, T), softmax probabilities
        self.hook_z = HookPoint()  # (B, T, H, d), each head's weighted sum of values; ablation hooks here
        self.hook_result = HookPoint()  # (B, T, H, D), each head's write z_h @ W_O[h], without o_proj's bias

    def forward(self, x: torch.Tensor, run: Run | None) -> torch.Tensor:
        cfg = self.cfg
        B, T, _ = x.shape
        q = self.hook_q(self.q_proj(x).view(B, T, cfg.n_head, cfg.hd), run)
        k = self.hook_k(self.k_proj(x).view(B, T, cfg.n_kv_head, cfg.hd), run)
        v = self.hook_v(self.v_proj(x).view(B, T, cfg.n_kv_head, cfg.hd), run)
        if cfg.arch == "llama":  # as in TransformerLens, only a rotary model has hook_rot_q/k
            if not cfg.no_position and (run is None or run.position):
                scale = run.rope_scale if run is not None and run.rope_scale else cfg.rope_scale
                cos, sin = self.rope_table(T, scale, x.device)
                q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            q, k = self.hook_rot_q(q, run), self.hook_rot_k(k, run)
        fused = run is not None and run.impl == "sdpa"
        z = self.hook_z(self.attend_sdpa(q, k, v, run) if fused else self.attend(q, k, v, run), run)
        if run is not None and run.wants(self.hook_result.name):
            return self.per_head_output(z, run)
        return self.o_proj(z.reshape(B, T, cfg.n_head * cfg.hd))

    def per_head_output(self, z: torch.Tensor, run: Run) -> torch.Tensor:
        """o_proj split by head, as TransformerLens's `use_attn_result`: only when someone asks for
        hook_result, since it materialises (B, T, H, D), H times the output the plain path writes."""
        W_O = self.o_proj.weight.view(self.cfg.d_model, self.cfg.n_head, self.cfg.hd)  # (D, H, d)
        result = self.hook_result(torch.einsum("bthd,Dhd->bthD", z, W_O), run)  # (B, T, H, D)
        out = result.sum(dim=2)
        return out if self.o_proj.bias is None else out + self.o_proj.bias

    def rope_table(self, T: int, scale: float, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin (T, 1, d) for positions 0..T-1, cached per (T, scale): every layer of every call needs
        the same table, and building it is a dozen small ops, which add up on short prompts."""
        key = (T, scale, device, self.inv_freq.dtype)
        table = self._rope_tables.get(key)
        if table is None:
            with torch.inference_mode(False), torch.no_grad():  # plain tensors, usable when training too
                cos, sin = rope_cos_sin(self.inv_freq, torch.arange(T, device=device), scale)
            table = cos[:, None, :], sin[:, None, :]  # broadcast over heads
            if len(self._rope_tables) >= 64:  # scale sweeps must not grow it without bound
                self._rope_tables.clear()
            self._rope_tables[key] = table
        return table

    def attend(self, q, k, v, run: Run | None) -> torch.Tensor:
        """The explicit path: scores, mask and softmax in float32 whatever the weights' dtype, so the
        pattern exists to be captured and shown; z is cast back to the activations' dtype."""
        dtype = v.dtype
        q, k, v = self.float_heads(q, k, v)  # (B, H, T, d) each
        seen = run is not None and (
            run.wants(self.hook_attn_scores.name) or self.hook_pattern.name in run.hooks
        )
        # Blocks write into preallocated tensors (out=), which autograd cannot follow; and they only pay
        # off once the whole matrix outgrows the cache.
        if (seen or q.shape[2] <= WHOLE_UP_TO or (run is not None and not run.causal)
                or (torch.is_grad_enabled() and q.requires_grad)):  # fmt: skip
            z = self.attend_whole(q, k, v, run)
        else:
            z = self.attend_rows(q, k, v, run)
        return z.transpose(1, 2).to(dtype)  # (B, T, H, d)

    def float_heads(self, q, k, v):
        """(B, T, heads, d) in any dtype -> float32 (B, H, T, d), q already divided by sqrt(d) (T*H*d
        multiplications instead of T*T*H on the scores), K/V heads repeated for their query heads."""
        q = (q.float() * (1.0 / math.sqrt(self.cfg.hd))).transpose(1, 2).contiguous()
        # GQA: query head h reads K/V head h // n_rep (a copy of T*H*d floats, small beside T*T*H scores).
        k = k.float().transpose(1, 2).repeat_interleave(self.cfg.n_rep, dim=1)
        v = v.float().transpose(1, 2).repeat_interleave(self.cfg.n_rep, dim=1)
        return q, k, v

    def attend_whole(self, q, k, v, run: Run | None) -> torch.Tensor:
        """All (B, H, T, T) scores at once: for interventions on the scores or the pattern, and for
        capturing the scores, which must exist whole before the softmax."""
        B, H, T, d = q.shape
        if run is None or run.causal:  # q k^T + (-inf above the diagonal), in one op
            scores = torch.baddbmm(
                causal_bias(T, q.device), q.reshape(B * H, T, d), k.reshape(B * H, T, d).transpose(1, 2)
            ).view(B, H, T, T)
        else:
            scores = q @ k.transpose(-1, -2)  # (B, H, T, T)
        scores = self.hook_attn_scores(scores, run)
        # In place unless the cache keeps the scores or autograd needs them: one n x n tensor fewer.
        fresh = scores.requires_grad or (run is not None and run.wants(self.hook_attn_scores.name))
        pattern = softmax_new(scores) if fresh else softmax_(scores)
        return self.hook_pattern(pattern, run) @ v  # (B, H, T, d)

    def attend_rows(self, q, k, v, run: Run | None) -> torch.Tensor:
        """Causal attention ROWS query positions at a time: rows r0..r1 only need keys 0..r1, so half
        the products are never computed, and each block's scores stay in the CPU's cache from the
        product through the softmax to the weighted sum. The whole pattern is written only when it is
        captured; at n = 1024 it is the largest thing a forward writes (H * n * n floats per layer)."""
        B, H, T, d = q.shape
        keep = run is not None and run.wants(self.hook_pattern.name)
        pattern = q.new_empty(B, H, T, T) if keep else q.new_empty(B, H, min(T, ROWS), T)
        z = q.new_empty(B, H, T, d)
        future = causal_mask(ROWS, q.device)
        for r0 in range(0, T, ROWS):
            r1 = min(T, r0 + ROWS)
            rows = pattern[:, :, r0:r1, :r1] if keep else pattern[:, :, : r1 - r0, :r1]  # (B, H, r, r1)
            torch.matmul(q[:, :, r0:r1], k[:, :, :r1].transpose(-1, -2), out=rows)
            rows[..., r0:r1].masked_fill_(future[: r1 - r0, : r1 - r0], float("-inf"))
            softmax_(rows)
            torch.matmul(rows, v[:, :, :r1], out=z[:, :, r0:r1])
            if keep:
                pattern[:, :, r0:r1, r1:] = 0.0  # the future keys: probability exactly 0
        if keep:
            self.hook_pattern(pattern, run)
        return z

    def attend_sdpa(self, q, k, v, run: Run) -> torch.Tensor:
        """The fused path (training, batch scoring): the same maths, kept equal to `attend` by a test,
        with no pattern in memory, so hook_attn_scores and hook_pattern do not fire."""
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, heads, T, d)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=run.causal, enable_gqa=self.cfg.n_rep > 1)
        return out.transpose(1, 2)  # (B, T, H, d)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.arch = cfg.arch
        bias = cfg.mlp_bias or cfg.arch == "gpt2"
        if cfg.arch == "llama":
            self.gate_proj = nn.Linear(cfg.d_model, cfg.d_ff, bias=bias)
        self.up_proj = nn.Linear(cfg.d_model, cfg.d_ff, bias=bias)
        self.down_proj = nn.Linear(cfg.d_ff, cfg.d_model, bias=bias)
        self.hook_pre = HookPoint()  # (B, T, d_ff), before the non-linearity (SwiGLU: the gate's input)
        if cfg.arch == "llama":
            self.hook_pre_linear = HookPoint()  # (B, T, d_ff), SwiGLU's linear branch, up_proj(x)
        self.hook_post = (
            HookPoint()
        )  # (B, T, d_ff), after the non-linearity (SwiGLU: times the linear branch)

    def forward(self, x: torch.Tensor, run: Run | None) -> torch.Tensor:
        if self.arch == "llama":
            h = F.silu(self.hook_pre(self.gate_proj(x), run)) * self.hook_pre_linear(self.up_proj(x), run)
        else:
            h = F.gelu(self.hook_pre(self.up_proj(x), run), approximate="tanh")
        return self.down_proj(self.hook_post(h, run))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.ln1, self.attn = Norm(cfg), Attention(cfg, layer)
        self.ln2, self.mlp = Norm(cfg), MLP(cfg)
        self.hook_resid_pre = HookPoint()  # (B, T, D)
        self.hook_attn_out = HookPoint()  # (B, T, D), what attention adds to the residual stream
        self.hook_resid_mid = HookPoint()  # (B, T, D)
        self.hook_mlp_out = HookPoint()  # (B, T, D), what the feed-forward adds
        self.hook_resid_post = HookPoint()  # (B, T, D)

    def forward(self, x: torch.Tensor, run: Run | None) -> torch.Tensor:
        x = self.hook_resid_pre(x, run)
        x = self.hook_resid_mid(x + self.hook_attn_out(self.attn(self.ln1(x, run), run), run), run)
        return self.hook_resid_post(x + self.hook_mlp_out(self.mlp(self.ln2(x, run), run), run), run)


class FinalNorm(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.norm = Norm(cfg, hooked=False)  # the weights, under the name checkpoints use
        self.hook_scale = HookPoint()  # (B, T, 1)
        self.hook_normalized = HookPoint()  # (B, T, D), before the weight

    def forward(self, x: torch.Tensor, run: Run | None) -> torch.Tensor:
        return self.norm(x, run, hooks=self)


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.hook_embed = HookPoint()  # (B, T, D), token embedding
        if cfg.positional == "learned":
            self.pos_embed = nn.Embedding(cfg.context_length, cfg.d_model)
            self.hook_pos_embed = HookPoint()  # (B, T, D), learned positions
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        self.ln_final = FinalNorm(cfg)
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.unembed.weight = self.embed.weight
        self.hook_names = name_hook_points(self)

    def init_weights(self, seed: int = 0) -> None:
        """GPT-2-style init for training from scratch; residual writers scaled by depth."""
        g = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            if p.dim() == 1:
                nn.init.ones_(p) if name.endswith("weight") else nn.init.zeros_(p)
                continue
            std = 0.02
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                std /= math.sqrt(2 * self.cfg.n_layer)
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * std)

    def residual_stream(self, idx: torch.Tensor, run: Run | None = None) -> torch.Tensor:
        """Token ids (B, T) -> the residual stream after the last block, before the final norm."""
        T = idx.shape[1]
        if T > self.cfg.context_length:
            raise ValueError(f"{T} tokens exceed the context length {self.cfg.context_length}")
        x = self.hook_embed(self.embed(idx), run)
        if self.cfg.positional == "learned" and (run is None or run.position):
            pos = self.pos_embed(torch.arange(T, device=idx.device)).expand(idx.shape[0], T, -1)  # a view
            x = x + self.hook_pos_embed(pos, run)
        for block in self.blocks:
            x = block(x, run)
        return x

    def forward(self, idx: torch.Tensor, run: Run | None = None) -> torch.Tensor:
        return self.unembed(self.ln_final(self.residual_stream(idx, run), run))  # (B, T, V)
