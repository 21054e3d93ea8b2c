"""One plugin registry: every group declared in pyproject.toml, plugins found by entry point."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from experiments.analyse.charts import BUILTIN_CHARTS, CHARTS, registered
from experiments.define.checks import CHECKS, CheckError, validate
from experiments.define.outcome import BUILTIN_CHECKS
from tests.support.distributions import install_distribution
from treadwise.agent.strategies import BUILTIN_STRATEGIES, get_strategy, strategy_names
from treadwise.models import ModelSettings
from treadwise.models.registry import BUILTIN_PROVIDERS, find_provider, resolve_model
from treadwise.plugins import Registry, load
from treadwise.tools import BUILTIN_TOOLSETS

ROOT = Path(__file__).resolve().parents[1]
GROUPS = {"treadwise.tools": BUILTIN_TOOLSETS, "treadwise.models": BUILTIN_PROVIDERS,
          "treadwise.strategies": BUILTIN_STRATEGIES, "treadwise.checks": BUILTIN_CHECKS,
          "treadwise.charts": BUILTIN_CHARTS}

PLUGIN = '''
from experiments.analyse.charts import chart, empty
from experiments.define.outcome import check


def echo_model(spec, settings):
    return ("echo", spec.model, settings.temperature)


@check("answer_short", required=("max",))
def answer_short(spec, outcome):
    return True, "short enough"


@chart("tire_ages.png", "Tire ages", "How old the tires in the scenarios were.")
def tire_ages(df, summary, plt, sns):
    return empty(plt, "no tires")


def forgot_to_register(kit):
    return None
'''


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution on sys.path with an entry_points.txt, as pip would install it."""
    site = install_distribution(
        tmp_path / "site", "treadwise-extras", {"treadwise_extras": PLUGIN},
        "[treadwise.models]\necho = treadwise_extras:echo_model\n"
        "[treadwise.checks]\nanswer_short = treadwise_extras:answer_short\n"
        "[treadwise.charts]\ntire_ages.png = treadwise_extras:tire_ages\n"
        "[treadwise.strategies]\nlazy = treadwise_extras:forgot_to_register\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("treadwise_extras", None)
    CHECKS.pop("answer_short", None)  # what the plugin registered leaves with it
    CHARTS.entries.pop("tire_ages.png", None)


def test_every_group_is_declared_in_pyproject_with_the_built_ins() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group, builtins in GROUPS.items():
        assert declared.get(group) == builtins, group


def test_every_built_in_target_loads() -> None:
    for builtins in GROUPS.values():
        for target in builtins.values():
            assert callable(load(target)), target


def test_a_model_provider_plugs_in_through_its_entry_point(installed_plugin) -> None:
    assert find_provider("echo") is not None
    assert resolve_model("echo:any", ModelSettings(temperature=0.5)) == ("echo", "any", 0.5)


def test_a_check_kind_plugs_in_and_is_validated_like_a_built_in(installed_plugin) -> None:
    assert validate({"kind": "answer_short", "max": 40}, "s1")["max"] == 40
    with pytest.raises(CheckError, match="s1: check answer_short needs max"):
        validate({"kind": "answer_short"}, "s1")


def test_an_unknown_check_kind_names_the_plugged_in_ones(installed_plugin) -> None:
    with pytest.raises(CheckError, match=r"unknown check kind 'short'; known: .*answer_short"):
        validate({"kind": "short"}, "s1")


def test_a_chart_plugs_in_after_the_built_ins(installed_plugin) -> None:
    names = [item.name for item in registered()]
    assert names[:len(BUILTIN_CHARTS)] == list(BUILTIN_CHARTS)
    assert names[-1] == "tire_ages.png"


def test_a_strategy_plugin_that_registers_nothing_is_a_clear_error(installed_plugin) -> None:
    assert strategy_names()[-1] == "lazy"
    with pytest.raises(ValueError, match="treadwise_extras:forgot_to_register did not register "
                                         "a strategy named 'lazy'"):
        get_strategy("lazy")


def test_run_time_entries_win_and_unknown_names_are_none() -> None:
    registry: Registry[str] = Registry("treadwise.nothing", {"a": "os.path:join"})
    assert registry.get("missing") is None
    registry.add("a", "mine")
    assert registry.get("a") == "mine"
    assert registry.names() == ["a"]


def test_every_entry_lists_in_declared_order_whatever_order_the_modules_registered_in() -> None:
    # Chart modules register on import; another test (or worker) importing costs.py before
    # outcomes.py must not reorder the report's charts.
    registry: Registry[str] = Registry("treadwise.none", {"first": "m:first", "second": "m:second"})
    registry.add("late", "run-time")
    registry.add("second", "two")
    registry.add("first", "one")
    assert list(registry.load_all()) == ["first", "second", "late"]
