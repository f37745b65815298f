"""The words the pages read, written from the labs' numbers (app/<area>/text.py)."""

from __future__ import annotations

from app.cost.text import human_bytes
from app.heads.text import evidence_sentence, next_token_sentence, repeat_sentence
from labs.roles.knockout import Evidence, NextTokenEffect, RepeatKnockout, TokenProb
from labs.roles.registry import ROLE_BY_KEY


def test_sentences_read_for_a_class():
    r = RepeatKnockout(
        48, first=7.0, second=0.4, second_ablated=6.1, random_heads=[[(0, 1)]], second_random=[0.5]
    )
    assert repeat_sentence([(2, 5)], r) == (
        "Without L2H5 the model can no longer continue the repeated sequence: loss on the second copy "
        "0.4 → 6.1 (knocking out 1 random other head instead: 0.4 → 0.5)."
    )
    # Several random sets: the typical one, not a mean lifted by the set that holds an essential head.
    sets = RepeatKnockout(48, 7.0, 0.4, 6.1, [[(0, 1)], [(0, 2)], [(0, 3)]], [0.5, 0.6, 9.0])
    assert repeat_sentence([(2, 5)], sets).endswith(
        "(knocking out 1 random other head instead: 0.4 → 0.6, the typical (median) one of 3 random sets)."
    )
    r2 = RepeatKnockout(48, 7.0, 0.4, 0.6, [[(0, 1), (0, 2)]], [0.5])
    assert "still continues" in repeat_sentence([(2, 5), (3, 1)], r2)
    assert "L2H5 and L3H1" in repeat_sentence([(2, 5), (3, 1)], r2)
    r3 = RepeatKnockout(48, 7.0, 6.9, 7.0, [], [])
    assert repeat_sentence([(0, 0)], r3) == (
        "This model does not continue repeated sequences even with every head in place "
        "(without L0H0: loss on the second copy 6.9 → 7.0)."
    )

    e = NextTokenEffect(["She"], [TokenProb(1, "·had", 0.54)], [TokenProb(2, "·was", 0.3)], 0.1, 0.4)
    assert next_token_sentence([(1, 2)], e) == (
        "Without L1H2 the top guess after “She” changes from “·had” (54%, now 10%) to “·was” (30%)."
    )


def test_human_bytes():
    assert human_bytes(40_000) == "40 KB"
    assert human_bytes(4e10) == "40 GB"
    assert human_bytes(512) == "512 B"


def test_evidence_sentence_says_how_many_random_sets_the_typical_one_is_of():
    ev = Evidence("prose", [(0, 0), (0, 5)], 5.09, 5.34, [[(1, 1), (2, 2)]] * 10, [5.09, 5.11] * 5, 0.05)
    assert evidence_sentence(ROLE_BY_KEY["previous_token"], ev) == (
        "Knocking out L0H0 and L0H5 changes the loss on six short paragraphs of ordinary English: "
        "5.09 → 5.34 nats; 2 random other heads: 5.09 → 5.10 for the typical (median) one of 10 random sets: "
        "that is the evidence."
    )
