"""What the head-atlas pages read in words: the probe titles and the knock-out sentences.
(The roles' names, labels and explanations are data of the registry, labs/roles/registry.py.)"""

from __future__ import annotations

from collections.abc import Sequence

from labs.roles.atlas import head_name
from labs.roles.knockout import NextTokenEffect, RepeatKnockout
from labs.roles.registry import Role

Head = tuple[int, int]


def probe_title(key: str, repeat_length: int) -> str:
    from labs.roles.probes import PRONOUN_PROBES

    return {
        "prose": "ordinary sentences",
        "repeat": f"{repeat_length} random tokens, then the same {repeat_length} again",
        "pronoun": PRONOUN_PROBES[0][0],
    }[key]


def heads_phrase(heads: Sequence[Head]) -> str:
    names = [head_name(*h) for h in heads]
    if len(names) <= 1:
        return "".join(names)
    if len(names) > 6:
        return f"{len(names)} heads ({', '.join(names[:5])}, ...)"
    return ", ".join(names[:-1]) + " and " + names[-1]


def repeat_sentence(heads: Sequence[Head], r: RepeatKnockout) -> str:
    """A sentence a class can read: what knocking the heads out does to continuing a repeat."""
    who = f"Without {heads_phrase(heads)}"
    losses = f"loss on the second copy {r.second:.1f} → {r.second_ablated:.1f}"
    gap = r.first - r.second  # how much the second copy gains from having seen the first
    if gap < 0.1 * r.first:
        return (
            "This model does not continue repeated sequences even with every head in place "
            f"(without {heads_phrase(heads)}: {losses})."
        )
    lost = (r.second_ablated - r.second) / gap
    if lost >= 0.5:
        verdict = "the model can no longer continue the repeated sequence"
    elif lost >= 0.15:
        verdict = "the model continues the repeated sequence less well"
    else:
        verdict = "the model still continues the repeated sequence"
    random_part = ""
    if r.random_heads and r.second_random_mean is not None:
        k = len(r.random_heads[0])
        random_part = (f" (knocking out {k} random other head{'s' if k > 1 else ''} instead: "
                       f"{r.second:.1f} → {r.second_random_mean:.1f})")  # fmt: skip
    return f"{who} {verdict}: {losses}{random_part}."


def next_token_sentence(heads: Sequence[Head], e: NextTokenEffect) -> str:
    b, a = e.before[0], e.after[0]
    after = f"“{e.tokens[-1]}”"
    who = f"Without {heads_phrase(heads)}"
    if a.id == b.id:
        return f"{who} the top guess after {after} stays “{b.token}” ({b.prob:.0%} → {a.prob:.0%})."
    return (f"{who} the top guess after {after} changes from “{b.token}” ({b.prob:.0%}, now {e.before_top_after:.0%}) "
            f"to “{a.token}” ({a.prob:.0%}).")  # fmt: skip


def no_head_clears(model: str, role: Role, best: Head, score: float) -> str:
    la, h = best
    return (
        f"No head of model {model!r} clears the {role.name} threshold ({role.threshold}); the best, "
        f"L{la}H{h}, scores {score:.2f}. Knock out heads by name instead."
    )
