"""The profile's YAML files as pydantic models, read again when a file changes on disk."""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from treadwise.datafiles import Text, read_yaml_mapping, validate_file
from treadwise.profile.entities import (
    BusinessProfile,
    City,
    Coverage,
    Section,
    TireCatalogue,
    TireModel,
)
from treadwise.profile.vocabulary import Vocabulary

PROFILE_DIR = Path(__file__).resolve().parent
BUSINESS_PROFILE_PATH = PROFILE_DIR / "business.yaml"
TIRE_CATALOGUE_PATH = PROFILE_DIR / "tires.yaml"
COVERAGE_PATH = PROFILE_DIR / "coverage.yaml"
RECHECK_S = 1.0
_checked: dict[Path | str, tuple[Path, int, float]] = {}


class ProfileError(ValueError):
    """A profile file is missing or does not have the expected shape."""


def _strings(value: Any) -> Any:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("must be a list of strings")
    return tuple(value)


def _mapping(value: Any) -> Any:
    if not isinstance(value, dict) or not value:
        raise ValueError("must be a non-empty mapping")
    return value


Strings = Annotated[tuple[str, ...], BeforeValidator(_strings)]
Table = BeforeValidator(_mapping)


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _SectionFile(_Shape):
    title: Text
    text: Text
    facts: Strings = ()
    keywords: Strings = ()


class _BusinessFile(_Shape):
    name: Text
    tagline: str | None = None
    sections: Annotated[dict[str, _SectionFile], Table]


class _TireFile(_Shape):
    model: Text
    sizes: Text
    reason: Text


class _CatalogueFile(_Shape):
    vehicle_types: Annotated[dict[str, Strings], Table]
    usages: Annotated[dict[str, Strings], Table]
    related_usages: Annotated[dict[str, Strings], Table] = {"mixed": ()}
    not_offered: dict[str, Annotated[dict[str, Text], Table]] = {}
    recommendations: Annotated[dict[str, Annotated[dict[str, Annotated[
        list[_TireFile], Field(min_length=1, max_length=3)]], Table]], Table]

    @model_validator(mode="after")
    def _known_names(self) -> _CatalogueFile:
        for vehicle, by_usage in self.recommendations.items():
            for usage in by_usage:
                if vehicle not in self.vehicle_types or usage not in self.usages:
                    raise ValueError(f"recommendations.{vehicle}.{usage} names an unknown "
                                     "vehicle type or usage")
        return self


class _PlaceFile(_Shape):
    region: str = ""
    lat: float
    lon: float
    aliases: Strings = ()


class _CityFile(_PlaceFile):
    services: dict[str, Text] = {}


class _ServiceFile(_Shape):
    label: Text
    synonyms: Strings = ()


class _CoverageFile(_Shape):
    services: Annotated[dict[str, _ServiceFile], Table]
    cities: Annotated[dict[str, _CityFile], Table]
    other_places: dict[str, _PlaceFile] = {}

    @model_validator(mode="after")
    def _known_services(self) -> _CoverageFile:
        for name, city in self.cities.items():
            if unknown := set(city.services) - set(self.services):
                raise ValueError(f"cities.{name}.services names unknown services: "
                                 f"{sorted(unknown)}")
        return self


def _read(path: Path, shape: type[_Shape]) -> Any:
    return validate_file(shape, read_yaml_mapping(path, ProfileError, "profile file"), path,
                         ProfileError)


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
    found: _BusinessFile = _read(path, _BusinessFile)
    sections = {key: Section(key, s.title, s.text, s.facts, s.keywords)
                for key, s in found.sections.items()}
    return BusinessProfile(found.name, (found.tagline or "").strip(), sections)


def load_tire_catalogue(path: Path | str | None = None) -> TireCatalogue:
    """The tire catalogue at `path` (default: the packaged tires.yaml), cached."""
    return _tire_catalogue(*_cache_key(path, TIRE_CATALOGUE_PATH))


@lru_cache(maxsize=16)
def _tire_catalogue(path: Path, _mtime: int) -> TireCatalogue:
    found: _CatalogueFile = _read(path, _CatalogueFile)
    recommendations = {
        (vehicle, usage): tuple(TireModel(t.model, t.sizes, t.reason) for t in tires)
        for vehicle, by_usage in found.recommendations.items()
        for usage, tires in by_usage.items()
    }
    not_offered = {(vehicle, usage): note for vehicle, notes in found.not_offered.items()
                   for usage, note in notes.items()}
    return TireCatalogue(Vocabulary(found.vehicle_types), Vocabulary(found.usages),
                         recommendations, dict(found.related_usages), not_offered)


def load_coverage(path: Path | str | None = None) -> Coverage:
    """The service coverage table at `path` (default: the packaged coverage.yaml), cached."""
    return _coverage(*_cache_key(path, COVERAGE_PATH))


@lru_cache(maxsize=16)
def _coverage(path: Path, _mtime: int) -> Coverage:
    found: _CoverageFile = _read(path, _CoverageFile)
    labels = {key: service.label for key, service in found.services.items()}
    synonyms = {key: (service.label, *service.synonyms) for key, service in found.services.items()}
    cities = {name: City(name, c.region, c.lat, c.lon, dict(c.services))
              for name, c in found.cities.items()}
    elsewhere = {name: City(name, p.region, p.lat, p.lon, {})
                 for name, p in found.other_places.items()}
    return Coverage(
        Vocabulary(synonyms), labels, cities,
        Vocabulary({name: c.aliases for name, c in found.cities.items()}), elsewhere,
        Vocabulary({name: p.aliases for name, p in found.other_places.items()}))
