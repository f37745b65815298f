"""`python -m labs.roles [model]`: the evidence table of every role (a file of its own, because it
needs both the atlas and the knock-outs, and the atlas imports the knock-outs)."""

from __future__ import annotations

from .atlas import head_atlas
from .knockout import BEHAVIOURS, name_margin, prose_loss
from .registry import ROLES, head_name


def main() -> None:
    """`python -m labs.roles [model]`: every role's best head, its probe and control scores,
    and the knock-out evidence (numbers only; the sentences a class reads are written by the server,
    app/heads/text.py)."""
    import sys

    from model.loading import load

    lm = load(sys.argv[1] if len(sys.argv) > 1 else "classroom")
    atlas = head_atlas(lm)
    print(
        f"{'role':16s} {'best':6s} {'score':>6s} {'control':>8s} {'net':>6s} {'bar':>5s}  candidates; knock-out"
    )
    for role in ROLES:
        best = atlas.closest(role.key)
        s, c, n = (float(t[role.key][best]) for t in (atlas.scores, atlas.controls, atlas.nets))
        ev = atlas.evidence[role.key]
        cands = [head_name(*h) for h in atlas.candidates_for(role.key)]
        if ev is None:
            verdict = "no candidate: no knock-out to run -> no head"
        else:
            unit = BEHAVIOURS[ev.behaviour].unit
            verdict = (
                f"{ev.behaviour} {ev.intact:.3f} -> {ev.ablated:.3f} (effect {ev.effect:+.3f} {unit}, "
                f"random {ev.random_effect if ev.random_effect is not None else float('nan'):+.3f}"
                f" {spread(ev)}, "
                f"needs >= {ev.min_effect}) -> {'EARNED' if ev.earned else 'not earned'}"
            )
        print(f"{role.key:16s} {head_name(*best):6s} {s:6.3f} {c:8.3f} {n:6.3f} {role.threshold:5.2f}  "
              f"{cands}; {verdict}")  # fmt: skip
    print(
        f"name margin with every head (NAME_TASKS): {name_margin(lm):+.3f} logits; prose loss {prose_loss(lm):.3f}"
    )


def spread(ev) -> str:
    """The median's 99% interval and how many random sets were drawn, e.g. "(median; +0.010..+0.050, 40 sets)"."""
    iv = ev.random_interval
    where = "" if iv is None else f"{iv[0]:+.3f}..{iv[1]:+.3f}, "
    return f"(median; {where}{len(ev.random)} sets)"


if __name__ == "__main__":
    main()
