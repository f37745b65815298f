"""What the head-atlas pages read in words: the probe titles and the knock-out sentences.
(The roles' names, labels and explanations are data of the registry, labs/roles/registry.py.)"""

from __future__ import annotations

from collections.abc import Sequence

from labs.roles.atlas import HeadAtlas, head_name
from labs.roles.knockout import BEHAVIOURS, RANDOM_RATIO, Evidence, NextTokenEffect, RepeatKnockout
from labs.roles.registry import ROLE_BY_KEY, Role

Head = tuple[int, int]


def probe_title(key: str, repeat_length: int) -> str:
    from labs.roles.probes import PRONOUN_TEMPLATES, name_sentences

    return {
        "prose": "ordinary sentences",
        "repeat": f"{repeat_length} random tokens, then the same {repeat_length} again",
        "pronoun": f"{next(name_sentences(PRONOUN_TEMPLATES)).text} (and {len(list(name_sentences(PRONOUN_TEMPLATES))) - 1} "
        "more: names swapped, He for She)",
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
    if r.random_heads and r.second_random_median is not None:
        k, n = len(r.random_heads[0]), len(r.random_heads)
        typical = f", the typical (median) one of {n} random sets" if n > 1 else ""
        random_part = (f" (knocking out {k} random other head{'s' if k > 1 else ''} instead: "
                       f"{r.second:.1f} → {r.second_random_median:.1f}{typical})")  # fmt: skip
    return f"{who} {verdict}: {losses}{random_part}."


def next_token_sentence(heads: Sequence[Head], e: NextTokenEffect) -> str:
    b, a = e.before[0], e.after[0]
    after = f"“{e.tokens[-1]}”"
    who = f"Without {heads_phrase(heads)}"
    if a.id == b.id:
        return f"{who} the top guess after {after} stays “{b.token}” ({b.prob:.0%} → {a.prob:.0%})."
    return (f"{who} the top guess after {after} changes from “{b.token}” ({b.prob:.0%}, now {e.before_top_after:.0%}) "
            f"to “{a.token}” ({a.prob:.0%}).")  # fmt: skip


def evidence_sentence(role: Role, ev: Evidence) -> str:
    """What knocking the role's candidates out did, and whether that is evidence."""
    b = BEHAVIOURS[ev.behaviour]
    shown = (lambda x: -x) if b.key == "names" else (lambda x: x)  # the margin reads better as itself
    change = f"{shown(ev.intact):.2f} → {shown(ev.ablated):.2f} {b.unit}"
    rand = "" if ev.random_effect is None else (
        f"; {len(ev.heads)} random other head{'s' if len(ev.heads) > 1 else ''}: "
        f"{shown(ev.intact):.2f} → {shown(ev.intact + ev.random_effect):.2f} for the typical (median) one of "
        f"{len(ev.random)} random set{'s' if len(ev.random) > 1 else ''}")  # fmt: skip
    verdict = ("that is the evidence" if ev.earned else
               f"not enough evidence (it must get worse by at least {ev.min_effect} {b.unit} and by "
               f"{RANDOM_RATIO:g}× what a typical set of random heads costs)")  # fmt: skip
    return f"Knocking out {heads_phrase(ev.heads)} changes {b.name}: {change}{rand}: {verdict}."


def role_status(atlas: HeadAtlas, role: Role) -> str:
    """One sentence a class can read: which heads of this model earn the role, or that none does."""
    heads, cands = atlas.heads_with(role.key), atlas.candidates_for(role.key)
    ev = atlas.evidence[role.key]
    if heads:
        count = "1 head earns" if len(heads) == 1 else f"{len(heads)} heads earn"
        return f"In this model {count} the {role.name} role. {evidence_sentence(role, ev)}"
    if cands:
        return (f"In this model no head is a {role.name} head: {heads_phrase(cands)} pass the probe and its "
                f"control, but {evidence_sentence(role, ev)[0].lower()}{evidence_sentence(role, ev)[1:]}")  # fmt: skip
    la, h = atlas.closest(role.key)
    net, score, ctrl = (float(t[role.key][la, h]) for t in (atlas.nets, atlas.scores, atlas.controls))
    return (f"In this model no head is a {role.name} head: the closest, {head_name(la, h)}, has {net:.2f} "
            f"(probe {score:.2f}, control {ctrl:.2f}) against the {role.threshold} bar.")  # fmt: skip


def head_note(atlas: HeadAtlas, layer: int, head: int) -> str:
    """What the atlas says about one head: its roles, or that it has none and why."""
    name = head_name(layer, head)
    earned = atlas.labels[layer][head]
    if earned:
        return f"{name} in this model's head atlas: {', '.join(ROLE_BY_KEY[k].name for k in earned)}."
    unproven = [ROLE_BY_KEY[k].name for k in atlas.candidates[layer][head]]
    if unproven:
        return (
            f"{name} has no role in this model: it passes the {' and '.join(unproven)} probe and control, "
            "but knocking it out with the other candidates does not hurt what that role is for."
        )
    return f"{name} has no role in this model: it passes no role's probe and control."


def sink_fact(atlas: HeadAtlas) -> str:
    """The explorer's statement about heads that rest on token 0, counted on this model's atlas."""
    role = ROLE_BY_KEY["first_token"]
    s = atlas.scores[role.key]
    n = int((s > 0.5).sum())
    la, h = divmod(int(s.flatten().argmax()), s.shape[1])
    total = s.numel()
    if n == 0:
        return (f"In this model no head puts more than half its attention on token 0 (on ordinary "
                f"sentences; the most, {head_name(la, h)}, puts {float(s[la, h]):.0%} there).")  # fmt: skip
    return (f"In this model {n} of {total} heads put more than half their attention on token 0 (on ordinary "
            f"sentences; the most, {head_name(la, h)}, {float(s[la, h]):.0%}).")  # fmt: skip


def no_head_clears(model: str, atlas: HeadAtlas, role: Role) -> str:
    return f"Model {model!r} has no {role.name} head to knock out. {role_status(atlas, role)} Knock out heads by name instead."
