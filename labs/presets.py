"""The class demos offered in the explorer's "Class demos…" menu, in one place.

The page renders them (templates/index.html), the classroom tokenizer is trained so that every word of
the `real_words` demos is one token (training/vocab.py), and the tests check both.
The made-up names of the induction demo are meant to be unfamiliar: they are never added to a vocabulary.
"""

from __future__ import annotations

from typing import NamedTuple


class Preset(NamedTuple):
    label: str
    text: str
    real_words: bool = True  # False: made-up words, deliberately split into unfamiliar pieces


PRESETS: tuple[Preset, ...] = (
    Preset("dog bites man", "The dog bites the man."),
    Preset("man bites dog", "The man bites the dog."),
    Preset("Lily had a red ball. She", "Lily had a red ball. She"),
    Preset("The cat sat on the mat", "The cat sat on the mat. The cat"),
    Preset("counting: 1 2 3 4 5 1 2 3 4", "1 2 3 4 5 1 2 3 4"),
    Preset("who gets the drink?", "Mary and John went to the store. John gave a drink to"),
    Preset(
        "induction: a made-up sequence, repeated",
        "Zorbin Quell met Tavi Morrow at the Glimmerfold. Zorbin Quell met Tavi Morrow at the Glimmerfold.",
        real_words=False,
    ),
)
