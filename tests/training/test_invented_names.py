"""The invented-name stories: every character's two-word name recurs in its story, so its second word is
predictable only from context, and no demo or IOI name (nor a stories character) is ever generated, so the
demos stay held out. The shipped stories are unchanged by the new `names` argument."""

from __future__ import annotations

import random
import re

from labs.demos import IOI_PAIRS, MADE_UP_NAMES
from labs.stories import story_documents
from training.card import data_rows_text
from training.data import INVENTED, NATURAL_WEIGHTS, mixture_weights
from training.invented_names import FORBIDDEN, invented_name, invented_stories


def test_no_held_out_name_is_ever_generated():
    held_out = {"Zorbin", "Quell", "Vantor", "Blisk", "Mira", "Tollwen"} | {n for p in IOI_PAIRS for n in p}
    assert {w.lower() for w in held_out} <= FORBIDDEN
    assert all(p.split()[0].lower() in FORBIDDEN for p, _ in MADE_UP_NAMES)
    text = " ".join(invented_stories(0, 3000))
    words = set(re.findall(r"[A-Za-z]+", text))
    assert not words & held_out


def test_each_character_is_named_in_full_again_and_again():
    rng = random.Random(1)
    for doc in invented_stories(1, 50):
        first = re.match(r"(?:Once upon a time there was a \w+ \w+ called|[\w ]+?,) ([A-Z]\w+ [A-Z]\w+)", doc)
        assert first, doc[:80]
        assert doc.count(first.group(1)) >= 2  # the name recurs, so its second word can be copied
    names = [invented_name(rng) for _ in range(500)]
    assert all(len(n.split()) == 2 for n in names)
    assert len(set(names)) > 490  # invented anew for each story, not a small cast the model could memorise


def test_the_same_seed_gives_the_same_stories_and_the_shipped_stories_do_not_change():
    assert invented_stories(3, 20) == invented_stories(3, 20)
    assert invented_stories(3, 20) != invented_stories(4, 20)
    # The first generated story of the corpus the shipped models trained on (seed 0): the new
    # `names` argument of labs.stories.story must not change the stream the shipped models trained on.
    assert story_documents(0, 1)[0].startswith(
        "Last summer, Ben went to the forest. Ben wanted to go to the farm"
    )


def test_the_mixture_makes_room_for_the_invented_stories():
    assert mixture_weights(0.0) == NATURAL_WEIGHTS
    mix = mixture_weights(0.2)
    assert mix[INVENTED] == 0.2 and abs(sum(mix.values()) - 1) < 1e-9
    assert mix["stories"] / mix["brown"] == NATURAL_WEIGHTS["stories"] / NATURAL_WEIGHTS["brown"]
    assert INVENTED not in data_rows_text({}) and "invented two-word names" in data_rows_text(
        {"invented_name_share": 0.2}
    )
