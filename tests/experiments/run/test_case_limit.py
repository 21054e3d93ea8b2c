"""A case limit keeps a sweep comparable: repeats go first, then whole scenarios, never a
configuration, and the plan says what was left out or what the smallest comparable sweep is."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from experiments.define.grid import DEFAULT_GRID, load_grid
from experiments.run.case_limit import LimitTooSmall, trim
from experiments.run.runner import SweepError
from tests.experiments.run.test_runner import HOURS, cli, sweep, write_grid


def scenarios_by_configuration(cases) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for case in cases:
        found.setdefault(case.cell.config_hash, set()).add(case.scenario.id)
    return found


def test_sixty_cases_of_the_default_grid_compare_every_configuration_on_the_same_scenarios():
    grid = load_grid(DEFAULT_GRID)
    cases = grid.cases()
    trimmed = trim(cases, 60)
    per_configuration = scenarios_by_configuration(trimmed.cases)
    assert len(per_configuration) == len(grid.cells()) == 9, "no configuration is dropped"
    assert len({frozenset(s) for s in per_configuration.values()}) == 1, per_configuration
    assert set(Counter(c.cell.config_hash for c in trimmed.cases).values()) == {6}
    assert {c.repeat for c in trimmed.cases} == {1}, "repeats are trimmed first"
    assert len(trimmed.cases) == 54
    assert trimmed.note == (
        "Case limit 60 keeps 54 cases: all 9 configurations on the same 6 scenarios (repeat 1);"
        " left out: repeats 2\u20133 and 17 of 23 scenarios (resume the run for the rest).")


def test_a_limit_past_one_repeat_takes_whole_scenarios_of_the_next():
    cases = load_grid(DEFAULT_GRID).cases()
    trimmed = trim(cases, 300)
    assert len(trimmed.cases) == 297
    second = scenarios_by_configuration(c for c in trimmed.cases if c.repeat == 2)
    assert len({frozenset(s) for s in second.values()}) == 1 and len(second) == 9
    assert "left out: repeat 3 and repeat 2 of 13 scenarios" in trimmed.note


def test_twelve_cases_run_one_scenario_each_and_say_the_smallest_comparable_sweep():
    trimmed = trim(load_grid(DEFAULT_GRID).cases(), 12)
    assert len(trimmed.cases) == 9 and len({c.scenario.id for c in trimmed.cases}) == 1
    assert "the smallest comparable sweep is 9 cases, 1 scenario each" in trimmed.note


def test_a_limit_below_one_scenario_per_configuration_is_refused_with_the_smallest_sweep():
    with pytest.raises(LimitTooSmall) as refused:
        trim(load_grid(DEFAULT_GRID).cases(), 5)
    assert str(refused.value) == ("5 cases cannot compare 9 configurations on the same "
                                  "scenarios: the smallest comparable sweep is 9 cases (1 "
                                  "scenario each).")
    assert trim(load_grid(DEFAULT_GRID).cases(), None).note == ""


def test_the_cli_refuses_the_same_way_and_leaves_no_empty_run_folder(repo: Path, tmp_path: Path):
    grid = write_grid(tmp_path, [HOURS, {**HOURS, "id": "again"}],
                      personas=["friendly", "technical", "cautious"])
    done = cli(repo, "run", "--grid", str(grid), "--out", str(tmp_path / "out"), "--limit", "2")
    assert done.returncode == 2
    assert ("error: 2 cases cannot compare 3 configurations on the same scenarios: the "
            "smallest comparable sweep is 3 cases (1 scenario each).") in done.stderr
    assert not list((tmp_path / "out").glob("*"))
    with pytest.raises(SweepError, match="smallest comparable sweep is 3 cases"):
        sweep(grid, tmp_path / "again", limit=1)


@pytest.mark.slow
def test_the_plan_and_the_report_say_what_the_limit_left_out(tmp_path: Path):
    from experiments.analyse.report import write_report

    grid = write_grid(tmp_path, [HOURS, {**HOURS, "id": "again"}],
                      personas=["friendly", "technical"], repeats=2)
    run_dir, lines = sweep(grid, tmp_path / "out", limit=5)
    note = ("Case limit 5 keeps 4 cases: all 2 configurations on the same 2 scenarios "
            "(repeat 1); left out: repeat 2 (resume the run for the rest).")
    assert f"  {note}" in lines
    assert note in write_report(run_dir).read_text(encoding="utf-8")
