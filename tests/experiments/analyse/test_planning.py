"""Planning a study: `python -m experiments power --detect D` says how many scenarios a grid
needs, from an earlier run's spread or a stated conservative default."""

from __future__ import annotations

import re

from experiments.analyse import power
from experiments.analyse.family import EFFECTS
from experiments.analyse.planning import plan
from experiments.cli import main
from tests.experiments.analyse.test_report_claims import crossed_run


def needed(text: str) -> int:
    return int(re.search(r"scenarios needed (\d+)", text).group(1))


def test_the_power_command_sizes_the_default_grid(capsys):
    assert main(["power", "--detect", "0.10"]) == 0
    ten = capsys.readouterr().out
    assert "conservative default" in ten and "(the grid has 23 now)" in ten
    assert main(["power", "--detect", "0.20"]) == 0
    twenty = capsys.readouterr().out
    assert needed(ten) > needed(twenty) > 23  # the default grid cannot see 20 points
    # The level is the one the grid's report gives a factor comparison: one family.
    found = plan(0.10)
    assert found.level == found.family.level(EFFECTS) < 0.05 / 3
    assert needed(ten) == max(power.scenarios_needed(0.10, power.DEFAULT_SD, found.level)
                              .values())


def test_an_earlier_run_gives_its_spread_and_a_ceiling_needs_a_failing_share(tmp_path, capsys):
    run = crossed_run(tmp_path / "run", 8, lambda p, s: p == "technical" and s % 2 == 0)
    assert main(["power", "--detect", "0.30", "--from", str(run)]) == 0
    out = capsys.readouterr().out
    assert "the widest of its factors, persona" in out and "(the grid has 8 now)" in out
    assert "scenario spread sd 0.5" in out  # technical fails every other scenario
    ceiling = crossed_run(tmp_path / "all", 8)
    found = plan(0.10, ceiling)
    assert found.sd == 0.0 and found.scenarios == found.needed["failing share"] > 50
    assert main(["power", "--detect", "0.10", "--from", str(ceiling)]) == 0
    out = capsys.readouterr().out  # no 'a shift needs 4 scenarios' from spread that is not
    assert "as a shift: none seen" in out and "spread sd 0.00" not in out


def test_a_difference_given_in_points_is_a_clear_error(capsys):
    assert main(["power", "--detect", "10"]) == 2
    assert "a fraction between 0 and 1 (0.10 for ten points)" in capsys.readouterr().err
