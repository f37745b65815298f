"""Head-role detectors on hand-built attention patterns, the atlas and ablation on small models."""

from __future__ import annotations

import math

import pytest
import torch

from labs.roles.atlas import compute_atlas, head_atlas
from labs.roles.detectors import (
    duplicate_token_scores,
    first_token_scores,
    induction_scores,
    local_scores,
    name_choice_scores,
    previous_token_scores,
    token_induction_scores,
)
from labs.roles.evidence_prose import EVIDENCE_PROSE
from labs.roles.knockout import (
    DRAW_STEP,
    EVIDENCE_DRAWS,
    Evidence,
    median_rank,
    next_token_effect,
    prose_loss,
    random_other_heads,
    repeat_knockout,
    repeat_losses,
    role_evidence,
    settled,
)
from labs.roles.probes import (
    PRONOUN_TEMPLATES,
    copy_losses,
    induction_probe,
    name_sentences,
    pronoun_probe,
    sentence_run,
)
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
    # local (the 3 tokens before, queries i >= 4): mean of 3/5 and 3/6 = 11/20
    # repeats (R = 3, ids a b c a b c): queries 3, 4, 5 each have one target: (1/4+1/5+1/6)/3 = 37/180
    att = as_heads(uniform(6))
    ids = [7, 8, 9, 7, 8, 9]
    assert_scores(previous_token_scores(att), [87 / 300])
    assert_scores(first_token_scores(att), [87 / 300])
    assert_scores(local_scores(att), [11 / 20])
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
    # local (keys i-3..i-1, queries 4..9): previous-token always inside, the sink never, the duplicate
    # head never (query 4 looks at itself, later ones 5 back), the induction head only at query 4 (key 3;
    # later it looks 4 back).
    assert_scores(local_scores(att), [1.0, 0.0, 1 / 6, 0.0])


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


def test_name_choice_is_attention_to_the_right_name_minus_the_wrong_one():
    att = as_heads(uniform(8))
    assert_scores(name_choice_scores(att, 7, [2, 3], [5]), [1 / 8])  # uniform: 2 of 8 keys minus 1 of 8
    a = torch.zeros(8, 8)
    a[7, 2], a[7, 3], a[7, 5] = 0.5, 0.25, 0.25
    assert_scores(name_choice_scores(as_heads(a), 7, [2, 3], [5]), [0.5])


def pronoun_head(run, key_of) -> torch.Tensor:
    """(B, 1, 1, n, n): each sentence's pronoun row puts all its weight on key_of(sentence index,
    pronoun position); the other rows look at themselves."""
    B, n = len(run.ids), run.attention.shape[-1]
    att = torch.eye(n).repeat(B, 1, 1, 1, 1)
    for b, (q, _, _) in enumerate(run.targets):
        att[b, 0, 0, q] = 0.0
        att[b, 0, 0, q, key_of(b, q)] = 1.0
    return att


@pytest.mark.parametrize("where", ["first name", "second name", "2 back", "token 0"])
def test_pronoun_probe_gives_a_position_head_zero(tiny_lm, where):
    """Whatever fixed place a head looks at from the pronoun, right minus wrong cancels over the name
    orders and the He/She swap, even where the tokenizer cuts She and He differently."""
    from labs.roles.registry import ROLE_BY_KEY

    role = ROLE_BY_KEY["pronoun"]
    run = sentence_run(tiny_lm, list(name_sentences(PRONOUN_TEMPLATES)))
    first = lambda b: min(run.targets[b][1][0], run.targets[b][2][0])  # noqa: E731
    second = lambda b: max(run.targets[b][1][0], run.targets[b][2][0])  # noqa: E731
    key_of = {"first name": lambda b, q: first(b), "second name": lambda b, q: second(b),
              "2 back": lambda b, q: q - 2, "token 0": lambda b, q: 0}[where]  # fmt: skip
    runs = {"pronoun": type(run)(pronoun_head(run, key_of), run.ids, run.targets)}
    assert abs(float(role.detect(runs))) < 1e-6
    # ... while a head that looks at the right name scores 1, one that looks at the wrong one -1.
    for sign, pick in ((1.0, 1), (-1.0, 2)):
        runs = {
            "pronoun": type(run)(
                pronoun_head(run, lambda b, q, pick=pick: run.targets[b][pick][0]), run.ids, run.targets
            )
        }
        assert float(role.detect(runs)) == pytest.approx(sign)


def test_pronoun_sentences_keep_the_names_in_the_middle_and_swap_the_pronoun():
    sentences = list(name_sentences(PRONOUN_TEMPLATES))
    for s in sentences:
        assert not s.text.startswith((s.right, s.wrong)) and s.text.endswith(s.pronoun)
        assert {s.right, s.wrong} <= set(s.text.replace(".", " ").split())
    # every (text without its pronoun) appears once with She and once with He, the referent swapped
    by_stem = {}
    for s in sentences:
        by_stem.setdefault(s.text.rsplit(" ", 1)[0], []).append(s)
    assert all(sorted(x.pronoun for x in v) == ["He", "She"] for v in by_stem.values())
    assert all(v[0].right == v[1].wrong for v in by_stem.values())
    controls = list(name_sentences(PRONOUN_TEMPLATES, control=True))
    assert len(controls) == len(sentences)


def test_labels_follow_thresholds_and_local_yields_to_previous_token():
    L, H = 1, 3
    scores = {r.key: torch.zeros(L, H) for r in ROLES}
    t = {r.key: r.threshold for r in ROLES}
    scores["previous_token"][0] = torch.tensor([t["previous_token"], t["previous_token"] - 0.01, 0.0])
    scores["local"][0] = torch.tensor([0.9, 0.9, 0.0])
    scores["induction"][0, 2] = t["induction"]
    labels = label_heads(scores)
    assert labels == [[["previous_token"], ["local"], ["induction"]]]


def test_pronoun_probe_finds_the_pronoun_and_the_name_tokens(tokenizer, tiny_lm):
    s = next(name_sentences(PRONOUN_TEMPLATES))
    ids, (q, right, wrong) = pronoun_probe(tiny_lm, s)
    assert ids == tokenizer.encode(s.text)
    assert tokenizer.decode(ids[q:]).strip() == s.pronoun
    assert tokenizer.decode([ids[k] for k in right]).strip() == s.right
    assert tokenizer.decode([ids[k] for k in wrong]).strip() == s.wrong


def test_token_induction_equals_induction_score_on_the_probe(tiny_lm):
    R = 20
    ids = induction_probe(tiny_lm.config.vocab_size, 0, R)
    att = tiny_lm.trace(ids).attention
    torch.testing.assert_close(token_induction_scores(att, ids), induction_scores(att, R))


def test_atlas_scores_every_head_once_per_model(tiny_lm):
    atlas = head_atlas(tiny_lm)
    assert head_atlas(tiny_lm) is atlas  # cached
    L, H = tiny_lm.config.n_layer, tiny_lm.config.n_head
    assert set(atlas.scores) == set(atlas.controls) == set(atlas.nets) == {r.key for r in ROLES}
    for s in [*atlas.scores.values(), *atlas.controls.values()]:
        assert s.shape == (L, H) and bool(((s >= -1 - 1e-5) & (s <= 1 + 1e-5)).all())
    # The scores are the detectors on the probes drawn in the atlas.
    prose = atlas.probes["prose"]
    torch.testing.assert_close(atlas.scores["first_token"], first_token_scores(prose.attention))
    torch.testing.assert_close(
        atlas.probes["repeat"].attention, tiny_lm.trace(atlas.probes["repeat"].token_ids).attention
    )
    assert atlas.candidates == label_heads(atlas.nets)
    assert compute_atlas(tiny_lm).labels == atlas.labels


def test_knock_out_evidence_gates_the_labels(tiny_lm):
    """A candidate keeps its role only when its role's knock-out evidence holds."""
    atlas = compute_atlas(tiny_lm)
    for r in ROLES:
        cands, ev = atlas.candidates_for(r.key), atlas.evidence[r.key]
        assert (ev is None) == (not cands)
        assert atlas.heads_with(r.key) == (cands if ev is not None and ev.earned else [])
        if ev is not None:
            assert ev.heads == sorted(cands)


@pytest.mark.parametrize(
    ("ablated", "random", "earned"),
    [
        (1.0, [0.0, 0.2], True),
        (0.3, [0.0], False),
        (1.0, [0.6, 0.6], False),
        (1.0, [], True),
        (1.0, [-2.0], True),
        # One set in five holds a head the model cannot do without: it costs 3 nats, the others 0.1. The
        # mean (0.68) would ask 1.36; the typical set (the median, 0.1) asks 0.2.
        (0.5, [0.1, 0.1, 3.0, 0.1, 0.1], True),
        (0.5, [0.1, 3.0, 0.3, 3.0, 0.1], False),  # the median set costs 0.3: 0.5 is less than twice that
    ],
)
def test_evidence_needs_the_minimum_effect_and_to_beat_the_typical_random_set(ablated, random, earned):
    # intact 0: the effect is `ablated`; a typical random set costs median(random); min 0.5 and 2x that
    ev = Evidence("prose", [(0, 0)], 0.0, ablated, [[(0, 1)]] * len(random), random, 0.5)
    assert ev.earned is earned


def miss_chance(n: int, k: int) -> float:
    """The chance that the median lies below the k-th smallest of n draws or above the k-th largest."""
    return 2 * sum(math.comb(n, i) for i in range(k)) / 2**n


def test_random_effect_is_the_median_and_its_interval_holds_it_with_99_percent():
    ev = Evidence("prose", [(0, 0)], 1.0, 2.0, [[(0, 1)]] * 4, [1.0, 1.2, 5.0, 1.1], 0.05)
    assert ev.random_effect == pytest.approx(0.15)  # median of the costs 0, 0.2, 4, 0.1
    assert ev.random_interval is None  # with 4 sets even the extremes hold the median only 87.5% of the time
    assert median_rank(10) == 1 and median_rank(40) == 12
    for n in (10, 20, 40):  # the k-th smallest and largest miss the median with chance <= 1%, k + 1 would not
        k = median_rank(n)
        assert miss_chance(n, k) <= 0.01 < miss_chance(n, k + 1)
    costs = [0.3, 0.1, 0.9, 0.2, 0.5, 0.4, 0.0, 0.6, 0.8, 0.7]
    ten = Evidence("prose", [(0, 0)], 0.0, 1.0, [[(0, 1)]] * 10, costs, 0.05)
    assert ten.random_interval == pytest.approx((0.0, 0.9))  # k = 1: the smallest and the largest


@pytest.mark.parametrize("heads", [[], [(0, 1)], [(1, 0), (1, 3)]])
def test_prose_loss_in_one_batch_equals_one_paragraph_at_a_time(tiny_lm, heads):
    # The paragraphs share one padded forward; each alone, with the same heads out, must give the same.
    total, count = 0.0, 0
    for text in EVIDENCE_PROSE:
        ids = tiny_lm.encode(text)[: tiny_lm.config.context_length]
        logits = tiny_lm.logits(ids, ablate=heads)
        total += torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="sum").item()
        count += len(ids) - 1
    assert prose_loss(tiny_lm, heads) == pytest.approx(total / count, abs=1e-5)
    if heads:
        assert prose_loss(tiny_lm, heads) != pytest.approx(prose_loss(tiny_lm), abs=1e-4)  # the heads counted


@pytest.mark.parametrize("heads", [[(0, 0)], [(1, 1), (1, 2)]])
def test_role_evidence_draws_until_the_verdict_is_settled(tiny_lm, heads):
    ev = role_evidence(tiny_lm, "prose", heads)
    n = len(ev.random)
    assert n % DRAW_STEP == 0 and 2 * DRAW_STEP <= n <= EVIDENCE_DRAWS
    assert ev.random_heads == random_other_heads(tiny_lm, heads, EVIDENCE_DRAWS, 0)[:n]  # the first n sets
    assert ev.random == pytest.approx([prose_loss(tiny_lm, h) for h in ev.random_heads], abs=1e-6)
    assert settled(ev) or n == EVIDENCE_DRAWS
    if n > 2 * DRAW_STEP:  # it went on because fewer sets had not settled it
        shorter = Evidence(ev.behaviour, ev.heads, ev.intact, ev.ablated, ev.random_heads[: n - DRAW_STEP],
                           ev.random[: n - DRAW_STEP], ev.min_effect)  # fmt: skip
        assert not settled(shorter)


@pytest.mark.parametrize(
    ("ablated", "random", "done"),
    [
        (0.01, [0.0] * 10, True),  # under the minimum effect: no random set can earn it
        (1.0, [0.0, 0.02] * 5, True),  # above twice even the costliest set: earned whatever the median
        (0.1, [0.0, 0.1] * 5, False),  # the median may be 0 or 0.1, asking 0 or 0.2: too close to call
        (0.1, [0.06] * 10, True),  # every plausible median asks 0.12: not earned, settled
        (0.3, [0.0] * 9 + [3.0], False),  # the costliest set could be typical: with 10 sets, go on
        (0.3, [0.0] * 36 + [3.0] * 4, True),  # with 40, a tenth of sets that costly cannot be the median
    ],
)
def test_settled_when_every_plausible_median_gives_the_same_verdict(ablated, random, done):
    ev = Evidence("prose", [(0, 0)], 0.0, ablated, [[(0, 1)]] * len(random), random, 0.05)
    assert settled(ev) is done


def test_atlas_pronoun_scores_equal_one_sentence_at_a_time(tiny_lm):
    # The atlas pads the sentences into one batch; each sentence traced alone must give the same.
    atlas = compute_atlas(tiny_lm)
    alone = []
    for s in name_sentences(PRONOUN_TEMPLATES):
        ids, target = pronoun_probe(tiny_lm, s)
        alone.append(name_choice_scores(tiny_lm.trace(ids).attention, *target))
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
    assert divmod(int(atlas.scores[role].argmax()), lm.config.n_head) == head
    assert float(atlas.scores[role][head]) == pytest.approx(best["score"], abs=2e-3)
    torch.testing.assert_close(atlas.scores[role], torch.tensor(card[f"{role}_table"]), atol=2e-3, rtol=0)
    if best["score"] < ROLE_BY_KEY[role].threshold:
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
    rise, rise_random = r.second_ablated - r.second, r.second_random_median - r.second
    # "Far more": at least 1 nat of the copying benefit lost, and 4x what random heads cost.
    assert rise > 1.0 and rise > 4 * max(rise_random, 0.05), (rise, rise_random, r)


def test_sink_sentence_counts_the_atlas_heads(tiny_lm):
    """The explorer's sentence about token 0 is counted from the atlas, never typed in."""
    import dataclasses

    from app.heads.text import sink_fact

    atlas = compute_atlas(tiny_lm)
    L, H = tiny_lm.config.n_layer, tiny_lm.config.n_head
    none = torch.full((L, H), 0.1)
    none[1, 2] = 0.23
    said = sink_fact(dataclasses.replace(atlas, scores={**atlas.scores, "first_token": none}))
    assert said.startswith("In this model no head puts more than half") and "L1H2" in said and "23%" in said
    three = torch.zeros(L, H)
    three[0, 1], three[1, 0], three[1, 3] = 0.6, 0.9, 0.51
    said = sink_fact(dataclasses.replace(atlas, scores={**atlas.scores, "first_token": three}))
    assert said.startswith(f"In this model 3 of {L * H} heads put more than half") and "L1H0" in said
