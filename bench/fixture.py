"""The model the server-side benchmarks serve, and prompts of an exact token length.

Prompts are English from the classroom corpus's own story generator (seeded, built in-repo: a benchmark
must run on a fresh checkout with no corpus downloaded), a different passage for every request, so the
server's response cache never answers for the model.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from model import LanguageModel, load, save
from model.loading import ModelLoadError

from .models import CLASSROOM_SHAPE, random_net

RESULTS = Path(__file__).resolve().parent / "results"
STANDIN = RESULTS / "classroom-shaped-random"
STANDIN_LABEL = "classroom-shaped (random weights, BPE tokenizer of generated stories)"


def served_model() -> tuple[str, str]:
    """(what `python -m app --model` gets, a label): the bundled model, or the random stand-in."""
    try:
        load("classroom")
        return "classroom", "classroom (bundled)"
    except ModelLoadError:
        return standin(), STANDIN_LABEL


def standin() -> str:
    """A random model of the classroom model's shape with a 1024-token context and a BPE tokenizer of
    its vocabulary size (at most) trained on generated stories: for lengths beyond the bundled model's context."""
    if not (STANDIN / "model.safetensors").exists():
        from training.data import train_tokenizer

        tok = train_tokenizer(english_documents(), CLASSROOM_SHAPE["vocab_size"])
        shape = {**CLASSROOM_SHAPE, "vocab_size": tok.hf.get_vocab_size()}
        save(random_net("classroom-shaped-random", **shape), tok, STANDIN)
    return str(STANDIN)


def english_documents(n: int = 2000) -> list[str]:
    from training.corpus import story_documents

    return story_documents(seed=12345, n=n)  # a seed training did not use (it uses 0)


def english_words() -> list[str]:
    return " ".join(english_documents(400)).split()


class Prompts:
    """An endless supply of distinct passages of exactly (or, rarely, one token under) n tokens."""

    def __init__(self, lm: LanguageModel, words: list[str] | None = None) -> None:
        self.lm, self.words = lm, words or english_words()
        self.start = itertools.count(0, 37)

    def take(self, n: int) -> str:
        s = next(self.start) % max(1, len(self.words) - 4 * n)
        lo, hi = 1, 4 * n  # number of words; a word is at least one token
        while lo < hi:  # the most words whose encoding still fits in n tokens
            mid = (lo + hi + 1) // 2
            if len(self.lm.encode(" ".join(self.words[s : s + mid]))) <= n:
                lo = mid
            else:
                hi = mid - 1
        return " ".join(self.words[s : s + lo])
