"""Head-role detectors on hand-built attention patterns, the atlas and ablation on small models."""

from __future__ import annotations

import pytest
import torch

from labs.roles.atlas import compute_atlas, head_atlas
from labs.roles.detectors import (
    duplicate_token_scores,
    first_token_scores,
    induction_scores,
    local_scores,
    previous_token_scores,
    pronoun_scores,
    token_induction_scores,
)
from labs.roles.knockout import next_token_effect, random_other_heads, repeat_knockout, repeat_losses
from labs.roles.probes import copy_losses, induction_probe, pronoun_probe
from labs.roles.registry import ROLE_BY_KEY, ROLES, label_heads, prompt_scores
from model.loading import bundled_path, load


def as_heads(*patterns: torch.Tensor) -> torch.Tensor:
    """One layer whose heads are the given (n, n) patterns: (1, H, n, n)."""
    return torch.stack(patterns)[None]


def uniform(n: int) -> torch.Tensor:
    """Causal attention spread evenly: query i gives 1 / (i + 1) to each of keys 0..i."""
    return torch.ones(n, n).tril() / torch.arange(1, n + 1)[:, None]


def previous_token_pattern(n: int) -> torch.Tensor:
    a = torch.zeros(n, n)
    a[0, 0] = 1.0
    a[torch.arange(1, n), torch.arange(n - 1)] = 1.0
    return a


def sink_pattern(n: int) -> torch.Tensor:
    a = torch.zeros(n, n)
    a[:, 0] = 1.0
    return a


def induction_pattern(length: int) -> torch.Tensor:
    """Perfect induction on R tokens repeated: second-copy token R + j looks at j + 1."""
    a = previous_token_pattern(2 * length)
    i = torch.arange(length, 2 * length)
    a[i] = 0.0
    a[i, i - length + 1] = 1.0
    return a


def assert_scores(actual: torch.Tensor | None, expected: list[float]) -> None:
    assert actual is not None
    torch.testing.assert_close(actual, torch.tensor([expected]), atol=1e-6, rtol=0)


def test_previous_token_perfect_pattern_scores_one():
    att = as_heads(previous_token_pattern(10), uniform(10))
    assert_scores(previous_token_scores(att)[:, :1], [1.0])


def test_detectors_on_uniform_causal_attention():
    # n = 6. Query i gives 1/(i+1) to each key, so:
    # previous-token and first-token: mean over i = 1..5 of 1/(i+1) = (1/2+1/3+1/4+1/5+1/6)/5 = 87/300
    # local (window 4, queries i >= 4): mean of 4/5 and 4/6 = 11/15
    # repeats (R = 3, ids a b c a b c): queries 3, 4, 5 each have one target: (1/4+1/5+1/6)/3 = 37/180
    att = as_heads(uniform(6))
    ids = [7, 8, 9, 7, 8, 9]
    assert_scores(previous_token_scores(att), [87 / 300])
    assert_scores(first_token_scores(att), [87 / 300])
    assert_scores(local_scores(att), [11 / 15])
    assert_scores(induction_scores(att, 3), [37 / 180])
    assert_scores(token_induction_scores(att, ids), [37 / 180])
    assert_scores(duplicate_token_scores(att, ids), [37 / 180])


def test_detectors_separate_the_roles_on_hand_built_heads():
    R = 5
    ids = list(range(10, 10 + R)) * 2
    att = as_heads(previous_token_pattern(2 * R), sink_pattern(2 * R), induction_pattern(R))
    dup = torch.zeros(2 * R, 2 * R)
    dup[torch.arange(R), torch.arange(R)] = 1.0
    dup[torch.arange(R, 2 * R), torch.arange(R)] = 1.0  # each second-copy token looks at its first copy
    att = torch.cat([att, as_heads(dup)], 1)
    # Counted by hand over queries 1..9 (previous, first) or the second copy 5..9 (repeats):
    # the induction head looks at i-1 on its first copy (queries 1..4); the sink's query 5 looks at
    # key 0, the first copy of its token; the duplicate head's query 5 looks at key 0 too.
    assert_scores(previous_token_scores(att), [1.0, 1 / 9, 4 / 9, 0.0])
    assert_scores(first_token_scores(att), [1 / 9, 1.0, 1 / 9, 1 / 9])
    assert_scores(induction_scores(att, R), [0.0, 0.0, 1.0, 0.0])
    assert_scores(token_induction_scores(att, ids), [0.0, 0.0, 1.0, 0.0])
    assert_scores(duplicate_token_scores(att, ids), [0.0, 1 / 5, 0.0, 1.0])
    # local (window 4, queries 4..9): previous-token always inside, the sink never, the duplicate head
    # only at query 4 (itself), the induction head only at query 4 (key 3; later it looks 4 back).
    assert_scores(local_scores(att), [1.0, 0.0, 1 / 6, 1 / 6])


def test_previous_token_score_of_the_induction_pattern_counted_by_hand():
    # queries 1..9: 1..4 look at i-1 (first copy), 5 looks at key 1 (not 4), 6..9 look at i-4 (not i-1)
    att = as_heads(induction_pattern(5))
    assert_scores(previous_token_scores(att), [4 / 9])


def test_no_repeats_gives_no_repeat_scores():
    att = as_heads(uniform(5))
    assert duplicate_token_scores(att, [1, 2, 3, 4, 5]) is None
    assert token_induction_scores(att, [1, 2, 3, 4, 5]) is None
    scores = prompt_scores(att, [1, 2, 3, 4, 5])
    assert scores["induction"] is None and scores["local"] is not None


def test_local_needs_more_tokens_than_its_window():
    with pytest.raises(ValueError, match="more than 4 tokens"):
        local_scores(as_heads(uniform(4)))


def test_pronoun_score_is_attention_to_the_name_tokens():
    att = as_heads(uniform(8))
    assert_scores(pronoun_scores(att, 7, [0, 1]), [2 / 8])  # uniform: 2 of 8 keys
    a = torch.zeros(8, 8)
    a[7, 0], a[7, 1], a[7, 6] = 0.5, 0.25, 0.25
    assert_scores(pronoun_scores(as_heads(a), 7, [0, 1]), [0.75])


def test_labels_follow_thresholds_and_local_yields_to_previous_token():
    L, H = 1, 3
    scores = {r.key: torch.zeros(L, H) for r in ROLES}
    t = {r.key: r.threshold for r in ROLES}
    scores["previous_token"][0] = torch.tensor([t["previous_token"], t["previous_token"] - 0.01, 0.0])
    scores["local"][0] = torch.tensor([0.9, 0.9, 0.0])
    scores["induction"][0, 2] = t["induction"]
    labels = label_heads(scores)
    assert labels == [[["previous_token"], ["local"], ["induction"]]]


def test_pronoun_probe_finds_the_name_tokens(tokenizer, tiny_lm):
    text = "Lily had a red ball. She"
    ids, q, keys = pronoun_probe(tiny_lm, text, "Lily")
    assert ids == tokenizer.encode(text) and q == len(ids) - 1
    assert tokenizer.decode([ids[k] for k in keys]).strip() == "Lily"


def test_token_induction_equals_induction_score_on_the_probe(tiny_lm):
    R = 20
    ids = induction_probe(tiny_lm.config.vocab_size, 0, R)
    att = tiny_lm.trace(ids).attention
    torch.testing.assert_close(token_induction_scores(att, ids), induction_scores(att, R))


def test_atlas_scores_every_head_once_per_model(tiny_lm):
    atlas = head_atlas(tiny_lm)
    assert head_atlas(tiny_lm) is atlas  # cached
    L, H = tiny_lm.config.n_layer, tiny_lm.config.n_head
    assert set(atlas.scores) == {r.key for r in ROLES}
    for s in atlas.scores.values():
        assert s.shape == (L, H) and bool(((s >= 0) & (s <= 1 + 1e-5)).all())
    # The scores are the detectors on the probes drawn in the atlas.
    prose = atlas.probes["prose"]
    torch.testing.assert_close(atlas.scores["first_token"], first_token_scores(prose.attention))
    torch.testing.assert_close(
        atlas.probes["repeat"].attention, tiny_lm.trace(atlas.probes["repeat"].token_ids).attention
    )
    assert atlas.labels == label_heads(atlas.scores)
    assert compute_atlas(tiny_lm).labels == atlas.labels


def test_atlas_pronoun_scores_equal_one_sentence_at_a_time(tiny_lm):
    # The atlas pads the sentences into one batch; each sentence traced alone must give the same.
    from labs.roles.probes import PRONOUN_PROBES

    atlas = compute_atlas(tiny_lm)
    alone = []
    for text, name in PRONOUN_PROBES:
        ids, q, keys = pronoun_probe(tiny_lm, text, name)
        alone.append(pronoun_scores(tiny_lm.trace(ids).attention, q, keys))
    torch.testing.assert_close(atlas.scores["pronoun"], torch.stack(alone).mean(0), atol=1e-5, rtol=0)
    view = atlas.probes["pronoun"]
    torch.testing.assert_close(view.attention, tiny_lm.trace(view.token_ids).attention, atol=1e-5, rtol=0)


def test_repeat_losses_match_the_card_definition(tiny_lm):
    # The batched probe loss equals copy_losses on one traced sequence at a time.
    from labs.roles.probes import INDUCTION_SEEDS, repeat_length

    R = repeat_length(tiny_lm)
    per_seed = []
    for s in INDUCTION_SEEDS:
        ids = induction_probe(tiny_lm.config.vocab_size, s, R)
        per_seed.append(copy_losses(tiny_lm.trace(ids, ablate=[(1, 2)]).logits, ids, R))
    first, second = repeat_losses(tiny_lm, [(1, 2)])
    assert first == pytest.approx(sum(f for f, _ in per_seed) / 4, rel=1e-4)
    assert second == pytest.approx(sum(s for _, s in per_seed) / 4, rel=1e-4)


def test_knocking_out_a_head_changes_next_token_probabilities(tiny_lm):
    e = next_token_effect(tiny_lm, "The cat sat on the", [(0, 0), (1, 1)], "zero", k=5)
    assert len(e.before) == 5 and e.kl > 0
    assert [t.prob for t in e.before] != [t.prob for t in e.after]
    same = next_token_effect(tiny_lm, "The cat sat on the", [(0, 0)], "mean", k=3)
    assert same.tokens[-1] == tiny_lm.tokenizer.displays(tiny_lm.encode("The cat sat on the"))[-1]


def test_repeat_knockout_checks_heads_with_the_models_wording(tiny_lm):
    with pytest.raises(ValueError, match=r"no head \[5, 0\]"):
        repeat_knockout(tiny_lm, [(5, 0)])
    with pytest.raises(ValueError, match="at least one head"):
        repeat_knockout(tiny_lm, [])
    assert tiny_lm.check_heads([(1, 2), (1, 2)]) == [(1, 2)]


def test_random_other_heads_are_seeded_and_exclude_the_knocked_out(tiny_lm):
    heads = [(0, 1), (1, 3)]
    a = random_other_heads(tiny_lm, heads, 5, seed=3)
    assert a == random_other_heads(tiny_lm, heads, 5, seed=3)
    assert all(len(s) == 2 and not set(s) & set(heads) for s in a)
    assert a != random_other_heads(tiny_lm, heads, 5, seed=4)


def test_repeat_knockout_on_a_small_model(tiny_lm):
    r = repeat_knockout(tiny_lm, [(1, 0)], "zero", draws=3, seed=0)
    assert r.second_ablated == pytest.approx(repeat_losses(tiny_lm, [(1, 0)])[1])
    assert len(r.second_random) == 3 and all((1, 0) not in s for s in r.random_heads)


# ---- the bundled classroom model: the heads its model card reports are found again ----------------

classroom_only = pytest.mark.skipif(
    not (bundled_path("classroom") / "model.safetensors").exists(),
    reason="the classroom model is not trained yet",
)


@pytest.fixture(scope="module")
def classroom():
    from training.card import read_figures  # the card's machine-readable figures block

    lm = load("classroom")
    assert lm.card is not None, "the classroom model ships without MODEL_CARD.md"
    return lm, read_figures(lm.card)["roles"], head_atlas(lm)


@classroom_only
@pytest.mark.slow
@pytest.mark.parametrize("role", ["previous_token", "induction"])
def test_atlas_finds_the_heads_the_model_card_reports(classroom, role):
    lm, card, atlas = classroom
    best = card[role]
    head = (best["layer"], best["head"])
    assert atlas.top_heads(role, 1)[0] == head
    assert float(atlas.scores[role][head]) == pytest.approx(best["score"], abs=2e-3)
    torch.testing.assert_close(atlas.scores[role], torch.tensor(card[f"{role}_table"]), atol=2e-3, rtol=0)
    if best["score"] >= ROLE_BY_KEY[role].threshold:
        assert head in atlas.heads_with(role)
    else:
        assert not atlas.heads_with(role)


@classroom_only
@pytest.mark.slow
def test_knocking_out_the_top_induction_heads_breaks_copying_more_than_random_heads(classroom):
    lm, card, atlas = classroom
    first, second = repeat_losses(lm)
    assert first == pytest.approx(card["first_copy_loss"], abs=2e-3)
    assert second == pytest.approx(card["second_copy_loss"], abs=2e-3)
    if card["induction"]["score"] < ROLE_BY_KEY["induction"].threshold:
        pytest.skip(f"the model card reports no induction head (best {card['induction']['score']})")
    heads = atlas.heads_with("induction")
    r = repeat_knockout(lm, heads, "zero", draws=5, seed=0)
    rise, rise_random = r.second_ablated - r.second, r.second_random_mean - r.second
    # "Far more": at least 1 nat of the copying benefit lost, and 4x what random heads cost.
    assert rise > 1.0 and rise > 4 * max(rise_random, 0.05), (rise, rise_random, r)
