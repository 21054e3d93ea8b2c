"""Business tools and the profile/catalogue/coverage data they answer from."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from langchain_core.tools import ToolException

from treadwise import profile
from treadwise.profile import (
    ProfileError,
    load_business_profile,
    load_coverage,
    load_tire_catalogue,
)
from treadwise.tools import ToolContext, get_tools

BUSINESS_TOOLS = {"get_business_info", "get_tire_recommendation", "check_service_availability",
                  "record_customer_interest", "record_feedback", "delete_customer_data"}
SECTIONS = ["overview", "services", "mobile_installation", "smart_tread", "fleet", "recycling",
            "areas_served", "hours", "warranty", "tire_pressure", "maintenance", "punctures",
            "pricing", "contact"]
CATALOGUE = load_tire_catalogue()
COVERAGE = load_coverage()


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    return ToolContext(data_dir=tmp_path / "data")


@pytest.fixture
def tools(context: ToolContext) -> dict:
    return {tool.name: tool for tool in get_tools("business", context=context)}


def test_the_toolset_has_the_fixed_names_with_descriptions(tools: dict) -> None:
    assert set(tools) == BUSINESS_TOOLS
    for tool in tools.values():
        assert len(tool.description) > 60
        assert all(spec.get("description") for spec in tool.args.values())


def test_the_profile_has_every_section() -> None:
    business = load_business_profile()
    assert business.name == "TreadWise Tire Co."
    assert list(business.sections) == SECTIONS
    assert all(section.text and section.facts for section in business.sections.values())


@pytest.mark.parametrize("key", SECTIONS)
def test_each_section_is_found_by_its_key_and_its_title(tools: dict, key: str) -> None:
    section = load_business_profile().sections[key]
    for topic in (key, section.title):
        answer = tools["get_business_info"].invoke({"topic": topic})
        assert section.text in answer and section.facts[0] in answer


@pytest.mark.parametrize(
    ("topic", "key", "expected"),
    [
        ("opening hours", "hours", "Saturday"),
        ("What are your hours on Saturday?", "hours", "Sunday"),
        ("Smart Tread", "smart_tread", "$39 per wheel"),
        ("tell me about the sensors and the app", "smart_tread", "tread depth"),
        ("where do you operate", "areas_served", "Oklahoma City"),
        ("how much does it cost", "pricing", "price match"),
        ("do you recycle old tires?", "recycling", "crumb rubber"),
        ("services for my company's delivery fleet", "fleet", "account manager"),
        ("can you come to my driveway", "mobile_installation", "45-60 minutes"),
        ("what's your phone number", "contact", "(512) 555-0184"),
        ("is there a warranty", "warranty", "Road-hazard"),
    ],
)
def test_free_text_topics_find_the_right_section(tools, topic, key, expected) -> None:
    assert profile.find_topic(topic) == key
    assert expected.lower() in tools["get_business_info"].invoke({"topic": topic}).lower()


def test_an_unknown_topic_gives_the_overview_and_the_topics(tools: dict) -> None:
    answer = tools["get_business_info"].invoke({"topic": "quantum knitting"})
    assert "founded in Austin" in answer
    assert "Topics you can ask about:" in answer
    for title in load_business_profile().topics():
        assert title in answer


@pytest.mark.parametrize("pair", sorted(CATALOGUE.recommendations))
def test_every_catalogue_pair_gets_its_tires(tools: dict, pair: tuple[str, str]) -> None:
    vehicle, usage = pair
    answer = tools["get_tire_recommendation"].invoke({"vehicle_type": vehicle, "usage": usage})
    assert answer.startswith("Recommended tires for") and f"({usage} use)" in answer
    expected = CATALOGUE.recommendations[pair]
    assert 1 <= len(expected) <= 3
    for n, tire in enumerate(expected, 1):
        assert f"{n}. {tire.model} (sizes {tire.sizes}): {tire.reason}" in answer


@pytest.mark.parametrize(
    ("vehicle", "usage", "first_model"),
    [
        ("Tesla", "snow", "Voltra EV Winter"),
        ("electric car", "ice", "Voltra EV Winter"),
        ("pickup", "trailer", "Haulmaster LT Tow"),
        ("crossover", "everyday", "Summit HT"),
        ("hatchback", "sport", "Apex Sport RS"),
        ("car", "track days", "Apex Sport RS"),
        ("saloon", "all-season", "AllPath Everyday"),
        ("lorry", "motorway", "FleetPro Steer"),
        ("fleet", "city", "FleetPro Urban"),
        ("minivan", "snowy roads", "Glacier Grip Van"),
        ("4x4", "off road", "Summit AT Trail"),
    ],
)
def test_synonyms_reach_the_catalogue(tools, vehicle, usage, first_model) -> None:
    answer = tools["get_tire_recommendation"].invoke({"vehicle_type": vehicle, "usage": usage})
    assert f"1. {first_model} " in answer


@pytest.mark.parametrize(("vehicle", "usage", "closest"),
                         [("sedan", "towing", "highway"), ("EV", "off-road", "mixed")])
def test_an_unsold_pair_names_the_closest_alternative(tools, vehicle, usage, closest) -> None:
    assert (vehicle, usage) not in CATALOGUE.recommendations
    answer = tools["get_tire_recommendation"].invoke({"vehicle_type": vehicle, "usage": usage})
    assert "We don't sell a tire line" in answer
    assert "Closest alternative - " in answer and f"({closest} use)" in answer
    assert CATALOGUE.not_offered[(vehicle, usage)] in answer
    assert "Supported vehicle types: sedan, SUV, truck, van, commercial, EV." in answer


def test_an_unknown_vehicle_or_usage_lists_what_is_supported(tools: dict) -> None:
    recommend = tools["get_tire_recommendation"]
    answer = recommend.invoke({"vehicle_type": "hovercraft", "usage": "city"})
    assert "don't recognise the vehicle type 'hovercraft'" in answer
    assert "Usages: city, highway, mixed, off-road, winter, performance, towing." in answer
    answer = recommend.invoke({"vehicle_type": "SUV", "usage": "moon dust"})
    assert "don't recognise the usage 'moon dust'" in answer and "1. Summit HT" in answer


def test_a_huge_argument_is_not_echoed_back(tools: dict) -> None:
    answer = tools["get_tire_recommendation"].invoke({"vehicle_type": "z" * 5000, "usage": "x"})
    assert len(answer) < 400


@pytest.mark.parametrize(("city", "service"), sorted(
    (city.name, service) for city in COVERAGE.cities.values() for service in city.services))
def test_served_city_and_offered_service_says_yes(tools, city: str, service: str) -> None:
    answer = tools["check_service_availability"].invoke(
        {"location": city, "service_type": COVERAGE.labels[service]})
    lead_time = COVERAGE.cities[city].services[service]
    assert answer.startswith(f"Yes, {COVERAGE.labels[service]} is available in {city} (next slot")
    assert lead_time in answer


def test_the_availability_sentence_reads_naturally(tools: dict) -> None:
    answer = tools["check_service_availability"].invoke(
        {"location": "Austin, TX", "service_type": "tire change"})
    assert answer == "Yes, mobile installation is available in Austin (next slot same or next day)."
    answer = tools["check_service_availability"].invoke(
        {"location": "okc", "service_type": "flat tyre"})
    assert answer == "Yes, puncture repair is available in Oklahoma City (next slot in 1-2 days)."


def test_a_service_not_offered_there_names_the_nearest_city(tools: dict) -> None:
    answer = tools["check_service_availability"].invoke(
        {"location": "Waco", "service_type": "smart tread sensors"})
    assert answer.startswith("Sorry, Smart Tread™ setup is not available in Waco yet; nearest: ")
    nearest = re.search(r"nearest: ([A-Za-z ]+), about (\d+) miles", answer)
    assert nearest and "smart_tread_setup" in COVERAGE.cities[nearest.group(1)].services
    assert 50 < int(nearest.group(2)) < 150


def test_an_unserved_city_lists_the_served_ones(tools: dict) -> None:
    answer = tools["check_service_availability"].invoke(
        {"location": "Smallville", "service_type": "rotation"})
    assert answer.startswith("We don't serve 'Smallville' yet.")
    assert all(city in answer for city in profile.known_cities())


def test_a_known_unserved_place_names_the_nearest_served_cities(tools: dict) -> None:
    answer = tools["check_service_availability"].invoke(
        {"location": "do you come to boulder?", "service_type": "tire rotation"})
    assert answer.startswith("We don't serve Boulder (Colorado) yet. The nearest cities we "
                             "serve for tire rotation: Denver (about 24 miles away) and ")
    assert all(city in answer for city in profile.known_cities())
    anchorage = tools["check_service_availability"].invoke(
        {"location": "Anchorage", "service_type": "mobile installation"})
    assert "Denver (about 2,395 miles away)" in anchorage


def test_any_service_lists_what_a_city_offers(tools: dict) -> None:
    answer = tools["check_service_availability"].invoke({"location": "Tucson",
                                                         "service_type": "any"})
    assert answer == ("Yes, we serve Tucson: mobile installation (next slot in 3-5 days), tire "
                      "rotation (next slot in 3-5 days), puncture repair (next slot in 1-2 days).")


def test_an_unknown_service_lists_the_services(tools: dict) -> None:
    answer = tools["check_service_availability"].invoke(
        {"location": "Tucson", "service_type": "car wash"})
    assert "don't recognise the service 'car wash'" in answer
    assert "In Tucson we offer: mobile installation, tire rotation, puncture repair." in answer


def test_areas_served_matches_the_coverage_table() -> None:
    areas = " ".join(load_business_profile().sections["areas_served"].facts)
    assert all(city in areas for city in profile.known_cities())


def test_a_corrected_address_moves_the_lead(tools: dict, context: ToolContext) -> None:
    record = tools["record_customer_interest"]
    record.invoke({"email": "ana@fleetco.com", "name": "Ana", "message": "fleet pricing"})
    answer = record.invoke({"email": "ana@fleet-co.com", "name": "Ana",
                            "message": "fleet pricing", "replaces": "ana@fleetco.com"})
    assert answer == ("Updated: we'll contact ana@fleet-co.com instead of ana@fleetco.com "
                      "about fleet pricing.")
    assert [(lead["email"], lead["message"]) for lead in context.store.leads()] == [
        ("ana@fleet-co.com", "fleet pricing")]


def test_record_customer_interest_saves_once(tools: dict, context: ToolContext) -> None:
    record = tools["record_customer_interest"]
    lead = {"email": "ana@example.com", "name": "Ana", "message": "fleet pricing"}
    mine, other = ({"configurable": {"thread_id": t}} for t in ("mine", "other"))
    assert record.invoke(lead, config=mine) == (
        "Saved: we'll contact ana@example.com about fleet pricing.")
    assert record.invoke({**lead, "message": "Fleet pricing."}, config=mine) == (
        "Already on file: we'll contact ana@example.com about Fleet pricing.")
    # Another conversation typing the same request learns nothing about what is stored.
    assert record.invoke(lead, config=other) == (
        "Saved: we'll contact ana@example.com about fleet pricing.")
    assert context.store.lead_count() == 1


@pytest.mark.parametrize(("email", "name", "why"), [
    ("x@y.c\nBcc: z@w", "Eve", "line breaks"),
    ("not-an-email", "Eve", "not a valid e-mail address"),
    ("eve@example.com", "N" * 10_000, "the name is 10000 characters long; the limit is 100"),
])
def test_record_customer_interest_rejects_bad_input(tools, context, email, name, why) -> None:
    with pytest.raises(ToolException, match=f"Not saved: .*{why}"):
        tools["record_customer_interest"].invoke({"email": email, "name": name, "message": "hi"})
    assert context.store.lead_count() == 0


def test_record_feedback_keeps_the_question(tools: dict, context: ToolContext) -> None:
    answer = tools["record_feedback"].invoke({"question": "Do you sell alloy rims?"})
    assert answer.startswith("Noted (ref #1)")
    assert context.store.feedback()[0]["question"] == "Do you sell alloy rims?"
    with pytest.raises(ToolException, match="question is empty"):
        tools["record_feedback"].invoke({"question": " "})


@pytest.mark.parametrize(("text", "vehicle", "usage"), [
    ("I drive a Tesla mostly in the snow", "EV", "winter"),
    ("which tires for my pickup? I tow a boat trailer", "truck", "towing"),
    ("family crossover, mostly highway road trips", "SUV", "highway"),
    ("our delivery vans do city and highway", "commercial", "mixed"),
    ("my Honda Civic for track days", "sedan", "performance"),
    ("is this good for Oklahoma City?", None, None),
])
def test_find_vehicle_and_usage_inside_a_sentence(text, vehicle, usage) -> None:
    assert profile.find_vehicle(text) == vehicle
    assert profile.find_usage(text) == usage


@pytest.mark.parametrize(("text", "city", "service"), [
    ("Can you do a tire change in Fort Worth tomorrow?", "Fort Worth", "mobile_installation"),
    ("I have a flat near ATX", "Austin", "repair"),
    ("install smart tread sensors in Oklahoma City", "Oklahoma City", "smart_tread_setup"),
    ("my wheels wobble, are you in dfw?", "Dallas", "balancing"),
    ("what do you do with old tires in Phoenix", "Phoenix", "recycling"),
    ("do you rotate tires in Boston", None, "rotation"),
])
def test_find_city_and_service_inside_a_sentence(text, city, service) -> None:
    assert profile.find_city(text) == city
    assert profile.find_service(text) == service


def test_normalisers_accept_only_a_whole_name() -> None:
    assert profile.normalise_vehicle("Pickups") == "truck"
    assert profile.normalise_vehicle("my pickup") is None
    assert profile.normalise_usage("Snow") == "winter"
    assert profile.normalise_city("Ft. Worth") == "Fort Worth"
    assert profile.normalise_service("flat tire") == "repair"
    assert profile.known_vehicle_types() == ["sedan", "SUV", "truck", "van", "commercial", "EV"]
    assert profile.known_usages() == ["city", "highway", "mixed", "off-road", "winter",
                                      "performance", "towing"]
    assert len(profile.known_cities()) >= 10
    assert profile.known_services() == ["mobile_installation", "rotation", "repair", "balancing",
                                        "smart_tread_setup", "recycling"]


def test_a_profile_copy_is_loaded_from_its_own_path(tmp_path: Path, context: ToolContext) -> None:
    copy = tmp_path / "business.yaml"
    shutil.copy(profile.BUSINESS_PROFILE_PATH, copy)
    data = yaml.safe_load(copy.read_text())
    moon = "Open around the clock on the Moon."
    data["sections"]["hours"]["text"] = moon
    copy.write_text(yaml.safe_dump(data, allow_unicode=True))
    assert load_business_profile(copy).sections["hours"].text == moon
    assert load_business_profile().sections["hours"].text != moon
    context.business_profile = copy
    tools = {tool.name: tool for tool in get_tools("business", context=context)}
    assert "on the Moon" in tools["get_business_info"].invoke({"topic": "opening hours"})


@pytest.mark.parametrize(("content", "why"), [
    ("name: X\nsections: [1, 2]", "business.yaml: sections: must be a non-empty mapping"),
    ("name: X\nsections:\n  hours: {title: Hours}", "sections.hours.text: is required"),
    ("name: X\nsections:\n  hours: {title: H, text: ' '}", "hours.text: must be a non-empty"),
    ("name: X\nsections:\n  hours: {title: H, text: T, facts: oops}", "facts: must be a list"),
    ("name: X\nsections:\n  hours: {title: H, text: T, fact: [a]}", "unknown field 'fact'"),
    ("{{{", "not valid YAML"),
])
def test_a_malformed_profile_is_a_clear_error(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "business.yaml"
    path.write_text(content)
    with pytest.raises(ProfileError, match=why):
        load_business_profile(path)
    with pytest.raises(ProfileError, match="cannot read"):
        load_business_profile(tmp_path / "missing.yaml")
