"""Which words the classroom tokenizer must keep whole, and how many it does.

A class types words, so a token should be a word: "dog bites man" should be three tokens, not a lesson
about word fragments. Byte-level BPE trained on the corpus alone already keeps the most frequent words
whole when they follow a space, but not the same words at the start of a prompt ("Lily" -> "L" + "ily")
nor rarer words a demo uses ("·bites" -> "·b" + "ites"). So the tokenizer also trains on a short
supplement: the corpus's most frequent words, each as it appears after a space and capitalised at the
start of a text, and every word of the class demos, repeated often enough for BPE to merge them whole.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from labs.presets import PRESETS

WORD = re.compile(r"(?<= )[A-Za-z]+")  # a word as BPE's pre-tokenizer sees it after a space
TOP_WORDS = 1000  # the measure: the 1,000 most frequent corpus words
SUPPLEMENT_WORDS = 2000  # the supplement covers more than the measure, so the measure is not the target
SUPPLEMENT_REPEATS = 300  # how often each supplement word is counted: enough to outrank rare merges


def top_words(docs: Iterable[str], k: int = TOP_WORDS) -> list[str]:
    counts = Counter(m.group(0) for doc in docs for m in WORD.finditer(doc))
    return [w for w, _ in counts.most_common(k)]


def preset_words() -> list[str]:
    """Every word of the real-word demos in the form a tokenizer sees it: with its leading space, or bare
    when it starts the text ("Lily", "·had", "·a", ...). Numbers are words too."""
    out = []
    for p in PRESETS:
        if p.real_words:
            for m in re.finditer(r"(^|(?<= ))[A-Za-z0-9]+", p.text):
                out.append(m.group(0) if m.start() == 0 else " " + m.group(0))
    return list(dict.fromkeys(out))


def supplement(docs: list[str]) -> list[str]:
    """Lines for the tokenizer trainer: each word after a space and capitalised bare, plus the demos'."""
    words = top_words(docs, SUPPLEMENT_WORDS)
    demo = [w.strip() for w in preset_words()]  # each demo word both bare and after a space
    forms = [" " + w for w in words] + [w[0].upper() + w[1:] for w in words] + demo + [" " + w for w in demo]
    line = "\n".join(dict.fromkeys(forms))
    return [line] * SUPPLEMENT_REPEATS


def coverage(tok, docs: list[str]) -> dict:
    """The share of the corpus's top words (after a space) and of the demos' words that are one token."""
    top = top_words(docs)
    split_top = [w for w in top if len(tok.encode(" " + w)) != 1]
    demo = preset_words()
    split_demo = [w for w in demo if len(tok.encode(w)) != 1]
    return {
        "top_words": len(top),
        "top_words_single": round(1 - len(split_top) / len(top), 4),
        "top_words_split": split_top,
        "preset_words": len(demo),
        "preset_words_split": split_demo,
    }
