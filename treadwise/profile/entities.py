"""The business profile as the code uses it: sections, tire catalogue, service coverage."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

from treadwise.profile.vocabulary import Vocabulary, clean_text


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    text: str
    facts: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()

    def render(self) -> str:
        """Title, paragraph and facts as plain text."""
        lines = [self.title, self.text, *(f"- {fact}" for fact in self.facts)]
        return "\n".join(lines)


@dataclass(frozen=True)
class BusinessProfile:
    name: str
    tagline: str
    sections: dict[str, Section]

    def topics(self) -> list[str]:
        return [section.title for section in self.sections.values()]

    def find_section(self, text: str) -> Section | None:
        """The section a free-text question is about: most words matched, then longest phrase."""
        cleaned = clean_text(text)
        words = [match.span() for match in re.finditer(r"\S+", cleaned)]
        best: tuple[int, int] = (0, 0)
        chosen = None
        for section in self.sections.values():
            spans = _section_phrases(section).find_spans(cleaned)
            covered = sum(any(s <= start and end <= e for *_, s, e in spans)
                          for start, end in words)
            score = (covered, max((len(phrase) for _, phrase, *_ in spans), default=0))
            if score > best:
                best, chosen = score, section
        return chosen


@lru_cache(maxsize=256)
def _section_phrases(section: Section) -> Vocabulary:
    return Vocabulary({section.key: (section.title, *section.keywords)})


@dataclass(frozen=True)
class TireModel:
    model: str
    sizes: str
    reason: str


@dataclass(frozen=True)
class TireCatalogue:
    vehicles: Vocabulary
    usages: Vocabulary
    recommendations: dict[tuple[str, str], tuple[TireModel, ...]]
    related_usages: dict[str, tuple[str, ...]]
    not_offered: dict[tuple[str, str], str]

    def recommend(self, vehicle: str, usage: str) -> tuple[TireModel, ...]:
        return self.recommendations.get((vehicle, usage), ())

    def closest(self, vehicle: str, usage: str) -> tuple[str, tuple[TireModel, ...]] | None:
        """The usage nearest to `usage` that we sell tires for on this vehicle, with the tires."""
        for other in (usage, *self.related_usages.get(usage, ()), "mixed", *self.usages.names):
            if tires := self.recommend(vehicle, other):
                return other, tires
        return None


@dataclass(frozen=True)
class City:
    name: str
    region: str
    lat: float
    lon: float
    services: dict[str, str]

    def miles_to(self, other: City) -> float:
        """Great-circle distance in miles."""
        lat1, lon1, lat2, lon2 = map(math.radians, (self.lat, self.lon, other.lat, other.lon))
        h = (math.sin((lat2 - lat1) / 2) ** 2
             + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2)
        return 2 * 3958.8 * math.asin(math.sqrt(h))


@dataclass(frozen=True)
class Coverage:
    services: Vocabulary
    labels: dict[str, str]
    cities: dict[str, City]
    places: Vocabulary
    # Places we do not serve yet, known by position so the nearest served cities can be named.
    elsewhere: dict[str, City] = field(default_factory=dict)
    other_places: Vocabulary = field(default_factory=lambda: Vocabulary({}))

    def nearest_offering(self, city: str, service: str) -> tuple[City, float] | None:
        """The closest other city offering the service, with its distance in miles."""
        nearest = self.nearest_served(self.cities[city], service, count=1)
        return nearest[0] if nearest else None

    def nearest_served(self, place: City, service: str | None = None,
                       count: int = 2) -> list[tuple[City, float]]:
        """The `count` served cities closest to a place (offering `service` when given)."""
        options = sorted((place.miles_to(other), other.name) for other in self.cities.values()
                         if other.name != place.name
                         and (service is None or service in other.services))
        return [(self.cities[name], miles) for miles, name in options[:count]]
