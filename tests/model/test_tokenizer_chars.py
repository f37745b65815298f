"""Byte tokens that only spell a character together are grouped, with the character they spell."""

from __future__ import annotations


def test_char_groups_join_the_bytes_of_one_character(tokenizer):
    ids = tokenizer.encode("a🙂b é 中")
    displays = tokenizer.displays(ids)
    groups = tokenizer.char_groups(ids)
    assert [g.text for g in groups] == ["🙂", "é", "中"]
    for g in groups:
        assert g.end - g.start >= 2
        assert g.pieces == displays[g.start : g.end]
        assert all(p.startswith("<") for p in g.pieces)  # each piece alone is not text
    # Groups never overlap and cover exactly the byte tokens.
    covered = [i for g in groups for i in range(g.start, g.end)]
    assert covered == sorted(set(covered))
    assert all(not displays[i].startswith("<") for i in range(len(ids)) if i not in covered)


def test_char_groups_empty_for_plain_text(tokenizer):
    assert tokenizer.char_groups(tokenizer.encode("The cat sat on the mat")) == []
