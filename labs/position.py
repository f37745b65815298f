"""Position experiments: what attention knows about order, measured on the live model.

- `permutation_experiment`: shuffle the tokens, run both orders, put the shuffled run back in the
  original order and measure what changed. Without position and without the causal mask, attention is
  permutation-equivariant, so only float rounding (~1e-7) remains; with RoPE or learned positions,
  the numbers change a lot.
- `compare_orders`: "The dog bites the man." vs "The man bites the dog.": the same tokens in two
  orders; each token's final representation and the next-token prediction, with position on and off.
- `rope_clock` / `rope_offset_scores`: RoPE as a clock with one hand per frequency pair, and the
  score of a fixed query/key pair as a function of the offset m - n at several absolute positions.
- `learned_positions`: for a GPT-2-style model, its learned position vectors instead (no clock).

Convention for a permutation `perm`: the permuted input is `ids[perm[0]], ids[perm[1]], ...`, so the
token at new position k came from original position perm[k]; original token i sits at inv[i].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model import LanguageModel, act_name
from model.config import ModelConfig
from model.transformer import Transformer, apply_rope, rope_cos_sin, rope_inv_freq

CONDITIONS = ((False, False), (True, False), (False, True), (True, True))  # (position, causal)

# ---------------------------------------------------------------- permutations


def make_permutation(
    n: int,
    kind: str,
    *,
    seed: int = 0,
    swap: tuple[int, int] | None = None,
    order: Sequence[int] | None = None,
) -> list[int]:
    """A permutation of range(n): "shuffle" (seeded), "reverse", "swap" two positions, or "explicit"."""
    if n < 1:
        raise ValueError("the prompt has no tokens")
    if kind == "reverse":
        return list(range(n - 1, -1, -1))
    if kind == "shuffle":
        return _seeded_shuffle(n, seed)
    if kind == "swap":
        if swap is None or len(swap) != 2:
            raise ValueError("a swap needs two positions")
        i, j = (int(x) for x in swap)
        for p in (i, j):
            if not 0 <= p < n:
                raise ValueError(f"position {p} is out of range: the prompt has {n} tokens (0..{n - 1})")
        if i == j:
            raise ValueError("a swap needs two different positions")
        perm = list(range(n))
        perm[i], perm[j] = j, i
        return perm
    if kind == "explicit":
        if order is None:
            raise ValueError("an explicit permutation needs an order")
        perm = [int(x) for x in order]
        if sorted(perm) != list(range(n)):
            raise ValueError(f"the order must list each of the positions 0..{n - 1} exactly once; got {perm}")
        return perm
    raise ValueError(f"unknown permutation kind {kind!r}: use shuffle, reverse, swap or explicit")


def _seeded_shuffle(n: int, seed: int) -> list[int]:
    """A seeded shuffle that moves at least one token (an identity shuffle would prove nothing)."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(100):
        perm = torch.randperm(n, generator=g).tolist()
        if n == 1 or perm != list(range(n)):
            return perm
    return list(range(n - 1, -1, -1))


def inverse(perm: Sequence[int]) -> list[int]:
    inv = [0] * len(perm)
    for k, p in enumerate(perm):
        inv[p] = k
    return inv


# ---------------------------------------------------------------- the permutation experiment


@dataclass(frozen=True)
class RunOutputs:
    attention: torch.Tensor  # (L, H, n, n)
    resid: torch.Tensor  # (n, D) residual stream after the last block, before the final norm
    logits: torch.Tensor  # (n, V)

    @property
    def probs(self) -> torch.Tensor:
        return torch.softmax(self.logits, dim=-1)  # (n, V) next-token probabilities at every position


def run_outputs(lm: LanguageModel, ids: Sequence[int], position: bool, causal: bool) -> RunOutputs:
    L = lm.config.n_layer
    last = act_name("resid_post", L - 1)
    names = [act_name("pattern", i) for i in range(L)] + [last]
    logits, cache = lm.run_with_cache(list(ids), names, position=position, causal=causal)
    attention = torch.stack([cache[act_name("pattern", i)][0] for i in range(L)])
    return RunOutputs(attention.float().cpu(), cache[last][0].float().cpu(), logits[0].float().cpu())


@dataclass(frozen=True)
class PermutedCondition:
    position: bool
    causal: bool
    original: torch.Tensor  # (n, n) the chosen head on the original order
    reordered: torch.Tensor  # (n, n) the chosen head on the permuted input, rows and columns put back
    head_max_diff: float  # max |reordered - original| for the chosen head
    attention_max_diff: float  # the same over every layer and head
    resid_max_diff: float  # max |difference| of the final residual stream, token by token
    resid_scale: float  # max |final residual| of the original run: what the difference is measured against
    logits_max_diff: float
    probs_max_diff: float  # the largest change in any next-token probability at any token: scale-free

    @property
    def diff(self) -> torch.Tensor:
        return self.reordered - self.original

    @property
    def equivariant(self) -> bool:
        """Shuffling the input only shuffled the outputs (up to float32 rounding)."""
        return self.attention_max_diff <= 1e-5 and self.probs_max_diff <= 1e-5


@dataclass(frozen=True)
class PermutationResult:
    token_ids: list[int]
    tokens: list[str]
    permutation: list[int]
    layer: int
    head: int
    conditions: list[PermutedCondition]  # in the order of CONDITIONS

    def condition(self, position: bool, causal: bool) -> PermutedCondition:
        return next(c for c in self.conditions if c.position == position and c.causal == causal)


def permutation_experiment(
    lm: LanguageModel,
    ids: Sequence[int],
    perm: Sequence[int],
    layer: int = 0,
    head: int = 0,
    conditions: Sequence[tuple[bool, bool]] = CONDITIONS,
) -> PermutationResult:
    ids, perm = lm.ids_of(ids), [int(p) for p in perm]
    if sorted(perm) != list(range(len(ids))):
        raise ValueError(f"the permutation must list each of the positions 0..{len(ids) - 1} exactly once")
    lm.check_heads([(layer, head)])
    inv = inverse(perm)
    shuffled = [ids[p] for p in perm]
    out = []
    for position, causal in conditions:
        a = run_outputs(lm, ids, position, causal)
        b = run_outputs(lm, shuffled, position, causal)
        back = b.attention[:, :, inv][:, :, :, inv]  # original (i, j) <- permuted (inv[i], inv[j])
        out.append(
            PermutedCondition(
                position=position,
                causal=causal,
                original=a.attention[layer, head],
                reordered=back[layer, head],
                head_max_diff=_max_abs(back[layer, head] - a.attention[layer, head]),
                attention_max_diff=_max_abs(back - a.attention),
                resid_max_diff=_max_abs(b.resid[inv] - a.resid),
                resid_scale=_max_abs(a.resid),
                logits_max_diff=_max_abs(b.logits[inv] - a.logits),
                probs_max_diff=_max_abs(b.probs[inv] - a.probs),
            )
        )
    return PermutationResult(ids, lm.tokenizer.displays(ids), perm, layer, head, out)


def _max_abs(x: torch.Tensor) -> float:
    return float(x.abs().max()) if x.numel() else 0.0


# ---------------------------------------------------------------- dog bites man


@dataclass(frozen=True)
class OrderCondition:
    position: bool
    causal: bool
    token_diffs: list[float]  # per token of prompt A: max |h_A - h_B| of the same token's final residual
    focus_a: torch.Tensor  # (D,) final residual of the focus token in prompt A
    focus_b: torch.Tensor  # (D,) the same token in prompt B
    focus_cosine: float
    next_a: torch.Tensor  # (V,) next-token probabilities after prompt A (read at its last token)
    next_b: torch.Tensor  # (V,)

    @property
    def focus_max_diff(self) -> float:
        return _max_abs(self.focus_a - self.focus_b)

    @property
    def next_max_diff(self) -> float:
        return _max_abs(self.next_a - self.next_b)


@dataclass(frozen=True)
class OrderComparison:
    ids_a: list[int]
    ids_b: list[int]
    tokens_a: list[str]
    tokens_b: list[str]
    match: list[int]  # token i of A is token match[i] of B
    focus: int  # index into A
    conditions: list[OrderCondition]

    @property
    def same_last_token(self) -> bool:
        return self.ids_a[-1] == self.ids_b[-1]

    def condition(self, position: bool, causal: bool) -> OrderCondition:
        return next(c for c in self.conditions if c.position == position and c.causal == causal)


def match_tokens(ids_a: Sequence[int], ids_b: Sequence[int]) -> list[int]:
    """For each token of A, its position in B (k-th occurrence to k-th occurrence).

    Raises if B is not a reordering of A: only then does "the same token" mean something.
    """
    if sorted(ids_a) != sorted(ids_b):
        raise ValueError("the two prompts must contain the same tokens in a different order")
    slots: dict[int, list[int]] = {}
    for j, t in enumerate(ids_b):
        slots.setdefault(t, []).append(j)
    return [slots[t].pop(0) for t in ids_a]


def is_whole_word(tokens: Sequence[str], i: int) -> bool:
    """Token i (display strings, "·" is a space) is a word on its own: it starts a word, the next token
    starts another one (or punctuation, or the end), and it has a letter. "·dog" is; "·b" of "·b ites" is not."""
    starts = i == 0 or tokens[i].startswith("·")
    ends = i + 1 == len(tokens) or tokens[i + 1].startswith("·") or not tokens[i + 1][:1].isalnum()
    return starts and ends and any(c.isalpha() for c in tokens[i])


def default_focus(match: Sequence[int], tokens: Sequence[str] | None = None) -> int:
    """A whole word that stays in place, nearest the middle and after token 0 (which sees only itself):
    its own position is identical in both prompts, so any change comes from where the other words went.
    Without such a word, the first whole word; without tokens (or words), the in-place token nearest
    the middle."""
    n = len(match)
    words = [i for i in range(n) if tokens is None or is_whole_word(tokens, i)]
    fixed = [i for i in words if match[i] == i and (i > 0 or n == 1)]
    if fixed:
        return min(fixed, key=lambda i: (abs(i - (n - 1) / 2), i))
    if tokens is not None and words:
        return words[0]
    fixed = [i for i in range(n) if match[i] == i]
    return min(fixed, key=lambda i: (abs(i - (n - 1) / 2), i)) if fixed else n // 2


def compare_orders(
    lm: LanguageModel, prompt_a: str | Sequence[int], prompt_b: str | Sequence[int], focus: int | None = None
) -> OrderComparison:
    ids_a, ids_b = lm.ids_of(prompt_a), lm.ids_of(prompt_b)
    match = match_tokens(ids_a, ids_b)
    if focus is None:
        focus = default_focus(match, lm.tokenizer.displays(ids_a))
    if not 0 <= focus < len(ids_a):
        raise ValueError(f"focus {focus} is out of range: the first prompt has {len(ids_a)} tokens")
    out = []
    for position, causal in CONDITIONS:
        a = run_outputs(lm, ids_a, position, causal)
        b = run_outputs(lm, ids_b, position, causal)
        diffs = (a.resid - b.resid[match]).abs().amax(dim=-1)
        fa, fb = a.resid[focus], b.resid[match[focus]]
        out.append(
            OrderCondition(
                position=position,
                causal=causal,
                token_diffs=diffs.tolist(),
                focus_a=fa,
                focus_b=fb,
                focus_cosine=float(torch.nn.functional.cosine_similarity(fa, fb, dim=0)),
                next_a=a.probs[-1],
                next_b=b.probs[-1],
            )
        )
    displays = lm.tokenizer.displays
    return OrderComparison(ids_a, ids_b, displays(ids_a), displays(ids_b), match, focus, out)


# ---------------------------------------------------------------- RoPE: the clock


@dataclass(frozen=True)
class RopeClock:
    head_dim: int
    base: float
    scale: float  # position interpolation: positions are divided by this before rotating
    trained_scale: float  # the model's own scale, from its config
    inv_freq: torch.Tensor  # (d/2,) radians per (unscaled) position, fastest hand first
    periods: torch.Tensor  # (d/2,) tokens per full turn of each hand at this scale
    positions: torch.Tensor  # (P,)
    angles: torch.Tensor  # (P, d/2) each hand's angle in [-pi, pi] at each position


def rope_clock(
    cfg: ModelConfig, scale: float | None = None, positions: int | Sequence[int] | torch.Tensor | None = None
) -> RopeClock:
    """Each hand's angle at the given positions (a count means 0..count-1; None the context length),
    read off the same cos/sin the attention layer multiplies q and k by."""
    _require_rope(cfg)
    scale = float(scale or cfg.rope_scale)
    if scale <= 0:
        raise ValueError("the position-interpolation scale must be positive")
    inv_freq = model_inv_freq(cfg)
    if positions is None or isinstance(positions, int):
        positions = torch.arange(positions or cfg.context_length)
    positions = torch.as_tensor(positions, dtype=torch.long)
    cos, sin = rope_cos_sin(inv_freq, positions, scale)
    half = cfg.hd // 2
    angles = torch.atan2(sin[:, :half].double(), cos[:, :half].double())
    return RopeClock(
        head_dim=cfg.hd,
        base=cfg.rope_base,
        scale=scale,
        trained_scale=cfg.rope_scale,
        inv_freq=inv_freq,
        periods=2 * math.pi * scale / inv_freq.double(),
        positions=positions,
        angles=angles,
    )


@dataclass(frozen=True)
class OffsetScores:
    offsets: torch.Tensor  # (M,) m - n, the query's distance after the key
    key_positions: list[int]  # absolute key position n of each curve
    scores: torch.Tensor  # (len(key_positions), M) q_m . k_n / sqrt(d) after rotating both
    scale: float

    @property
    def spread(self) -> float:
        """Largest disagreement between the curves at the same offset: 0 if only m - n matters."""
        return float((self.scores.amax(0) - self.scores.amin(0)).max())


def rope_offset_scores(
    cfg: ModelConfig,
    q: torch.Tensor,
    k: torch.Tensor,
    key_positions: Sequence[int],
    max_offset: int,
    scale: float | None = None,
) -> OffsetScores:
    """Score of one query/key pair (d,) placed at positions m = n + offset and n, for each n given."""
    _require_rope(cfg)
    scale = float(scale or cfg.rope_scale)
    inv_freq = model_inv_freq(cfg)
    offsets = torch.arange(max_offset + 1)
    q, k = q.detach().double().cpu(), k.detach().double().cpu()
    curves = []
    for n in key_positions:
        cos_m, sin_m = rope_cos_sin(inv_freq, n + offsets, scale)  # (M, d)
        cos_n, sin_n = rope_cos_sin(inv_freq, torch.tensor([n]), scale)  # (1, d)
        qm = apply_rope(q.expand(len(offsets), -1), cos_m, sin_m)
        kn = apply_rope(k[None], cos_n, sin_n)
        curves.append((qm * kn).sum(-1) / math.sqrt(cfg.hd))
    return OffsetScores(offsets, [int(n) for n in key_positions], torch.stack(curves), scale)


def random_qk(head_dim: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(head_dim, generator=g), torch.randn(head_dim, generator=g)


@torch.inference_mode()
def model_qk(
    lm: LanguageModel, ids: Sequence[int], layer: int, head: int, query: int, key: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The real query of token `query` and key of token `key` for one head, *before* RoPE rotates them
    (so the offset curves can place the same pair at any positions)."""
    ids = lm.ids_of(ids)
    lm.check_heads([(layer, head)])
    for name, i in (("query", query), ("key", key)):
        if not 0 <= i < len(ids):
            raise ValueError(f"{name} token {i} is out of range: the prompt has {len(ids)} tokens")
    cfg, net = lm.config, lm.net
    name = act_name("resid_pre", layer)
    _, cache = lm.run_with_cache(ids, [name], logits=False)
    attn = net.blocks[layer].attn
    x = net.blocks[layer].ln1(cache[name][0])  # (n, D)
    q = attn.q_proj(x[query]).view(cfg.n_head, cfg.hd)[head]
    k = attn.k_proj(x[key]).view(cfg.n_kv_head, cfg.hd)[head // cfg.n_rep]  # GQA: shared K head
    return q.float().cpu(), k.float().cpu()


def model_inv_freq(cfg: ModelConfig) -> torch.Tensor:
    """The hands' speeds exactly as the attention layer holds them (float32, Llama-3.1 scaling included)."""
    return rope_inv_freq(cfg.hd, cfg.rope_base, cfg.rope_llama3).float()


def _require_rope(cfg: ModelConfig) -> None:
    if cfg.positional != "rope":
        raise ValueError(f"{cfg.name} uses learned position embeddings, not RoPE")


# ---------------------------------------------------------------- GPT-2: learned positions


@dataclass(frozen=True)
class LearnedPositions:
    positions: torch.Tensor  # (P,)
    similarity: torch.Tensor  # (P, P) cosine similarity between position vectors
    pca: torch.Tensor  # (P, 3) each position vector projected on the top three principal components
    explained: list[float]  # share of the variance of the position vectors each component explains
    norms: torch.Tensor  # (P,) |p_i|


@torch.inference_mode()
def learned_positions(net: Transformer, n_positions: int | None = None) -> LearnedPositions:
    if net.cfg.positional != "learned":
        raise ValueError(f"{net.cfg.name} uses RoPE: it has no learned position vectors")
    P = min(n_positions or net.cfg.context_length, net.cfg.context_length)
    W = net.pos_embed.weight[:P].double().cpu()  # (P, D)
    unit = W / W.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    centred = W - W.mean(0)
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)
    k = min(3, vh.shape[0])
    var = s.pow(2)
    return LearnedPositions(
        positions=torch.arange(P),
        similarity=(unit @ unit.T).float(),
        pca=(centred @ vh[:k].T).float(),
        explained=(var[:k] / var.sum().clamp_min(1e-30)).tolist(),
        norms=W.norm(dim=-1).float(),
    )


# ---------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m labs.position [--model NAME_OR_FOLDER] [--prompt TEXT]`: the permutation experiment's
    largest differences for a reversed, a shuffled and a swapped prompt, in every condition."""
    import argparse

    from model.loading import load

    p = argparse.ArgumentParser(prog="python -m labs.position", description=main.__doc__)
    p.add_argument("--model", default="classroom")
    p.add_argument("--prompt", default="The dog bites the man.")
    args = p.parse_args(argv)
    lm = load(args.model)
    ids = lm.encode(args.prompt)
    print(f"{lm.name}: {' '.join(lm.tokenizer.displays(ids))}")
    for kind in ("reverse", "shuffle", "swap"):
        perm = make_permutation(len(ids), kind, seed=0, swap=(1, len(ids) - 2) if len(ids) > 2 else (0, 1))
        print(f"{kind} {perm}")
        for c in permutation_experiment(lm, ids, perm).conditions:
            print(
                f"  position {'on ' if c.position else 'off'} causal {'on ' if c.causal else 'off'}  "
                f"probs {c.probs_max_diff:.1e}  logits {c.logits_max_diff:.1e}  "
                f"attention (any head) {c.attention_max_diff:.1e}  residual {c.resid_max_diff:.1e}"
            )


if __name__ == "__main__":
    main()
