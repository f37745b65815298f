"""Tokenizers in Hugging Face `tokenizers` format, with display strings that show what a token is.

A token's display string makes invisible things visible: a space becomes `·`, a newline `⏎`, a tab
`⇥`, other control characters their Unicode control pictures; a byte that is only part of a UTF-8
character (byte-level BPE, or `<0xE2>` byte fallback) shows as `<E2>`. Never a raw `Ġ` or `▁`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
UTF8_MAX_BYTES = 4  # the longest UTF-8 character: a run of byte tokens longer than this never completes one


@dataclass(frozen=True)
class CharGroup:
    """Tokens start..end-1 (end exclusive) that are each only part of a character and together spell
    `text`: an emoji split into its four UTF-8 bytes, say. `pieces` are the tokens' own display strings."""

    start: int
    end: int
    text: str
    pieces: list[str]


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's bytes_to_unicode: the printable stand-in character -> the byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


def make_visible(text: str) -> str:
    out = []
    for ch in text:
        if ch == " ":
            out.append("·")
        elif ch == "\n":
            out.append("⏎")
        elif ch == "\t":
            out.append("⇥")
        elif ord(ch) < 0x20:
            out.append(chr(0x2400 + ord(ch)))  # Unicode control pictures
        elif ch == "\x7f":
            out.append("␡")
        else:
            out.append(ch)
    return "".join(out)


def bytes_to_display(raw: bytes) -> str:
    try:
        return make_visible(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "".join(f"<{b:02X}>" for b in raw)


class Tokenizer:
    def __init__(self, hf: HFTokenizer) -> None:
        self.hf = hf
        spec = json.loads(hf.to_str())
        self.byte_level = "ByteLevel" in json.dumps(spec.get("decoder") or {})
        self.vocab_size = hf.get_vocab_size(with_added_tokens=True)
        self._display_cache: dict[int, str] = {}

    @classmethod
    def from_file(cls, path: Path) -> Tokenizer:
        return cls(HFTokenizer.from_file(str(path)))

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self.hf.decode(ids, skip_special_tokens=False)

    def token_bytes(self, token_id: int) -> bytes:
        piece = self.hf.id_to_token(token_id)
        if piece is None:
            return b""
        if self.byte_level:
            table = byte_decoder()
            if all(c in table for c in piece):
                return bytes(table[c] for c in piece)
            return piece.encode("utf-8")  # an added/special token
        m = _BYTE_FALLBACK.match(piece)
        if m:
            return bytes([int(m.group(1), 16)])
        return piece.replace("▁", " ").encode("utf-8")

    def display(self, token_id: int) -> str:
        s = self._display_cache.get(token_id)
        if s is None:
            s = bytes_to_display(self.token_bytes(token_id))
            self._display_cache[token_id] = s
        return s

    def displays(self, ids: list[int]) -> list[str]:
        return [self.display(i) for i in ids]

    def char_groups(self, ids: list[int]) -> list[CharGroup]:
        """Runs of tokens whose bytes only decode together (byte-level BPE splits "🙂" into 4 tokens),
        with the text they spell, so a page can show the character instead of <F0><9F><99><82>."""
        raw = [self.token_bytes(i) for i in ids]
        groups = []
        i = 0
        while i < len(ids):
            end = _completing_run(raw, i)
            if end is None:
                i += 1
                continue
            text = make_visible(b"".join(raw[i:end]).decode("utf-8"))
            groups.append(CharGroup(i, end, text, [self.display(t) for t in ids[i:end]]))
            i = end
        return groups


def _completing_run(raw: list[bytes], start: int) -> int | None:
    """The end of the shortest run raw[start:end] (2+ tokens, the first not text on its own) that
    decodes as UTF-8; None if there is none within a character's length."""
    if _decodes(raw[start]):
        return None
    joined = raw[start]
    for end in range(start + 1, min(len(raw), start + UTF8_MAX_BYTES) + 1):
        if end > start + 1:
            joined += raw[end - 1]
            if _decodes(joined):
                return end
    return None


def _decodes(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
