"""One plugin registry: built-ins declared once in pyproject.toml, plugins found by entry point."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from experiments.analyse.charts import CHARTS, registered
from experiments.define.checks import CHECKS, CheckError, validate
from experiments.define.outcome import CHECK_KINDS
from tests.support.distributions import install_distribution
from treadwise.agent.strategies import REGISTRY, get_strategy, strategy_names
from treadwise.models import ModelSettings
from treadwise.models.registry import MODELS, find_provider, resolve_model
from treadwise.plugins import Registry, declared, load
from treadwise.tools import TOOLSETS
from treadwise.web.extensions import PLUGS

ROOT = Path(__file__).resolve().parents[1]
REGISTRIES = (TOOLSETS, MODELS, REGISTRY, PLUGS, CHECK_KINDS, CHARTS)

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
        "[experiments.checks]\nanswer_short = treadwise_extras:answer_short\n"
        "[experiments.charts]\ntire_ages.png = treadwise_extras:tire_ages\n"
        "[treadwise.strategies]\nlazy = treadwise_extras:forgot_to_register\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("treadwise_extras", None)
    CHECKS.pop("answer_short", None)  # what the plugin registered leaves with it
    CHARTS.entries.pop("tire_ages.png", None)


def test_a_plain_checkout_finds_every_built_in_in_pyproject_alone() -> None:
    """The tests run from a clone with nothing pip-installed: pyproject.toml is the one list."""
    tables = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert sorted(tables) == sorted(registry.group for registry in REGISTRIES)
    for registry in REGISTRIES:
        assert registry.targets() == dict(sorted(tables[registry.group].items()))
        for target in tables[registry.group].values():
            assert callable(load(target)), target
    assert "react" in strategy_names() and find_provider("offline") is not None


def test_an_installed_project_reads_its_built_ins_from_its_metadata(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed (no pyproject.toml beside the package), the same table comes from the
    distribution's entry_points.txt, as pip wrote it."""
    site = install_distribution(tmp_path / "site", "treadwise", {},
                                "[treadwise.strategies]\nreact = a.b:build\n"
                                "[experiments.charts]\nx.png = c:d\n")
    monkeypatch.syspath_prepend(str(site))
    assert declared(tmp_path / "no-pyproject.toml") == {
        "treadwise.strategies": {"react": "a.b:build"}, "experiments.charts": {"x.png": "c:d"}}


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
    builtins = declared()["experiments.charts"]
    assert names[:len(builtins)] == sorted(builtins)
    assert names[-1] == "tire_ages.png"


def test_a_strategy_plugin_that_registers_nothing_is_a_clear_error(installed_plugin) -> None:
    assert strategy_names()[-1] == "lazy"
    with pytest.raises(ValueError, match="treadwise_extras:forgot_to_register did not register "
                                         "a strategy named 'lazy'"):
        get_strategy("lazy")


def test_run_time_entries_win_and_unknown_names_are_none() -> None:
    registry: Registry[str] = Registry("treadwise.strategies")
    assert registry.get("missing") is None
    registry.add("react", "mine")
    assert registry.get("react") == "mine"
    assert sorted(registry.names()) == sorted(strategy_names())


def test_every_entry_lists_in_declared_order_whatever_order_the_modules_registered_in() -> None:
    # Chart modules register on import; another test (or worker) importing costs.py before
    # outcomes.py must not reorder the report's charts.
    registry: Registry[str] = Registry("experiments.charts")
    first, second, *_ = sorted(declared()["experiments.charts"])
    registry.add("late", "run-time")
    registry.add(second, "two")
    registry.add(first, "one")
    assert list(registry.load_all())[:2] == [first, second]
    assert list(registry.load_all())[-1] == "late"
