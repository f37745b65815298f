"""The role registry: every Role's detector finds its role on a hand-built head and not on the others."""

from __future__ import annotations

import pytest
import torch

from labs.roles.detectors import LOCAL_WINDOW
from labs.roles.probes import PROBE_KEYS
from labs.roles.registry import (
    HEAD_SCORES,
    ROLE_KEYS,
    ROLES,
    ProbeRun,
    head_scores,
    label_heads,
    prompt_scores,
)

R = 6  # tokens in each copy of the hand-built repeat probe
IDS = list(range(10, 10 + R)) * 2


def one_hot(n: int, keys: list[int]) -> torch.Tensor:
    """(n, n) where query i puts all its attention on keys[i]."""
    a = torch.zeros(n, n)
    a[torch.arange(n), torch.tensor(keys)] = 1.0
    return a


def ideal(role: str, n: int) -> torch.Tensor:
    """A perfect head for `role` on a probe of n tokens (the repeat probe for the repeat roles)."""
    if role == "previous_token":
        return one_hot(n, [max(i - 1, 0) for i in range(n)])
    if role == "first_token":
        return one_hot(n, [0] * n)
    if role == "local":  # a quarter on each of the LOCAL_WINDOW most recent tokens
        a = torch.zeros(n, n)
        for i in range(n):
            for j in range(max(i - LOCAL_WINDOW + 1, 0), i + 1):
                a[i, j] = 1 / min(i + 1, LOCAL_WINDOW)
        return a
    if role == "induction":  # second-copy token R + j looks at j + 1
        return one_hot(n, [i if i < R else i - R + 1 for i in range(n)])
    if role == "duplicate_token":  # second-copy token R + j looks at its first copy j
        return one_hot(n, [i if i < R else i - R for i in range(n)])
    if role == "pronoun":  # the last token (the pronoun) looks at the name, tokens 0 and 1
        a = one_hot(n, list(range(n)))
        a[n - 1] = 0.0
        a[n - 1, :2] = 0.5
        return a
    raise AssertionError(f"no hand-built head for {role}: add one with the new role")


def probe_run(role: str, heads: torch.Tensor) -> ProbeRun:
    """heads (H, n, n) as one layer on the role's probe."""
    n = heads.shape[-1]
    targets = [(n - 1, [0, 1])] if role == "pronoun" else None
    return ProbeRun(heads[None, None], [IDS[:n]], targets)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.key)
def test_role_detector_scores_its_ideal_head_highest(role):
    n = 2 * R
    heads = torch.stack([ideal(r.key, n) for r in ROLES])  # one head per role, in ROLES order
    scores = role.detect(probe_run(role.key, heads))
    assert scores.shape == (1, len(ROLES))
    own = ROLE_KEYS.index(role.key)
    assert scores[0, own] >= role.threshold, (role.key, scores)
    assert scores[0, own] == scores[0].max()


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.key)
def test_role_entry_is_complete(role):
    assert role.probe in PROBE_KEYS
    assert 0 < role.threshold <= 1
    assert role.name and role.label and len(role.label) <= 6 and role.explanation and role.how


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
