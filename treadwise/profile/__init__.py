"""Business profile: TreadWise's profile sections, tire catalogue and service coverage from YAML."""

from __future__ import annotations

import re

from treadwise.profile.entities import (
    BusinessProfile,
    City,
    Coverage,
    Section,
    TireCatalogue,
    TireModel,
)
from treadwise.profile.profile_files import (
    BUSINESS_PROFILE_PATH,
    COVERAGE_PATH,
    PROFILE_DIR,
    TIRE_CATALOGUE_PATH,
    ProfileError,
    load_business_profile,
    load_coverage,
    load_tire_catalogue,
)
from treadwise.profile.vocabulary import Vocabulary, clean_text

__all__ = ["BUSINESS_PROFILE_PATH", "COVERAGE_PATH", "PROFILE_DIR", "TIRE_CATALOGUE_PATH",
           "BusinessProfile", "City", "Coverage", "ProfileError", "Section", "TireCatalogue",
           "TireModel", "Vocabulary", "business_phrases", "clean_text", "find_city",
           "find_place", "find_service", "find_topic", "find_usage", "find_vehicle",
           "known_cities", "known_services", "known_usages", "known_vehicle_types",
           "load_business_profile", "load_coverage", "load_tire_catalogue", "normalise_city",
           "normalise_service", "normalise_usage", "normalise_vehicle"]

def known_vehicle_types() -> list[str]:
    return list(load_tire_catalogue().vehicles.names)


def known_usages() -> list[str]:
    return list(load_tire_catalogue().usages.names)


def known_cities() -> list[str]:
    return list(load_coverage().cities)


def known_services() -> list[str]:
    return list(load_coverage().labels)


def normalise_vehicle(text: str) -> str | None:
    """'pickup' -> 'truck'; None unless the whole text names a vehicle type."""
    return load_tire_catalogue().vehicles.normalise(text)


def normalise_usage(text: str) -> str | None:
    """'snow' -> 'winter'; None unless the whole text names a usage."""
    return load_tire_catalogue().usages.normalise(text)


def normalise_city(text: str) -> str | None:
    """'atx' -> 'Austin'; None unless the whole text names a served city."""
    return load_coverage().places.normalise(text)


def normalise_service(text: str) -> str | None:
    """'flat tire' -> 'repair'; None unless the whole text names a service."""
    return load_coverage().services.normalise(text)


def find_vehicle(text: str) -> str | None:
    """The vehicle type mentioned in a sentence: 'I drive a Tesla' -> 'EV'."""
    return load_tire_catalogue().vehicles.find(text)


def find_usage(text: str) -> str | None:
    """The usage mentioned in a sentence: 'mostly in the snow' -> 'winter'."""
    # Place names are blanked first so "Oklahoma City" is a place, not city driving.
    text = clean_text(text)
    coverage = load_coverage()
    for vocabulary in (coverage.places, coverage.other_places):
        for _, phrase, *_ in vocabulary.find_spans(text):
            text = re.sub(rf"(?<![0-9a-z]){re.escape(phrase)}(?![0-9a-z])", " ", text)
    return load_tire_catalogue().usages.find(text)


def find_city(text: str) -> str | None:
    """The served city mentioned in a sentence: 'do you come to Fort Worth?' -> 'Fort Worth'."""
    return load_coverage().places.find(text)


def find_place(text: str) -> str | None:
    """A place we do not serve yet, mentioned in a sentence: 'in anchorage?' -> 'Anchorage'."""
    return load_coverage().other_places.find(text)


def find_service(text: str) -> str | None:
    """The service mentioned in a sentence: 'I have a flat' -> 'repair'."""
    return load_coverage().services.find(text)


def business_phrases() -> tuple[str, ...]:
    """Every phrase of the business vocabulary (vehicles, usages, places, services, profile
    topics), cleaned: the words that tell a question is about the business."""
    profile, catalogue, coverage = load_business_profile(), load_tire_catalogue(), load_coverage()
    key = (id(profile), id(catalogue), id(coverage))
    if _phrases_of[0] != key:
        topics = Vocabulary({s.key: (s.title, *s.keywords) for s in profile.sections.values()})
        found = {phrase for vocabulary in (catalogue.vehicles, catalogue.usages, coverage.services,
                                           coverage.places, coverage.other_places, topics)
                 for phrase in vocabulary.phrases}
        # The objects are kept with their ids, so an id cannot be reused while it is cached.
        _phrases_of[:] = [key, tuple(sorted(found)), (profile, catalogue, coverage)]
    return _phrases_of[1]


_phrases_of: list = [None, (), None]


def find_topic(text: str) -> str | None:
    """The business-profile section key a question is about: 'opening hours' -> 'hours'."""
    section = load_business_profile().find_section(text)
    return section.key if section else None
