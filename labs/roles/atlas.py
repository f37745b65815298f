"""Head roles: what each attention head does, scored on fixed probes and labelled by threshold.

Each detector turns an attention tensor (L, H, n, n) into one score per head in [0, 1] (a mean
attention weight), so it can be checked on hand-built patterns as well as on a live model.
Previous-token and induction scores are the definitions in `labs.roles.probes`, shared with training and
the model card; this module adds the other roles and the per-model atlas.

Roles and how they are scored (queries are rows, keys are columns):
- previous-token: attention from token i to token i - 1, on natural text (PROSE).
- induction: on R random tokens repeated twice, attention from each second-copy token to the token
  right after its first copy ("A B ... A -> look at B").
- duplicate-token: on the same repeated sequence, attention from each token to its earlier copies.
- first-token (sink): attention from tokens i >= 1 to token 0, on PROSE. Many heads park attention
  there when they have nothing to do; it is a resting place, not a bug.
- local: attention to the LOCAL_WINDOW most recent tokens (the token itself and the 3 before it), on
  PROSE, for queries i >= LOCAL_WINDOW so the window never contains token 0 (the sink).
- pronoun -> name: on PRONOUN_PROBES ("Lily had a red ball. She"), attention from the final pronoun
  to the tokens of the name it refers to.

A head gets a role's label when its score is at least the role's threshold. One exception: a head
already labelled previous-token is not also labelled local, since previous-token is the sharper form
of the same habit.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model.lm import LanguageModel

from .probes import (
    INDUCTION_LENGTH,
    INDUCTION_SEEDS,
    PROSE,
    induction_probe,
    induction_scores,
    previous_token_scores,
)

LOCAL_WINDOW = 4


@dataclass(frozen=True)
class Role:
    key: str
    name: str
    threshold: float
    probe: str  # "prose", "repeat" or "pronoun": the probe it is scored and drawn on
    explanation: str  # one plain-English line for a class
    how: str  # how the score is computed, for the curious


ROLES: tuple[Role, ...] = (
    Role("previous_token", "previous-token", 0.5, "prose",
         "Looks at the word just before: the thin line under the diagonal.",
         "mean attention from each token to the one before it, on ordinary sentences"),
    Role("induction", "induction", 0.3, "repeat",
         "Spots 'A B ... A' and looks at B, so the model can predict B again: the stripe on a repeated "
         "sequence.",
         "on random tokens repeated twice, mean attention from each second-copy token to the token "
         "after its first copy"),
    Role("duplicate_token", "duplicate-token", 0.3, "repeat",
         "Looks back at earlier copies of the same word: has this word appeared before?",
         "on random tokens repeated twice, mean attention from each second-copy token to its first copy"),
    Role("first_token", "first-token (sink)", 0.5, "prose",
         "Parks its attention on the first word when it has nothing better to do: a resting place, "
         "not a bug.",
         "mean attention from every later token to token 0, on ordinary sentences"),
    Role("local", "local", 0.6, "prose",
         f"Looks at the last few words ({LOCAL_WINDOW} including itself): a short-range reader.",
         f"mean attention to the {LOCAL_WINDOW} most recent tokens (itself and the {LOCAL_WINDOW - 1} "
         "before it), on ordinary sentences"),
    Role("pronoun", "pronoun → name", 0.3, "pronoun",
         "From a pronoun (she, he) looks back at the name it refers to.",
         "mean attention from the final pronoun to the name it refers to, on short story sentences"),
)  # fmt: skip
ROLE_BY_KEY = {r.key: r for r in ROLES}

# (text, name): the text ends with a pronoun that refers to `name`; two-name sentences make the head
# pick the right one, not just any name.
PRONOUN_PROBES: tuple[tuple[str, str], ...] = (
    ("Lily had a red ball. She", "Lily"),
    ("Tom found a little dog. He", "Tom"),
    ("Tom gave Lily a big cake. She", "Lily"),
    ("Lily saw Tom at the park. He", "Tom"),
    ("Anna went to the river with her mom. She", "Anna"),
    ("Ben and his cat sat on the mat. He", "Ben"),
)


# Detectors: attention (L, H, n, n) -> (L, H) -----------------------------------------------------


def first_token_scores(attention: torch.Tensor) -> torch.Tensor:
    """Mean attention from each token i >= 1 to token 0 (token 0 has only itself to look at)."""
    return attention[..., 1:, 0].mean(-1)


def local_scores(attention: torch.Tensor, window: int = LOCAL_WINDOW) -> torch.Tensor:
    """Mean attention mass on keys i - window + 1 .. i, over queries i >= window."""
    n = attention.shape[-1]
    if n <= window:
        raise ValueError(f"local scores need more than {window} tokens, got {n}")
    i = torch.arange(n)
    d = i[:, None] - i[None, :]  # query minus key
    mask = ((d >= 0) & (d < window)).to(attention.dtype)
    return (attention * mask)[..., window:, :].sum(-1).mean(-1)


def _masked_mean(attention: torch.Tensor, mask: torch.Tensor) -> torch.Tensor | None:
    """Mean over the queries that have any key in `mask` (n, n) of the attention mass on those keys."""
    rows = mask.any(-1)
    if not rows.any():
        return None
    mass = (attention * mask.to(attention.dtype)).sum(-1)  # (L, H, n)
    return mass[..., rows].mean(-1)


def duplicate_token_scores(attention: torch.Tensor, ids: Sequence[int]) -> torch.Tensor | None:
    """Mean attention from each token that occurred before to its earlier copies (None if no repeats)."""
    t = torch.as_tensor(list(ids))
    same = t[:, None] == t[None, :]
    earlier = torch.ones_like(same).tril(-1)
    return _masked_mean(attention, same & earlier)


def token_induction_scores(attention: torch.Tensor, ids: Sequence[int]) -> torch.Tensor | None:
    """Induction on any token sequence: attention from each repeated token to the tokens that
    followed its earlier copies. On the repeated random probe it equals `induction_scores`."""
    t = torch.as_tensor(list(ids))
    n = len(t)
    same = (t[:, None] == t[None, :]) & torch.ones(n, n, dtype=torch.bool).tril(-1)  # [i, j]: j copies i
    follows = torch.zeros(n, n, dtype=torch.bool)
    follows[:, 1:] = same[:, :-1]  # [i, j + 1] where j is an earlier copy of token i
    return _masked_mean(attention, follows)


def pronoun_scores(attention: torch.Tensor, query: int, keys: Sequence[int]) -> torch.Tensor:
    """Attention from the pronoun at `query` to the name's tokens `keys` (summed)."""
    return attention[..., query, list(keys)].sum(-1)


def prompt_scores(attention: torch.Tensor, ids: Sequence[int]) -> dict[str, torch.Tensor | None]:
    """The scores that make sense on any prompt's trace; None where the prompt gives no evidence
    (no repeated token, too short). Pronoun scores need a known referent, so only the probe has them."""
    n = attention.shape[-1]
    return {
        "previous_token": previous_token_scores(attention) if n >= 2 else None,
        "induction": token_induction_scores(attention, ids),
        "duplicate_token": duplicate_token_scores(attention, ids),
        "first_token": first_token_scores(attention) if n >= 2 else None,
        "local": local_scores(attention) if n > LOCAL_WINDOW else None,
    }


def label_heads(scores: dict[str, torch.Tensor]) -> list[list[list[str]]]:
    """[layer][head] -> the role keys whose threshold the head's score clears, in ROLES order."""
    L, H = next(iter(scores.values())).shape
    labels: list[list[list[str]]] = [[[] for _ in range(H)] for _ in range(L)]
    for role in ROLES:
        if role.key not in scores:
            continue
        for layer, head in (scores[role.key] >= role.threshold).nonzero().tolist():
            if role.key == "local" and "previous_token" in labels[layer][head]:
                continue
            labels[layer][head].append(role.key)
    return labels


# Probes on a live model ----------------------------------------------------------------------------


@torch.inference_mode()
def probe_attention(lm: LanguageModel, batch: Sequence[Sequence[int]]) -> torch.Tensor:
    """(B, L, H, n, n) attention of equal-length id sequences in one forward pass, nothing else kept."""
    L = lm.config.n_layer
    run = lm.make_run()
    run.capture = {f"blocks.{i}.attn.hook_pattern" for i in range(L)}
    lm.net.residual_stream(torch.tensor([list(s) for s in batch], device=lm.device), run)  # no unembedding
    return torch.stack([run.cache[f"blocks.{i}.attn.hook_pattern"] for i in range(L)], 1).float().cpu()


def repeat_length(lm: LanguageModel) -> int:
    return min(INDUCTION_LENGTH, lm.config.context_length // 2, lm.config.vocab_size)


def prose_ids(lm: LanguageModel) -> list[int]:
    return lm.encode(PROSE)[: lm.config.context_length]


def pronoun_probe(lm: LanguageModel, text: str, name: str) -> tuple[list[int], int, list[int]]:
    """(ids, pronoun position, name token positions): the tokens whose characters overlap the name."""
    enc = lm.tokenizer.hf.encode(text, add_special_tokens=False)
    start = text.index(name)
    end = start + len(name)
    keys = [p for p, (a, b) in enumerate(enc.offsets) if a < end and b > start]
    return list(enc.ids), len(enc.ids) - 1, keys


@dataclass(frozen=True)
class ProbeView:
    """One probe's tokens and every head's attention on it, for drawing a head on its probe."""

    key: str
    title: str
    token_ids: list[int]
    tokens: list[str]
    attention: torch.Tensor  # (L, H, n, n)


@dataclass(frozen=True)
class HeadAtlas:
    model: str
    scores: dict[str, torch.Tensor]  # role key -> (L, H)
    labels: list[list[list[str]]]  # [layer][head] -> role keys
    probes: dict[str, ProbeView]
    repeat_length: int

    def heads_with(self, role: str) -> list[tuple[int, int]]:
        """Heads labelled with `role`, highest score first."""
        heads = [(la, h) for la, row in enumerate(self.labels) for h, keys in enumerate(row) if role in keys]
        return sorted(heads, key=lambda lh: -float(self.scores[role][lh]))

    def top_heads(self, role: str, k: int) -> list[tuple[int, int]]:
        s = self.scores[role]
        order = s.flatten().argsort(descending=True)[:k].tolist()
        return [divmod(i, s.shape[1]) for i in order]


def compute_atlas(lm: LanguageModel) -> HeadAtlas:
    """Score every head on the fixed probes: three forward passes (the repeats, the prose, the pronoun
    sentences), each batched."""
    R = repeat_length(lm)
    repeats = [induction_probe(lm.config.vocab_size, s, R) for s in INDUCTION_SEEDS]
    rep = probe_attention(lm, repeats)  # (S, L, H, 2R, 2R)
    prose = prose_ids(lm)
    pro = probe_attention(lm, [prose])[0]
    sentences = [pronoun_probe(lm, text, name) for text, name in PRONOUN_PROBES]
    width = max(len(ids) for ids, _, _ in sentences)
    # One pass for all sentences, padded at the end: causal attention never looks ahead, so the padding
    # cannot change what the pronoun (each sentence's last real token) attends to.
    att = probe_attention(lm, [ids + [ids[-1]] * (width - len(ids)) for ids, _, _ in sentences])
    pronoun = [pronoun_scores(a, q, keys) for a, (_, q, keys) in zip(att, sentences, strict=True)]
    ids0 = sentences[0][0]
    first_pronoun = ProbeView("pronoun", PRONOUN_PROBES[0][0], ids0, lm.tokenizer.displays(ids0),
                              att[0][..., : len(ids0), : len(ids0)].contiguous())  # fmt: skip
    scores = {
        "previous_token": previous_token_scores(pro),
        "induction": torch.stack([induction_scores(a, R) for a in rep]).mean(0),
        "duplicate_token": torch.stack([duplicate_token_scores(a, r) for a, r in zip(rep, repeats, strict=True)]).mean(0),
        "first_token": first_token_scores(pro),
        "local": local_scores(pro),
        "pronoun": torch.stack(pronoun).mean(0),
    }  # fmt: skip
    probes = {
        "prose": ProbeView("prose", "ordinary sentences", prose, lm.tokenizer.displays(prose), pro),
        "repeat": ProbeView("repeat", f"{R} random tokens, then the same {R} again", repeats[0],
                            lm.tokenizer.displays(repeats[0]), rep[0]),
        "pronoun": first_pronoun,
    }  # fmt: skip
    return HeadAtlas(lm.name, scores, label_heads(scores), probes, R)


_atlases: weakref.WeakKeyDictionary[LanguageModel, HeadAtlas] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def head_atlas(lm: LanguageModel) -> HeadAtlas:
    """The model's atlas, computed once per loaded model (the lock keeps concurrent first requests
    from computing it twice)."""
    with _lock:
        atlas = _atlases.get(lm)
        if atlas is None:
            atlas = _atlases[lm] = compute_atlas(lm)
        return atlas


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"
