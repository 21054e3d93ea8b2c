"""Persona and profile files are validated by pydantic models: one line naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from treadwise.personas import get_persona, load_personas
from treadwise.profile import ProfileError, load_coverage, load_tire_catalogue

TIRE = "{model: M, sizes: '16', reason: R}"
CATALOGUE = ("vehicle_types: {sedan: [car]}\nusages: {city: [town]}\n"
             "recommendations:\n  sedan:\n    city: [%s]\n")


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_a_persona_folder_is_passed_explicitly(tmp_path: Path) -> None:
    write(tmp_path, "coach.yaml", "name: Coach\ndescription: Brisk.\nstyle: Short.\n"
                                  "voice: {greeting: Hi there}\n")
    coach = get_persona("coach", tmp_path)
    assert coach.phrases("greeting") == ["Hi there"] and coach.order == 100
    assert "coach" not in load_personas()


@pytest.mark.parametrize(("text", "why"), [
    ("name: X\ndescription: D\n", r"x\.yaml: style: is required"),
    ("name: X\ndescription: D\nstyle: '  '\n", "style: must be a non-empty string"),
    ("name: X\ndescription: D\nstyle: S\nordre: 3\n", "unknown field 'ordre'"),
    ("name: X\ndescription: D\nstyle: S\norder: soon\n", "order: Input should be a valid integer"),
])
def test_a_malformed_persona_file_is_one_clear_line(tmp_path: Path, text: str, why: str) -> None:
    write(tmp_path, "x.yaml", text)
    with pytest.raises(ValueError, match=why) as raised:
        load_personas(tmp_path)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(("text", "why"), [
    (CATALOGUE % ", ".join([TIRE] * 4), "recommendations.sedan.city: List should have at most 3"),
    (CATALOGUE.replace("sedan:\n    city", "sedan:\n    snow") % TIRE,
     "recommendations.sedan.snow names an unknown vehicle type or usage"),
    (CATALOGUE % "{model: M, sizes: '16'}", r"recommendations.sedan.city\[0\].reason: is required"),
    ("vehicle_types: []\n", "vehicle_types: must be a non-empty mapping"),
])
def test_a_malformed_tire_catalogue_is_one_clear_line(tmp_path: Path, text: str, why: str) -> None:
    with pytest.raises(ProfileError, match=why):
        load_tire_catalogue(write(tmp_path, "tires.yaml", text))


def test_a_good_tire_catalogue_loads(tmp_path: Path) -> None:
    catalogue = load_tire_catalogue(write(tmp_path, "tires.yaml", CATALOGUE % TIRE))
    assert catalogue.recommend("sedan", "city")[0].model == "M"
    assert catalogue.vehicles.normalise("car") == "sedan"


@pytest.mark.parametrize(("text", "why"), [
    ("services: {repair: {label: repair}}\ncities: {Austin: {lat: north, lon: 1}}\n",
     "cities.Austin.lat: Input should be a valid number"),
    ("services: {repair: {label: repair}}\n"
     "cities: {Austin: {lat: 1, lon: 1, services: {wash: today}}}\n",
     r"cities.Austin.services names unknown services: \['wash'\]"),
])
def test_a_malformed_coverage_file_is_one_clear_line(tmp_path: Path, text: str, why: str) -> None:
    with pytest.raises(ProfileError, match=why):
        load_coverage(write(tmp_path, "coverage.yaml", text))
