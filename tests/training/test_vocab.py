"""Which words the classroom tokenizer keeps whole (training/vocab.py), on a tiny corpus."""

from labs.presets import PRESETS
from training.data import train_tokenizer
from training.vocab import coverage, preset_words, supplement, top_words

DOCS = ["the cat sat on the mat and the cat ran", "a dog and a cat and the dog sat"] * 20


def test_top_words_count_words_after_a_space():
    # "the" starts the first document (no space before it) but follows a space often enough to lead.
    assert top_words(DOCS, 3) == ["cat", "the", "and"]


def test_preset_words_are_the_forms_a_tokenizer_sees():
    words = preset_words()
    assert "The" in words and " dog" in words and " bites" in words and "Lily" in words and " 5" in words
    made_up = [p for p in PRESETS if not p.real_words]
    assert made_up and not any("Zorbin" in w for w in words)  # made-up names are never made whole


def test_the_supplement_makes_rare_demo_words_single_tokens():
    plain = train_tokenizer(DOCS, 300)
    assert len(plain.encode(" bites")) > 1
    tok = train_tokenizer(DOCS + supplement(DOCS), 600)
    c = coverage(tok, DOCS)
    assert c["top_words_single"] == 1.0 and c["preset_words_split"] == []
    assert len(tok.encode("Lily")) == 1 and len(tok.encode(" Lily")) == 1
