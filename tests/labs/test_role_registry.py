"""The role registry: every Role's detector finds its role on a hand-built head and not on the others."""

from __future__ import annotations

import pytest
import torch

from labs.roles.detectors import LOCAL_WINDOW
from labs.roles.probes import PROBE_KEYS
from labs.roles.registry import (
    HEAD_SCORES,
    ROLE_BY_KEY,
    ROLE_KEYS,
    ROLES,
    ProbeRun,
    head_scores,
    label_heads,
    prompt_scores,
)

R = 6  # tokens in each copy of the hand-built repeat probe
IDS = list(range(10, 10 + R)) * 2
N = 2 * R


def one_hot(n: int, keys: list[int]) -> torch.Tensor:
    """(n, n) where query i puts all its attention on keys[i]."""
    a = torch.zeros(n, n)
    a[torch.arange(n), torch.tensor(keys)] = 1.0
    return a


def ideal(role: str, n: int) -> torch.Tensor:
    """A perfect head for `role` on a probe of n tokens (the repeat probe for the repeat roles).
    Content heads look at the content: on the random control (nothing repeats) they look at themselves."""
    if role == "previous_token":
        return one_hot(n, [max(i - 1, 0) for i in range(n)])
    if role == "first_token":
        return one_hot(n, [0] * n)
    if role == "self":
        return one_hot(n, list(range(n)))
    if role == "local":  # an equal share on each of the LOCAL_WINDOW tokens before (itself near the start)
        a = torch.zeros(n, n)
        for i in range(n):
            keys = list(range(max(i - LOCAL_WINDOW, 0), i)) or [i]
            a[i, keys] = 1 / len(keys)
        return a
    if role == "induction":  # second-copy token R + j looks at j + 1
        return one_hot(n, [i if i < R else i - R + 1 for i in range(n)])
    if role == "duplicate_token":  # second-copy token R + j looks at its first copy j
        return one_hot(n, [i if i < R else i - R for i in range(n)])
    if role == "pronoun":  # the pronoun (last token) looks at the right name, token 1
        a = one_hot(n, list(range(n)))
        a[n - 1] = 0.0
        a[n - 1, 1] = 1.0
        return a
    raise AssertionError(f"no hand-built head for {role}: add one with the new role")


def probes_of(heads: dict[str, torch.Tensor], control: dict[str, torch.Tensor]) -> dict[str, ProbeRun]:
    """One layer of hand-built heads on every probe: `heads` (H, N, N) on the probes, `control` on
    their controls. Pronoun sentences: the pronoun is the last token, the right name token 1, the wrong
    name token 2; in the control the pronoun fits both."""

    def run(att: torch.Tensor, ids: list[int], targets=None) -> ProbeRun:
        return ProbeRun(att[None, None], [ids], targets)

    random_ids = list(range(10, 10 + N))
    pron = [(N - 1, [1], [2])]
    return {
        "prose": run(heads["prose"], random_ids), "repeat": run(heads["repeat"], IDS),
        "random": run(control["random"], random_ids), "pronoun": run(heads["pronoun"], IDS, pron),
        "pronoun_control": run(control["pronoun"], IDS, pron),
    }  # fmt: skip


def hand_built_probes() -> dict[str, ProbeRun]:
    """One head per role, in ROLES order, on every probe. A position head draws the same pattern on
    every probe; a content head looks at itself where its cue is missing (the random control; on the
    pronoun control, the pronoun fits both names, so it splits its attention between them)."""

    def head(role: str, probe: str) -> torch.Tensor:
        r = ROLE_BY_KEY[role]
        if r.about == "position" or probe in ("prose", "repeat", "pronoun"):
            return ideal(role, N)
        if role == "pronoun" and probe == "pronoun_control":
            a = ideal(role, N)
            a[N - 1, 1] = a[N - 1, 2] = 0.5
            return a
        return ideal("self", N)

    stack = lambda probe: torch.stack([head(r.key, probe) for r in ROLES])  # noqa: E731
    return probes_of({p: stack(p) for p in ("prose", "repeat", "pronoun")},
                     {"random": stack("random"), "pronoun": stack("pronoun_control")})  # fmt: skip


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.key)
def test_role_net_score_is_highest_on_its_ideal_head(role):
    runs = hand_built_probes()
    net = role.net(role.detect(runs), role.control(runs))
    assert net.shape == (1, len(ROLES))
    own = ROLE_KEYS.index(role.key)
    assert net[0, own] >= role.threshold, (role.key, net)
    assert net[0, own] == net[0].max()


@pytest.mark.parametrize("role", [r for r in ROLES if r.about == "content"], ids=lambda r: r.key)
def test_a_position_head_cannot_pass_a_content_role(role):
    """Heads that only count positions draw the same on the probe and on its control: net 0."""
    position_heads = torch.stack([ideal(k, N) for k in ("previous_token", "self", "first_token", "local")])
    # the same position heads on every probe and control
    runs = probes_of({p: position_heads for p in ("prose", "repeat", "pronoun")},
                     {"random": position_heads, "pronoun": position_heads})  # fmt: skip
    torch.testing.assert_close(role.net(role.detect(runs), role.control(runs)), torch.zeros(1, 4))


def test_self_and_local_are_separate_roles():
    """A head that only looks at itself is self, not local; one that spreads over the tokens just
    before is local, not self (the old local score counted the token itself)."""
    runs = hand_built_probes()
    selfie, local = ROLE_KEYS.index("self"), ROLE_KEYS.index("local")
    nets = {r.key: r.net(r.detect(runs), r.control(runs)) for r in ROLES}
    labels = label_heads(nets)[0]
    assert labels[selfie] == ["self"] and labels[local] == ["local"]
    assert float(nets["local"][0, selfie]) == 0.0 and float(nets["self"][0, local]) == 0.0


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.key)
def test_role_entry_is_complete(role):
    from labs.roles.knockout import BEHAVIOURS

    assert role.probe in PROBE_KEYS
    assert 0 < role.threshold <= 1
    assert role.name and role.label and len(role.label) <= 6 and role.explanation and role.how
    assert role.control_how and role.about in ("position", "content") and role.evidence in BEHAVIOURS


def test_role_keys_and_labels_are_unique():
    assert len(set(ROLE_KEYS)) == len(ROLES)
    assert len({r.label for r in ROLES}) == len(ROLES)


def test_prompt_scores_cover_the_roles_that_need_no_probe():
    att = ideal("previous_token", 2 * R)[None, None]
    scores = prompt_scores(att, IDS)
    assert list(scores) == [r.key for r in ROLES if r.on_prompt is not None]
    assert "pronoun" not in scores
    torch.testing.assert_close(scores["previous_token"], torch.ones(1, 1))


def test_label_heads_uses_each_roles_threshold():
    scores = {r.key: torch.full((1, 1), r.threshold) for r in ROLES}
    (labels,) = label_heads(scores)
    # every role except those that yield to a role the head already has
    assert labels[0] == [r.key for r in ROLES if r.yields_to is None]


def test_head_scores_of_a_previous_token_head():
    scores = head_scores(ideal("previous_token", 5))
    assert list(scores) == [s.key for s in HEAD_SCORES]
    assert scores["previous_token"] == pytest.approx(1.0) and scores["entropy"] == pytest.approx(0.0)
    assert head_scores(torch.ones(1, 1))["previous_token"] is None
