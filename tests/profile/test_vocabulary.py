"""Vocabularies find the same phrases with their first-word index as by trying every phrase."""

from __future__ import annotations

import re

from treadwise.profile import clean_text, load_coverage, load_tire_catalogue
from treadwise.profile.vocabulary import Vocabulary


def every_phrase(vocabulary: Vocabulary, text: str) -> list[tuple[str, str, int, int]]:
    """The reference: each phrase's own pattern tried on the text, best match first."""
    cleaned, found = clean_text(text), []
    for phrase, name in vocabulary._phrases.items():
        pattern = rf"(?<![0-9a-z]){re.escape(phrase)}(?:e?s)?(?![0-9a-z])"
        if match := re.search(pattern, cleaned):
            found.append((-len(phrase), match.start(), match.end(), name, phrase))
    return [(name, phrase, start, end) for _, start, end, name, phrase in sorted(found)]


def test_plurals_and_phrases_of_several_words_are_found_like_before():
    vocabularies = (load_tire_catalogue().vehicles, load_tire_catalogue().usages,
                    load_coverage().places, load_coverage().services)
    texts = ["I drive two pickups in the snow near Fort Worth", "flat tires in OKC?",
             "Tesla Model 3, mostly highway trips", "sensors installation in waco",
             "do you do wheel balancing and rotations for SUVs", "boxes of trucks"]
    for vocabulary in vocabularies:
        for phrase in vocabulary.phrases:
            texts += [f"my {phrase}s please", f"{phrase}es", phrase]
    for vocabulary in vocabularies:
        for text in texts:
            assert vocabulary.find_spans(text) == every_phrase(vocabulary, text), text
    catalogue = load_tire_catalogue()
    assert catalogue.vehicles.normalise("Pickups") == catalogue.vehicles.normalise("pickup")
    assert catalogue.vehicles.normalise("a pickup") is None
