"""The toolset registry: built-ins, a plugin found through a real entry point, bad names."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.distributions import install_distribution
from treadwise.tools import ENTRY_POINT_GROUP, ToolContext, available_toolsets, get_tools

BUSINESS = {"get_business_info", "get_tire_recommendation", "check_service_availability",
            "record_customer_interest", "record_feedback", "delete_customer_data"}
MATH = {"add", "subtract", "multiply", "divide", "power", "square", "square_root", "calculate",
        "integrate", "differentiate", "solve_equation", "analyze_function", "plot_area"}

PLUGIN = '''
from langchain_core.tools import StructuredTool


def tire_age_tools(context):
    def tire_age_years(dot_code: str) -> str:
        """Age of a tire from the last four digits of its DOT code (week, year)."""
        year = 2000 + int(dot_code[-2:])
        return f"made in week {dot_code[-4:-2]} of {year}; data dir {context.data_dir.name}"

    return [StructuredTool.from_function(tire_age_years)]


def hijack(context):
    raise AssertionError("a plugin must not replace a built-in toolset")
'''


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    return ToolContext(data_dir=tmp_path / "plugin-data")


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A distribution on sys.path with an entry_points.txt, as pip would install it."""
    site = install_distribution(
        tmp_path / "site", "treadwise-tire-age", {"treadwise_tire_age": PLUGIN},
        f"[{ENTRY_POINT_GROUP}]\n"
        "tire_age = treadwise_tire_age:tire_age_tools\n"
        "business = treadwise_tire_age:hijack\n")
    monkeypatch.syspath_prepend(str(site))  # also invalidates import and metadata caches
    yield "tire_age"
    sys.modules.pop("treadwise_tire_age", None)


def test_a_plugin_toolset_is_found_through_its_entry_point(installed_plugin, context) -> None:
    assert available_toolsets()[installed_plugin] == "treadwise_tire_age:tire_age_tools"
    (tool,) = get_tools(installed_plugin, context=context)
    assert tool.name == "tire_age_years"
    assert tool.invoke({"dot_code": "4523"}) == "made in week 45 of 2023; data dir plugin-data"


def test_a_plugin_cannot_replace_a_built_in_toolset(installed_plugin, context) -> None:
    assert available_toolsets()["business"] == "treadwise.tools.business:business_tools"
    names = {tool.name for tool in get_tools("business", installed_plugin, context=context)}
    assert names == BUSINESS | {"tire_age_years"}


def test_without_the_plugin_its_toolset_is_unknown(context) -> None:
    with pytest.raises(ValueError, match=r"unknown toolset 'tire_age'; known: .*business"):
        get_tools("tire_age", context=context)


def test_an_unknown_toolset_name_is_a_clear_error(context) -> None:
    with pytest.raises(ValueError, match=r"unknown toolset 'maths'; known: business, math, mcp"):
        get_tools("maths", context=context)


def test_the_business_toolset_has_its_six_tools(context) -> None:
    assert {tool.name for tool in get_tools("business", context=context)} == BUSINESS


def test_the_default_toolsets_are_math_and_business(context) -> None:
    names = {tool.name for tool in get_tools(context=context)}
    assert names >= MATH | BUSINESS


def test_without_a_context_the_data_dir_comes_from_the_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TREADWISE_DATA_DIR", str(tmp_path / "env-data"))
    tools = {tool.name: tool for tool in get_tools("business")}
    tools["record_feedback"].invoke({"question": "Do you fit motorbike tires?"})
    assert (tmp_path / "env-data" / "leads.db").is_file()
