"""The head roles: one `Role` entry each, read by the atlas, the model card, the API schema and the pages.

Adding a role means one entry in ROLES (and its detector in `detectors.py` if it is new) plus its test.
A role is scored on one of the fixed probes (`labs.roles.probes.PROBES`): its `detect` turns that
probe's attention into one score per head, and `on_prompt`, when the role makes sense on any text,
scores a prompt's attention. A head gets the role's label when its score is at least `threshold`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from . import detectors as d
from .detectors import LOCAL_WINDOW


@dataclass(frozen=True)
class ProbeRun:
    """Every head's attention on one probe: a batch of equal-length token sequences."""

    attention: torch.Tensor  # (B, L, H, n, n)
    ids: list[list[int]]
    targets: list[tuple[int, list[int]]] | None = None  # pronoun probe: (pronoun position, name positions)


PromptDetector = Callable[[torch.Tensor, Sequence[int]], "torch.Tensor | None"]


@dataclass(frozen=True)
class Role:
    key: str
    name: str  # how the pages name the role, e.g. "previous-token"
    label: str  # the short badge on a head, e.g. "prev"
    threshold: float
    probe: str  # "prose", "repeat" or "pronoun": the probe it is scored and drawn on
    explanation: str  # one plain-English line for a class
    how: str  # how the score is computed, for the curious
    detect: Callable[[ProbeRun], torch.Tensor]  # the probe's attention -> (L, H)
    on_prompt: PromptDetector | None = None  # any prompt's (L, H, n, n) and ids -> (L, H), None = no evidence
    yields_to: str | None = None  # not labelled on a head that already has this (sharper) role


def _each(run: ProbeRun, score: Callable[[torch.Tensor, int], torch.Tensor]) -> torch.Tensor:
    """Mean over the probe's sequences of `score(attention (L, H, n, n), row)`."""
    return torch.stack([score(a, b) for b, a in enumerate(run.attention)]).mean(0)


def _if_long(n: int, fn: Callable[[torch.Tensor], torch.Tensor]) -> PromptDetector:
    return lambda att, ids: fn(att) if att.shape[-1] >= n else None


ROLES: tuple[Role, ...] = (
    Role("previous_token", "previous-token", "prev", 0.5, "prose",
         "Looks at the word just before: the thin line under the diagonal.",
         "mean attention from each token to the one before it, on ordinary sentences",
         detect=lambda run: d.previous_token_scores(run.attention).mean(0),
         on_prompt=_if_long(2, d.previous_token_scores)),
    Role("induction", "induction", "induct", 0.3, "repeat",
         "Spots 'A B ... A' and looks at B, so the model can predict B again: the stripe on a repeated "
         "sequence.",
         "on random tokens repeated twice, mean attention from each second-copy token to the token "
         "after its first copy",
         detect=lambda run: _each(run, lambda a, b: d.induction_scores(a, len(run.ids[b]) // 2)),
         on_prompt=d.token_induction_scores),
    Role("duplicate_token", "duplicate-token", "dup", 0.3, "repeat",
         "Looks back at earlier copies of the same word: has this word appeared before?",
         "on random tokens repeated twice, mean attention from each second-copy token to its first copy",
         detect=lambda run: _each(run, lambda a, b: d.duplicate_token_scores(a, run.ids[b])),
         on_prompt=d.duplicate_token_scores),
    Role("first_token", "first-token (sink)", "sink", 0.5, "prose",
         "Parks its attention on the first word when it has nothing better to do: a resting place, "
         "not a bug.",
         "mean attention from every later token to token 0, on ordinary sentences",
         detect=lambda run: d.first_token_scores(run.attention).mean(0),
         on_prompt=_if_long(2, d.first_token_scores)),
    Role("local", "local", "local", 0.6, "prose",
         f"Looks at the last few words ({LOCAL_WINDOW} including itself): a short-range reader.",
         f"mean attention to the {LOCAL_WINDOW} most recent tokens (itself and the {LOCAL_WINDOW - 1} "
         "before it), on ordinary sentences",
         detect=lambda run: d.local_scores(run.attention).mean(0),
         on_prompt=_if_long(LOCAL_WINDOW + 1, d.local_scores), yields_to="previous_token"),
    Role("pronoun", "pronoun → name", "pron", 0.3, "pronoun",
         "From a pronoun (she, he) looks back at the name it refers to.",
         "mean attention from the final pronoun to the name it refers to, on short story sentences",
         detect=lambda run: _each(run, lambda a, b: d.pronoun_scores(a, *run.targets[b]))),
)  # fmt: skip
ROLE_BY_KEY = {r.key: r for r in ROLES}
ROLE_KEYS = tuple(r.key for r in ROLES)


@dataclass(frozen=True)
class HeadScore:
    """A summary number of one head's pattern on any prompt (the explorer's head detail)."""

    key: str
    name: str
    explanation: str
    score: Callable[[torch.Tensor], torch.Tensor | None]  # (..., n, n) -> (...), None when n is too small


HEAD_SCORES: tuple[HeadScore, ...] = (
    HeadScore("previous_token", "previous token", "mean attention from each token to the one just before it",
              lambda a: d.previous_token_scores(a) if a.shape[-1] > 1 else None),
    HeadScore("first_token", "first token (sink)", "mean attention from every later token to token 0",
              lambda a: d.first_token_scores(a) if a.shape[-1] > 1 else None),
    HeadScore("self", "self", "mean attention of a token to itself", d.self_scores),
    HeadScore("entropy", "entropy", "bits per row: 0 = looks at one token, higher = spread out", d.entropy_bits),
)  # fmt: skip


def head_scores(pattern: torch.Tensor) -> dict[str, float | None]:
    """Every HEAD_SCORES number of one head's (n, n) pattern."""
    out = {}
    for s in HEAD_SCORES:
        v = s.score(pattern)
        out[s.key] = None if v is None else float(v)
    return out


def prompt_scores(attention: torch.Tensor, ids: Sequence[int]) -> dict[str, torch.Tensor | None]:
    """The role scores that make sense on any prompt's (L, H, n, n) attention; None where the prompt
    gives no evidence (no repeated token, too short). Pronoun scores need a known referent: probe only."""
    return {r.key: r.on_prompt(attention, ids) for r in ROLES if r.on_prompt is not None}


def label_heads(scores: dict[str, torch.Tensor]) -> list[list[list[str]]]:
    """[layer][head] -> the role keys whose threshold the head's score clears, in ROLES order."""
    L, H = next(iter(scores.values())).shape
    labels: list[list[list[str]]] = [[[] for _ in range(H)] for _ in range(L)]
    for role in ROLES:
        if role.key not in scores:
            continue
        for layer, head in (scores[role.key] >= role.threshold).nonzero().tolist():
            if role.yields_to in labels[layer][head]:
                continue
            labels[layer][head].append(role.key)
    return labels
