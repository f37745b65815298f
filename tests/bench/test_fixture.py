"""The benchmarks' prompts come from the repo itself, so `make bench` runs on a fresh checkout (it once
sent empty prompts there: its English came from a corpus only `make train` downloads)."""

from bench.fixture import Prompts, english_words


def test_bench_prompts_are_distinct_and_fit_their_length(tiny_lm):
    words = english_words()
    assert len(words) > 5_000
    prompts = Prompts(tiny_lm, words)
    taken = [prompts.take(16) for _ in range(5)]
    assert len(set(taken)) == 5  # every request a new passage: the response cache never answers
    for text in taken:
        assert text.strip()
        assert 0 < len(tiny_lm.encode(text)) <= 16
