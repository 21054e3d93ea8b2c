"""The folds (treadwise/privacy/normalise.py) give, for any text, exactly what folding it one
grapheme cluster at a time gives: the text and the map back to the original."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treadwise.privacy.normalise import (
    Folded,
    _clusters,
    _invisible,
    fold,
    latin_lookalike,
)

# ASCII, combining marks, look-alikes, ligatures, invisibles, wide forms, sharp s, Hangul jamo.
PIECES = st.sampled_from(list("aZ9 @.-\n") + ["\u0301", "\u0308", "\u0327", "о", "Ꭺ", "ﬁ",
                                             "\u200b", "\u00ad", "\ufe0f", "\u034f", "４",
                                             "ß", "İ", "ᄀ", "ᅡ", "∫", "≈", "é", "\U0001f600"])


def one_cluster_at_a_time(text: str, case: bool, lookalikes: bool) -> Folded:
    """The fold's definition: every cluster through NFKC, invisibles out, case and look-alike
    letters folded, each output character mapped to its cluster."""
    if text.isascii():
        return Folded(text.casefold() if case else text, text)
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    for start, end in _clusters(text):
        for char in unicodedata.normalize("NFKC", text[start:end]):
            if _invisible(char):
                continue
            for piece in char.casefold() if case else char:
                mapped = latin_lookalike(piece) if lookalikes else piece
                out.append(mapped)
                spans.extend([(start, end)] * len(mapped))
    return Folded("".join(out), text, tuple(spans))


@pytest.mark.thorough
@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join), st.booleans(), st.booleans())
def test_any_text_folds_as_one_cluster_at_a_time(text: str, case: bool, lookalikes: bool):
    assert fold(text, case=case, lookalikes=lookalikes) == \
        one_cluster_at_a_time(text, case, lookalikes)


def test_a_combining_mark_after_ascii_composes_with_it_and_maps_back_to_both():
    folded = fold("Cafe\u0301 ∫", case=True)
    assert folded.text == "café ∫"
    assert folded.original(3, 4) == (3, 5)  # "é" came from "e" and its accent
    assert folded.original(0, 3) == (0, 3)
    assert fold("\u0301abc").text == "\u0301abc"  # a mark with nothing before it stays
