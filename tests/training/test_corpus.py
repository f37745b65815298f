"""Reading the Bible out of diatheke's plain output (the shape below is copied from diatheke 4.8 over
the whole range "Gen 1:1 - Rev 22:21", including the state it leaks from Psalm 3 on), and the token
streams cached next to a corpus."""

from __future__ import annotations

import json

from training.corpus import BIBLE_MODULE, PARTS, bible_chapters
from training.data import tokenize_corpus, train_tokenizer

PLAIN = f"""Job 34:36: I wish that Job were tried to the end,
because of his answering like wicked men.

Job 34:37: For he adds rebellion to his sin.
He claps his hands among us,
and multiplies his words against God.”
Job 35:1: Moreover Elihu answered,
Judges 5:31: “So let all your enemies perish, Yahweh,
but let those who love him be as the sun when it rises in its strength.”


Then the land had rest forty years.
Judges 6:1: The children of Israel did evil.
Psalms 2:12: Blessed are all those who take refuge in him.


A Psalm by David, when he fled from Absalom his son.
  Psalms 3:1: Yahweh, how my adversaries have increased!
Many are those who rise up against me.

A Psalm by David, when he fled from Absalom his son.
  Psalms 3:2: Many there are who say of my soul,
Selah.

A Psalm by David, when he fled from Absalom his son.
  Psalms 5:1: Give ear to my words, Yahweh.
A Psalm by David, when he fled from Absalom his son.
  IV Maccabees 18:24: To him be glory forever and ever. Amen.
A Psalm by David, when he fled from Absalom his son.
  Matthew 1:1: The book of the genealogy of Jesus Christ.
<title canonical="true" type="psalm">A Psalm by David, when he fled from Absalom his son.</title> <lg sID="gen1"/> <l level="1" sID="gen2"/>Romans 16:26:
  Romans 16:27: to the only wise God be the glory forever! Amen.
({BIBLE_MODULE})
"""


def test_every_chapter_is_found_with_or_without_the_indent():
    assert list(bible_chapters(PLAIN)) == ["Job 34", "Job 35", "Judges 5", "Judges 6", "Psalms 2", "Psalms 3",
                                           "Psalms 5", "IV Maccabees 18", "Matthew 1", "Romans 16"]  # fmt: skip


def test_a_psalm_keeps_its_title_once_and_no_verse_keeps_a_reference():
    ch = bible_chapters(PLAIN)
    assert ch["Psalms 3"] == [
        "A Psalm by David, when he fled from Absalom his son.",
        "Yahweh, how my adversaries have increased!",
        "Many are those who rise up against me.",
        "Many there are who say of my soul,",
        "Selah.",
    ]
    text = " ".join(line for lines in ch.values() for line in lines)
    assert text.count("A Psalm by David") == 1  # the copies leaked before later verses are gone
    assert ch["Matthew 1"] == ["The book of the genealogy of Jesus Christ."]
    assert ch["Romans 16"] == ["to the only wise God be the glory forever! Amen."]  # markup and all
    assert ":" not in text.replace("soul,", "")  # no "Psalms 3:2:" left in the text
    assert BIBLE_MODULE not in text


def test_lines_after_a_verse_continue_it_even_after_a_blank_line():
    ch = bible_chapters(PLAIN)
    assert ch["Job 34"][-2:] == ["He claps his hands among us,", "and multiplies his words against God.”"]
    assert ch["Job 35"] == ["Moreover Elihu answered,"]
    assert ch["Judges 5"][-1] == "Then the land had rest forty years."  # not a title: Judges has none
    assert ch["Judges 6"] == ["The children of Israel did evil."]


def _write_corpus(folder, bible_text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for part in PARTS:
        for split in ("train", "val"):
            text = bible_text if part == "bible" else f"the {part} {split} text, the cat sat"
            (folder / f"{part}.{split}.jsonl").write_text(json.dumps({"text": text}) + "\n")
    (folder / "manifest.json").write_text(json.dumps({"parts": {"bible": {"chars": len(bible_text)}}}))


def test_token_streams_follow_a_rebuilt_corpus_and_the_tokenizer_they_were_read_with(tmp_path):
    tok = train_tokenizer(["the cat sat on the mat. Yahweh said"] * 20, 300)
    _write_corpus(tmp_path, "Yahweh said")
    before = tokenize_corpus(tmp_path, tok)[0]["bible"]
    assert before.tolist() == tok.encode("Yahweh said") + tok.encode("\n\n")
    _write_corpus(tmp_path, "Yahweh said, the cat sat")  # rebuilt differently: a new manifest
    after = tokenize_corpus(tmp_path, tok)[0]["bible"]
    assert after.tolist() == tok.encode("Yahweh said, the cat sat") + tok.encode("\n\n")
    other = train_tokenizer(["Yahweh said, the cat sat"] * 20, 280)
    assert tokenize_corpus(tmp_path, other)[0]["bible"].tolist() == other.encode(
        "Yahweh said, the cat sat"
    ) + (other.encode("\n\n"))
    assert len(list(tmp_path.glob("streams-*.npz"))) == 3  # one cache per corpus and tokenizer
