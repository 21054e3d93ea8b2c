"""Normalisation before every privacy decision: two folds of a text, each mapped back to it.

A decision is never taken on the raw text, where a Cyrillic "о" or a zero-width space hides a
word from a pattern. Two folds, one per kind of decision:

- the detector fold (cards, IDs, keys): Unicode NFKC, format characters (zero-width spaces and
  joiners, bidi controls, the soft hyphen, the byte-order mark) and variation selectors removed,
  case folded; digits stay digits. Keys are case-sensitive by definition (`AKIA...`), so the
  same fold is also kept with case (`case=False`);
- the word fold (consent, refusal, withdrawal, erasure, and the labels of secrets): the same,
  plus every letter that only looks like a Latin one mapped to it with the Unicode confusables
  table (UTS #39) that `confusable_homoglyphs` ships; the vocabulary is folded the same way.

NFKC and case folding change lengths ("ﬁ" -> "fi", "ß" -> "ss"), so a fold keeps, for each of
its characters, the span of the original text it came from: what a detector finds in the fold
is removed from the original text at the matching place (`Folded.original`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Variation selectors and the combining grapheme joiner are invisible too.
_INVISIBLE = re.compile("[\u034f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# Runs of characters outside ASCII: only these need folding a cluster at a time.
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


@dataclass(frozen=True)
class Folded:
    """A folded text and, per folded character, the original span it stands for (None: the
    fold kept every character where it was)."""

    text: str
    source: str
    spans: tuple[tuple[int, int], ...] | None = None

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that the folded span [start, end) came from."""
        if self.spans is None:
            return start, end
        if start >= end:
            at = self.spans[start][0] if start < len(self.spans) else len(self.source)
            return at, at
        return self.spans[start][0], self.spans[end - 1][1]


def _invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf" or bool(_INVISIBLE.match(char))


@lru_cache(maxsize=4096)
def latin_lookalike(char: str) -> str:
    """The Latin letters `char` is confusable with (UTS #39), or `char` itself: "о" -> "o".
    Only letters map, and only to letters: a digit stays a digit."""
    if char.isascii() or not char.isalpha():
        return char
    from confusable_homoglyphs.confusables import confusables_data

    for glyph in confusables_data.get(char, ()):
        latin = glyph["c"].casefold()
        if latin.isascii() and latin.isalpha():
            return latin
    return char


def _clusters(text: str) -> list[tuple[int, int]]:
    """Spans of a starter and the combining marks after it (NFKC composes within them)."""
    spans, start = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or not unicodedata.combining(text[i]):
            spans.append((start, i))
            start = i
    return spans


def fold(text: str, *, case: bool = True, lookalikes: bool = False) -> Folded:
    """The text in NFKC, invisible characters removed, case folded (unless `case` is False),
    look-alike letters mapped to Latin with `lookalikes`; with the map back to `text`."""
    if text.isascii():
        # ASCII is its own NFKC and holds no invisible or look-alike letter: one fast path
        # for nearly every message, without a map.
        return Folded(text.casefold() if case else text, text)
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    # The ASCII between other characters goes the same fast way, a run at a time: an export
    # with one "∫" is otherwise folded a character at a time, all of it, at every turn.
    done = 0
    for match in _NOT_ASCII.finditer(text):
        start, end = match.span()
        if start > done and unicodedata.combining(text[start]):
            start -= 1  # the letter before a combining mark composes with it (NFKC)
        _fold_ascii(text, done, start, case, out, spans)
        for first, last in _clusters(text[start:end]):
            _fold_cluster(text, start + first, start + last, case, lookalikes, out, spans)
        done = end
    _fold_ascii(text, done, len(text), case, out, spans)
    return Folded("".join(out), text, tuple(spans))


def _fold_ascii(text: str, start: int, end: int, case: bool, out: list[str],
                spans: list[tuple[int, int]]) -> None:
    """ASCII characters fold to themselves (lower case with `case`), one for one."""
    piece = text[start:end]
    out.append(piece.casefold() if case else piece)
    spans.extend(zip(range(start, end), range(start + 1, end + 1), strict=True))


def _fold_cluster(text: str, start: int, end: int, case: bool, lookalikes: bool,
                  out: list[str], spans: list[tuple[int, int]]) -> None:
    for char in unicodedata.normalize("NFKC", text[start:end]):
        if _invisible(char):
            continue
        pieces = char.casefold() if case else char
        for piece in pieces:
            mapped = latin_lookalike(piece) if lookalikes else piece
            out.append(mapped)
            spans.extend([(start, end)] * len(mapped))


def for_detectors(text: str, *, case: bool = True) -> Folded:
    """The detector fold: NFKC, invisible characters removed, case folded; digits stay."""
    return fold(text, case=case)


def for_words(text: str) -> Folded:
    """The word fold: the detector fold plus look-alike letters mapped to Latin."""
    return fold(text, lookalikes=True)


def words(text: str) -> str:
    """The word fold's text alone (for deciding what a message means)."""
    return for_words(text).text


_ESCAPE = re.compile(r"\\.|\[[^\]]*\]")


def fold_pattern(pattern: str) -> str:
    """A regular expression fragment folded like the text it is matched against: the words in
    it, not its escapes (\\S must stay \\S) or character classes."""
    parts, last = [], 0
    for match in _ESCAPE.finditer(pattern):
        parts.append(words(pattern[last:match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(words(pattern[last:]))
    return "".join(parts)
