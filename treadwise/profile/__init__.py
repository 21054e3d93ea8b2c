"""Business profile: TreadWise's profile sections, tire catalogue and service coverage from YAML."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from treadwise.datafiles import read_yaml_mapping
from treadwise.profile.vocabulary import Vocabulary, clean_text

PROFILE_DIR = Path(__file__).resolve().parent
BUSINESS_PROFILE_PATH = PROFILE_DIR / "business.yaml"
TIRE_CATALOGUE_PATH = PROFILE_DIR / "tires.yaml"
COVERAGE_PATH = PROFILE_DIR / "coverage.yaml"
RECHECK_S = 1.0
_checked: dict[Path | str, tuple[Path, int, float]] = {}


class ProfileError(ValueError):
    """A profile file is missing or does not have the expected shape."""


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


def _read_yaml(path: Path) -> dict:
    return read_yaml_mapping(path, ProfileError, "profile file")


def _strings(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ProfileError(f"{where} must be a list of strings")
    return tuple(value)


def _mapping(value: object, where: str) -> dict:
    if not isinstance(value, dict) or not value:
        raise ProfileError(f"{where} must be a non-empty mapping")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(f"{where} must be a non-empty string")
    return value.strip()


def _cache_key(path: Path | str | None, default: Path) -> tuple[Path, int]:
    """The file and its modification time: an edited file is read again, at most a second
    later. Every lookup of the offline model comes here, so the disk is asked once a second."""
    target = path or default
    now = time.monotonic()
    known = _checked.get(target)
    if known is not None and now - known[2] < RECHECK_S:
        return known[0], known[1]
    resolved = Path(target).resolve()
    try:
        key = resolved, resolved.stat().st_mtime_ns
    except OSError as exc:
        raise ProfileError(f"cannot read {resolved}: {exc.strerror or exc}") from exc
    if len(_checked) > 64:
        _checked.clear()
    _checked[target] = (*key, now)
    return key


def load_business_profile(path: Path | str | None = None) -> BusinessProfile:
    """The business profile at `path` (default: the packaged business.yaml), cached."""
    return _business_profile(*_cache_key(path, BUSINESS_PROFILE_PATH))


@lru_cache(maxsize=16)
def _business_profile(path: Path, _mtime: int) -> BusinessProfile:
    data = _read_yaml(path)
    sections = {}
    for key, body in _mapping(data.get("sections"), f"{path}: sections").items():
        where = f"{path}: sections.{key}"
        body = _mapping(body, where)
        sections[str(key)] = Section(
            key=str(key),
            title=_text(body.get("title"), f"{where}.title"),
            text=_text(body.get("text"), f"{where}.text"),
            facts=_strings(body.get("facts"), f"{where}.facts"),
            keywords=_strings(body.get("keywords"), f"{where}.keywords"),
        )
    return BusinessProfile(
        name=_text(data.get("name"), f"{path}: name"),
        tagline=str(data.get("tagline") or "").strip(),
        sections=sections,
    )


def load_tire_catalogue(path: Path | str | None = None) -> TireCatalogue:
    """The tire catalogue at `path` (default: the packaged tires.yaml), cached."""
    return _tire_catalogue(*_cache_key(path, TIRE_CATALOGUE_PATH))


@lru_cache(maxsize=16)
def _tire_catalogue(path: Path, _mtime: int) -> TireCatalogue:
    data = _read_yaml(path)
    vehicles = _synonyms(data.get("vehicle_types"), f"{path}: vehicle_types")
    usages = _synonyms(data.get("usages"), f"{path}: usages")
    recommendations = {}
    table = _mapping(data.get("recommendations"), f"{path}: recommendations")
    for vehicle, by_usage in table.items():
        for usage, tires in _mapping(by_usage, f"{path}: recommendations.{vehicle}").items():
            where = f"{path}: recommendations.{vehicle}.{usage}"
            if vehicle not in vehicles or usage not in usages:
                raise ProfileError(f"{where} names an unknown vehicle type or usage")
            recommendations[(vehicle, usage)] = _tires(tires, where)
    not_offered = {
        (vehicle, usage): _text(note, f"{path}: not_offered.{vehicle}.{usage}")
        for vehicle, notes in (data.get("not_offered") or {}).items()
        for usage, note in _mapping(notes, f"{path}: not_offered.{vehicle}").items()
    }
    related = _synonyms(data.get("related_usages") or {"mixed": []}, f"{path}: related_usages")
    return TireCatalogue(Vocabulary(vehicles), Vocabulary(usages), recommendations, related,
                         not_offered)


def _synonyms(value: object, where: str) -> dict[str, tuple[str, ...]]:
    return {str(k): _strings(v, f"{where}.{k}") for k, v in _mapping(value, where).items()}


def _tires(value: object, where: str) -> tuple[TireModel, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        raise ProfileError(f"{where} must list 1 to 3 tires")
    return tuple(
        TireModel(**{field: _text(_mapping(tire, where).get(field), f"{where}.{field}")
                     for field in ("model", "sizes", "reason")})
        for tire in value
    )


def load_coverage(path: Path | str | None = None) -> Coverage:
    """The service coverage table at `path` (default: the packaged coverage.yaml), cached."""
    return _coverage(*_cache_key(path, COVERAGE_PATH))


@lru_cache(maxsize=16)
def _coverage(path: Path, _mtime: int) -> Coverage:
    data = _read_yaml(path)
    synonyms, labels = {}, {}
    for key, body in _mapping(data.get("services"), f"{path}: services").items():
        body = _mapping(body, f"{path}: services.{key}")
        labels[str(key)] = _text(body.get("label"), f"{path}: services.{key}.label")
        more = _strings(body.get("synonyms"), f"{path}: services.{key}.synonyms")
        synonyms[str(key)] = (labels[str(key)], *more)
    cities, aliases = {}, {}
    for name, body in _mapping(data.get("cities"), f"{path}: cities").items():
        where = f"{path}: cities.{name}"
        body = _mapping(body, where)
        offered = {str(k): _text(v, f"{where}.services.{k}")
                   for k, v in (body.get("services") or {}).items()}
        if unknown := set(offered) - set(labels):
            raise ProfileError(f"{where}.services names unknown services: {sorted(unknown)}")
        try:
            lat, lon = float(body["lat"]), float(body["lon"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ProfileError(f"{where} needs numeric lat and lon") from exc
        cities[str(name)] = City(str(name), str(body.get("region", "")), lat, lon, offered)
        aliases[str(name)] = _strings(body.get("aliases"), f"{where}.aliases")
    elsewhere, other_aliases = _places(data.get("other_places") or {}, f"{path}: other_places")
    return Coverage(Vocabulary(synonyms), labels, cities, Vocabulary(aliases), elsewhere,
                    Vocabulary(other_aliases))


def _places(table: object, where: str) -> tuple[dict[str, City], dict[str, tuple[str, ...]]]:
    if not isinstance(table, dict):
        raise ProfileError(f"{where} must be a mapping of place names")
    places, aliases = {}, {}
    for name, body in table.items():
        body = _mapping(body, f"{where}.{name}")
        try:
            lat, lon = float(body["lat"]), float(body["lon"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ProfileError(f"{where}.{name} needs numeric lat and lon") from exc
        places[str(name)] = City(str(name), str(body.get("region", "")), lat, lon, {})
        aliases[str(name)] = _strings(body.get("aliases"), f"{where}.{name}.aliases")
    return places, aliases


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
