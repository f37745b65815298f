"""Stories whose two characters carry invented two-word names ("Drelka Vorn"), named in full every time.

Why: the generated stories name their characters from 44 one-token names, so a model learns each name as a
word and never needs the context to say what follows it. In real text a rare name, once introduced, is
predictable only from where it appeared before: exactly an induction head's job, and the skill the
"Zorbin Quell ... Zorbin" demo (labs/demos.py) asks for. These stories train that skill in prose. The
names are drawn from syllables at random, so almost none repeats across stories; none is a word of the
demos' names, an IOI name, or one of the stories' own characters (`FORBIDDEN`), so the demos stay held out.
"""

from __future__ import annotations

import random

from labs.demos import IOI_PAIRS, MADE_UP_NAMES
from labs.stories import NAMES, story

# Every common English onset, so a surname's first letters cannot be guessed from a short list: with 24
# onsets (none of them "bl" or "qu") the Llama-style model learned the list and put " L" after "Zorbin"
# instead of copying " Qu" (training_log.md, session 22).
ONSETS = ("b", "bl", "br", "c", "ch", "cl", "cr", "d", "dr", "f", "fl", "fr", "g", "gl", "gr", "h", "j", "k",
          "kr", "l", "m", "n", "p", "ph", "pl", "pr", "qu", "r", "s", "sc", "sh", "sk", "sl", "sm", "sn", "sp",
          "st", "str", "sw", "t", "th", "tr", "v", "w", "wh", "y", "z")  # fmt: skip
VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou")
CODAS = ("", "", "", "", "l", "n", "r", "s", "k", "m", "ll", "rn", "lk", "nd", "sk")


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(
        rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(syllables)
    ).capitalize()


def _words_of_held_out_names() -> frozenset[str]:
    demo = {w.strip(" ,.") for prompt, answer in MADE_UP_NAMES for w in (prompt.split()[:2] + [answer])}
    ioi = {n for pair in IOI_PAIRS for n in pair}
    stories = {n for group in NAMES.values() for n in group}
    return frozenset(w.lower() for w in demo | ioi | stories)


FORBIDDEN = _words_of_held_out_names()


def invented_name(rng: random.Random) -> str:
    """A first name of 2 invented syllables and a surname of 1-2 (as in "Zorbin Quell"), neither a
    held-out name."""
    while True:
        first, last = _word(rng, 2), _word(rng, rng.randint(1, 2))
        if first.lower() not in FORBIDDEN and last.lower() not in FORBIDDEN and first != last:
            return f"{first} {last}"


def invented_story(rng: random.Random) -> str:
    pool = {"she": [invented_name(rng), invented_name(rng)], "he": [invented_name(rng), invented_name(rng)]}
    return story(rng, names=pool)


def invented_stories(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [invented_story(rng) for _ in range(n)]
