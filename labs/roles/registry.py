"""The head roles: one `Role` entry each, read by the atlas, the model card, the API schema and the pages.

Adding a role means one entry in ROLES (and its detector in `detectors.py` if it is new) plus its test.
A head gets a role only with three pieces of evidence:

1. the probe: `detect` turns the fixed probes' attention (`labs.roles.probes.run_probes`) into one
   score per head;
2. the control: `control` scores the same heads where the role's cue is missing but the positions are
   the same (random tokens that never repeat, or both names fitting the pronoun). For a role about
   content, `net` is the score minus the control, what position alone cannot explain; for a role about
   position (previous token, self, ...), the pattern is the role, so `net` is the lower of the two:
   the head must keep it on random tokens too. Heads whose net clears `threshold` are candidates;
3. the knock-out: knocking the candidates out together must measurably hurt the behaviour named by
   `evidence` (`labs.roles.knockout.BEHAVIOURS`), more than knocking out as many random other heads.
   Otherwise no head of the model gets the role, and the pages say so.

`on_prompt`, when the role makes sense on any text, scores a prompt's attention (no labels from it).
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
    # pronoun probes: (pronoun position, right name positions, wrong name positions) per sentence
    targets: list[tuple[int, list[int], list[int]]] | None = None


Probes = dict[str, ProbeRun]  # probe key -> run, as `labs.roles.probes.run_probes` returns them
PromptDetector = Callable[[torch.Tensor, Sequence[int]], "torch.Tensor | None"]


@dataclass(frozen=True)
class Role:
    key: str
    name: str  # how the pages name the role, e.g. "previous-token"
    label: str  # the short badge on a head, e.g. "prev"
    threshold: float  # a head is a candidate when its net score is at least this
    probe: str  # "prose", "repeat" or "pronoun": the probe it is drawn on
    explanation: str  # one plain-English line for a class
    how: str  # how the score is computed, for the curious
    control_how: str  # what the control is
    about: str  # "position" or "content": how the control combines with the score (module docstring)
    evidence: str  # the behaviour its knock-out must hurt: a key of labs.roles.knockout.BEHAVIOURS
    detect: Callable[[Probes], torch.Tensor]  # the probes' attention -> (L, H)
    control: Callable[[Probes], torch.Tensor]  # the same measure where the cue is missing -> (L, H)
    on_prompt: PromptDetector | None = None  # any prompt's (L, H, n, n) and ids -> (L, H), None = no evidence
    yields_to: str | None = None  # not a candidate on a head that already has this (sharper) role

    def net(self, score: torch.Tensor, control: torch.Tensor) -> torch.Tensor:
        return torch.minimum(score, control) if self.about == "position" else score - control


def _each(run: ProbeRun, score: Callable[[torch.Tensor, int], torch.Tensor]) -> torch.Tensor:
    """Mean over the probe's sequences of `score(attention (L, H, n, n), row)`."""
    return torch.stack([score(a, b) for b, a in enumerate(run.attention)]).mean(0)


def _if_long(n: int, fn: Callable[[torch.Tensor], torch.Tensor]) -> PromptDetector:
    return lambda att, ids: fn(att) if att.shape[-1] >= n else None


def _positional(fn: Callable[[torch.Tensor], torch.Tensor], probe: str) -> Callable[[Probes], torch.Tensor]:
    """A position detector on `probe`, averaged over its sequences."""
    return lambda runs: fn(runs[probe].attention).mean(0)


def _half(run: ProbeRun) -> int:
    return len(run.ids[0]) // 2


def _name_choice(probe: str) -> Callable[[Probes], torch.Tensor]:
    return lambda runs: _each(runs[probe], lambda a, b: d.name_choice_scores(a, *runs[probe].targets[b]))


ON_RANDOM = "the same score on random tokens (the pattern must not depend on the words)"


def _position_role(
    key: str,
    name: str,
    label: str,
    fn: Callable[[torch.Tensor], torch.Tensor],
    explanation: str,
    how: str,
    min_n: int = 2,
    **kw,
) -> Role:
    """A role whose pattern is the role: scored by `fn` on prose, controlled by the same score on random
    tokens, its knock-out judged on prose, and shown on any prompt of at least `min_n` tokens."""
    return Role(key, name, label, 0.5, "prose", explanation, how, ON_RANDOM, "position", "prose",
                detect=_positional(fn, "prose"), control=_positional(fn, "random"),
                on_prompt=_if_long(min_n, fn), **kw)  # fmt: skip


ROLES: tuple[Role, ...] = (
    _position_role("previous_token", "previous-token", "prev", d.previous_token_scores,
         "Looks at the word just before: the thin line under the diagonal.",
         "mean attention from each token to the one before it, on ordinary sentences"),
    Role("induction", "induction", "induct", 0.3, "repeat",
         "Spots 'A B ... A' and looks at B, so the model can predict B again: the stripe on a repeated "
         "sequence.",
         "on random tokens repeated twice, mean attention from each second-copy token to the token "
         "after its first copy",
         "the same positions when the second half does not repeat the first (a head that only counts "
         "back would score the same)",
         "content", "copy",
         detect=lambda runs: _each(runs["repeat"], lambda a, b: d.induction_scores(a, _half(runs["repeat"]))),
         control=lambda runs: _each(runs["random"], lambda a, b: d.induction_scores(a, _half(runs["random"]))),
         on_prompt=d.token_induction_scores),
    Role("duplicate_token", "duplicate-token", "dup", 0.3, "repeat",
         "Looks back at earlier copies of the same word: has this word appeared before?",
         "on random tokens repeated twice, mean attention from each second-copy token to its first copy",
         "the same positions when the second half does not repeat the first",
         "content", "copy",
         detect=lambda runs: _each(runs["repeat"], lambda a, b: d.duplicate_token_scores(a, runs["repeat"].ids[b])),
         control=lambda runs: _each(runs["random"], lambda a, b: d.offset_scores(a, _half(runs["random"]))),
         on_prompt=d.duplicate_token_scores),
    _position_role("first_token", "first-token (sink)", "sink", d.first_token_scores,
         "Parks its attention on the first word when it has nothing better to do: a resting place, "
         "not a bug.",
         "mean attention from every later token to token 0, on ordinary sentences"),
    _position_role("self", "self", "self", d.self_scores,
         "Looks at its own token: the bright diagonal. It passes the word itself on, not its neighbours.",
         "mean attention of each token to itself, on ordinary sentences"),
    _position_role("local", "local", "local", d.local_scores,
         f"Reads the last few words before the current one (up to {LOCAL_WINDOW} back): a short-range reader.",
         f"mean attention to the {LOCAL_WINDOW} tokens just before each token (not the token itself), on "
         "ordinary sentences", min_n=LOCAL_WINDOW + 2, yields_to="previous_token"),
    Role("pronoun", "pronoun → name", "pron", 0.3, "pronoun",
         "From a pronoun (she, he) looks back at the name it refers to, not at the other name.",
         "attention from the final She/He to the name it refers to minus attention to the other name, "
         "on sentences with a girl's and a boy's name in the middle, in both orders and with both "
         "pronouns (a head that looks at a fixed place scores 0)",
         "the same sentences with both names of the pronoun's gender, so the pronoun cannot choose",
         "content", "names",
         detect=_name_choice("pronoun"), control=_name_choice("pronoun_control")),
)  # fmt: skip
ROLE_BY_KEY = {r.key: r for r in ROLES}
ROLE_KEYS = tuple(r.key for r in ROLES)


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


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
    gives no evidence (no repeated token, too short). Pronoun scores need known referents: probe only.
    These are the probes' measures on other text: no control, no knock-out, so no label."""
    return {r.key: r.on_prompt(attention, ids) for r in ROLES if r.on_prompt is not None}


def label_heads(nets: dict[str, torch.Tensor]) -> list[list[list[str]]]:
    """[layer][head] -> the role keys whose threshold the head's net score clears, in ROLES order (the
    candidates; the atlas keeps those whose knock-out evidence holds)."""
    L, H = next(iter(nets.values())).shape
    labels: list[list[list[str]]] = [[[] for _ in range(H)] for _ in range(L)]
    for role in ROLES:
        if role.key not in nets:
            continue
        for layer, head in (nets[role.key] >= role.threshold).nonzero().tolist():
            if role.yields_to in labels[layer][head]:
                continue
            labels[layer][head].append(role.key)
    return labels
