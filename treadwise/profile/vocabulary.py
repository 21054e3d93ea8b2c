"""Phrases matched as whole words in free text: the form every vocabulary of the profile takes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping


def clean_text(text: str) -> str:
    """Lower-case words separated by single spaces: the form every phrase is matched in."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split())


class Vocabulary:
    """Canonical names and the phrases that mean them, matched as whole words in free text."""

    def __init__(self, synonyms: Mapping[str, Iterable[str]]):
        self.names: list[str] = list(synonyms)
        self._phrases: dict[str, str] = {}
        for name, phrases in synonyms.items():
            for phrase in (name, *phrases):
                if cleaned := clean_text(phrase):
                    self._phrases.setdefault(cleaned, name)
        # A trailing "s"/"es" is accepted so "trucks" and "sensors" match without listing plurals.
        self._patterns = [
            (phrase, re.compile(rf"(?<![0-9a-z]){re.escape(phrase)}(?:e?s)?(?![0-9a-z])"))
            for phrase in self._phrases
        ]
        # Phrases by their first word: a text is searched only for the phrases whose first
        # word it has, not for all of them (hundreds of patterns per lookup otherwise).
        self._by_first: dict[str, list[int]] = {}
        for index, phrase in enumerate(self._phrases):
            self._by_first.setdefault(phrase.split(" ", 1)[0], []).append(index)

    def _candidates(self, cleaned: str) -> list[tuple[str, re.Pattern[str]]]:
        """The patterns that can match the cleaned text, in the vocabulary's order: a phrase
        starts at a word, which is its first word (or, alone, that word plus "s" or "es")."""
        keys = set()
        for word in set(cleaned.split(" ")):
            keys.add(word)
            if word.endswith("s"):
                keys.update((word[:-1], word[:-2]) if word.endswith("es") else (word[:-1],))
        indices = sorted(i for key in keys for i in self._by_first.get(key, ()))
        return [self._patterns[i] for i in indices]

    @property
    def phrases(self) -> tuple[str, ...]:
        """Every phrase known, cleaned (lower case, single spaces)."""
        return tuple(self._phrases)

    def normalise(self, text: str) -> str | None:
        """The canonical name when the whole text is one of the phrases, else None."""
        cleaned = clean_text(text)
        for phrase, pattern in self._candidates(cleaned):
            if pattern.fullmatch(cleaned):
                return self._phrases[phrase]
        return None

    def find(self, text: str) -> str | None:
        """The canonical name of the longest phrase found in the text (earliest on a tie)."""
        best = self.find_spans(text)
        return best[0][0] if best else None

    def find_spans(self, text: str) -> list[tuple[str, str, int, int]]:
        """(name, phrase, start, end) of every phrase in the cleaned text, best match first."""
        cleaned = clean_text(text)
        found = []
        for phrase, pattern in self._candidates(cleaned):
            if match := pattern.search(cleaned):
                found.append((-len(phrase), match.start(), match.end(), self._phrases[phrase],
                              phrase))
        return [(name, phrase, start, end) for _, start, end, name, phrase in sorted(found)]
