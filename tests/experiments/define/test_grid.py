"""Grid and scenario files: the shipped ones load, bad ones fail naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.define.grid import DEFAULT_GRID, GRIDS_DIR, GridError, load_grid
from experiments.define.scenarios import DEFAULT_SCENARIOS, ScenarioError, load_scenarios
from tests.support.cli import experiments

CATEGORIES = {"information query", "tire recommendation", "service inquiry", "lead collection",
              "unknown question"}


def write_grid(tmp_path: Path, text: str, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BASE = """\
personas: [friendly, technical]
models: [offline]
temperatures: [0.0, 0.5]
"""


def test_default_grid_is_offline_three_by_three_over_every_scenario():
    grid = load_grid(DEFAULT_GRID)
    scenarios = load_scenarios(DEFAULT_SCENARIOS)
    assert grid.models == ("offline",)
    assert grid.personas == ("friendly", "technical", "cautious")
    assert grid.temperatures == (0.0, 0.5, 1.0)
    assert grid.repeats == 3
    assert len(grid.cells()) == 9
    assert len(grid.cases()) == 9 * len(scenarios) * 3


def test_shipped_scenarios_cover_what_the_study_needs():
    scenarios = load_scenarios(DEFAULT_SCENARIOS)
    assert len(scenarios) >= 12
    assert CATEGORIES <= {s.category for s in scenarios}
    by_id = {s.id: s for s in scenarios}
    assert len(by_id["lead_two_turn"].turns) == 2
    kinds = {c["kind"] for s in scenarios for c in s.checks}
    assert {"lead_stored", "feedback_recorded", "no_lead", "png_artifact", "answer_number",
            "forbidden_tools", "tool_args", "max_iterations"} <= kinds


@pytest.mark.parametrize("name", ["seed.yaml", "gemini.yaml"])
def test_study_grids_load_and_keep_to_the_five_categories(name):
    grid = load_grid(GRIDS_DIR / name)
    assert set(grid.categories) == CATEGORIES
    assert {s.category for s in grid.scenarios()} == CATEGORIES
    assert len(grid.personas) == 3 and len(grid.models) == 3
    assert [v.name for v in grid.variations] == ["baseline", "concise"]
    # The exclusion removes the expensive model's concise variation only.
    assert len(grid.cells()) == 3 * 3 * len(grid.temperatures) * 2 - 3 * len(grid.temperatures)
    assert grid.max_cost_usd is not None and grid.rate_limits


def test_seed_grid_has_the_original_factors():
    grid = load_grid(GRIDS_DIR / "seed.yaml")
    assert grid.models == ("openai:gpt-3.5-turbo", "openai:gpt-4o-mini", "openai:gpt-4o")
    assert grid.temperatures == (0.0, 0.5, 0.7, 1.0)


def test_exclude_rules_match_partial_factors(tmp_path):
    path = write_grid(tmp_path, BASE + "exclude:\n  - {persona: technical, temperature: 0.5}\n"
                      "  - {scenario: info_hours}\n")
    grid = load_grid(path)
    cells = grid.cells()
    assert len(cells) == 3
    assert all(not (c.persona == "technical" and c.temperature == 0.5) for c in cells)
    assert "info_hours" not in {case.scenario.id for case in grid.cases()}


def test_case_keys_are_stable_unique_and_seeded(tmp_path):
    grid = load_grid(write_grid(tmp_path, BASE + "repeats: 2\n"))
    cases = grid.cases()
    keys = [c.key for c in cases]
    assert len(set(keys)) == len(keys)
    again = load_grid(write_grid(tmp_path, BASE + "repeats: 2\n", "again.yaml")).cases()
    assert [c.key for c in again] == keys
    assert [c.seed for c in again] == [c.seed for c in cases]
    first = cases[0]
    assert first.key == f"{first.cell.config_hash}-{first.scenario.id}-r{first.repeat}"
    assert len({c.thread_id for c in cases}) == len(cases)


def test_variations_change_the_config_hash(tmp_path):
    grid = load_grid(write_grid(tmp_path, BASE + "variations:\n  baseline: {}\n  short:\n"
                                "    system_suffix: Be brief.\n    max_tokens: 200\n"))
    hashes = {(c.persona, c.temperature, c.variation.name): c.config_hash for c in grid.cells()}
    assert len(set(hashes.values())) == len(hashes) == 8
    short = next(v for v in grid.variations if v.name == "short")
    assert short.overrides() == {"system_suffix": "Be brief.", "max_tokens": 200}


def test_scenario_filter_by_category_and_id(tmp_path):
    grid = load_grid(write_grid(tmp_path, BASE + "scenarios:\n"
                                f"  file: {DEFAULT_SCENARIOS}\n  categories: [math]\n"))
    assert {s.category for s in grid.scenarios()} == {"math"}
    grid = load_grid(write_grid(tmp_path, BASE + "scenarios: {ids: [math_chain]}\n", "b.yaml"))
    assert [s.id for s in grid.scenarios()] == ["math_chain"]


@pytest.mark.parametrize(("text", "field", "message"), [
    ("personas: [friendly, pirate]\nmodels: [offline]\ntemperatures: [0]\n", "personas",
     "unknown persona 'pirate'"),
    ("personas: [friendly]\nmodels: [offline]\ntemperatures: [0, 2.5]\n", "temperatures[1]",
     "less than or equal to 2 (got 2.5)"),
    ("personas: [friendly]\nmodels: [offline]\ntemperatures: [hot]\n", "temperatures[0]",
     "valid number (got 'hot')"),
    (BASE + "colour: blue\n", "unknown field 'colour'", "known: budget"),
    (BASE + "variations:\n  short: {top_p: 0.5}\n", "variations.short",
     "unknown field 'top_p'; known: max_tokens, system_suffix"),
    (BASE + "exclude:\n  - {flavour: x}\n", "exclude[0]", "unknown factor(s) flavour"),
    (BASE + "exclude:\n  - {persona: cautious}\n", "exclude[0].persona", "not one of"),
    (BASE + "repeats: 0\n", "repeats", "greater than or equal to 1"),
    (BASE + "concurrency: 2.5\n", "concurrency", "valid integer"),
    (BASE + "budget: {max_dollars: 3}\n", "budget", "unknown field 'max_dollars'"),
    (BASE + "rate_limits: {openai: -1}\n", "rate_limits.openai", "greater than or equal to 0"),
    (BASE + "keep_cases: some\n", "keep_cases", "'failed', 'all' or 'none'"),
    ("personas: [friendly]\nmodels: ['gpt 4']\ntemperatures: [0]\n", "models",
     "provider:model"),
    ("models: [offline]\ntemperatures: [0]\n", "personas", "is required"),
    (BASE + "strategies: [react, tree-of-thought]\n", "strategies[1]", "'plan-verify'"),
    (BASE + "strategies: [react, react]\n", "strategies", "same value twice"),
    (BASE + "judge: 'a judge'\n", "judge", "provider:model"),
    (BASE + "scenarios: {file: s.yaml, colour: red}\n", "scenarios",
     "unknown field 'colour'; known: categories, file, ids"),
])
def test_bad_grids_name_the_file_and_the_field(tmp_path, text, field, message):
    path = write_grid(tmp_path, text)
    with pytest.raises(GridError) as error:
        load_grid(path)
    assert str(path) in str(error.value)
    assert field in str(error.value)
    assert message in str(error.value)


def test_unknown_category_names_the_grid_and_the_known_ones(tmp_path):
    path = write_grid(tmp_path, BASE + "scenarios: {categories: [astrology]}\n")
    with pytest.raises(GridError, match="scenarios.categories: unknown category 'astrology'"):
        load_grid(path).scenarios()


def test_a_missing_grid_file_is_one_clear_line(tmp_path):
    with pytest.raises(GridError, match="cannot read the grid file"):
        load_grid(tmp_path / "nope.yaml")


@pytest.mark.parametrize(("text", "where", "what"), [
    ("personas: [friendly\nmodels: [offline]\n", "line 2, column 7", "expected ',' or ']'"),
    (BASE + "  repeats: 2\n", "line 4, column 3", "expected <block end>"),
    ("personas: [friendly]\nmodels: 'offline\n", "line 3, column 1",
     "unexpected end of stream"),
])
def test_a_grid_that_is_not_yaml_is_one_line_naming_the_file_and_the_line(tmp_path, repo, text,
                                                                          where, what):
    path = write_grid(tmp_path, text)
    with pytest.raises(GridError) as error:
        load_grid(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}: not valid YAML at {where}: ")
    assert what in message
    done = experiments("run", "--grid", str(path), "--out", str(tmp_path / "out"), cwd=repo)
    assert done.returncode == 2 and done.stderr == f"error: {message}\n"
    assert not (tmp_path / "out").exists()


def test_a_grid_that_is_not_utf8_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(BASE.encode() + "description: caf\u00e9 au lait\n".encode("latin-1"))
    with pytest.raises(GridError) as error:
        load_grid(path)
    assert str(error.value) == (f"{path}: the grid file is not UTF-8 text (byte 0xe9 on line 4);"
                                " save it as UTF-8")
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_bytes(b"scenarios:\n  - {id: a, category: caf\xe9, turns: [hi]}\n")
    grid = load_grid(write_grid(tmp_path, BASE + "scenarios: scenarios.yaml\n"))
    with pytest.raises(GridError) as error:
        grid.scenarios()
    assert "\n" not in str(error.value)
    assert f"{scenarios}: the scenario file is not UTF-8 text (byte 0xe9 on line 2)" in str(
        error.value)


@pytest.mark.parametrize(("text", "message"), [
    ("scenarios:\n  - {id: a, category: x, turns: [hi], checks: [{kind: nope}]}\n",
     "unknown check kind 'nope'"),
    ("scenarios:\n  - {id: a, category: x, turns: []}\n",
     "scenarios[0].turns: List should have at least 1 item"),
    ("scenarios:\n  - {id: A B, category: x, turns: [hi]}\n", "id 'A B'"),
    ("scenarios:\n  - {id: a, category: x, turns: [hi]}\n  - {id: a, category: y, turns: [yo]}\n",
     "appears twice"),
    ("scenarios:\n  - {id: a, turns: [hi]}\n", "scenarios[0].category: is required"),
    ("scenarios:\n  - {id: a, category: x, turns: [hi], colour: red}\n",
     "scenarios[0]: unknown field 'colour'; known: calls"),
    ("tests: []\n", "scenarios: is required; unknown field 'tests'"),
])
def test_bad_scenario_files_name_the_file_and_the_scenario(tmp_path, text, message):
    path = tmp_path / "scenarios.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as error:
        load_scenarios(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_a_grid_reports_its_broken_scenario_file(tmp_path):
    (tmp_path / "s.yaml").write_text("scenarios:\n  - {id: a, category: x, turns: []}\n")
    grid = load_grid(write_grid(tmp_path, BASE + "scenarios: s.yaml\n"))
    with pytest.raises(GridError, match="grid.yaml: scenarios: .*s.yaml"):
        grid.scenarios()
