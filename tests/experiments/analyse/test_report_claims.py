"""What a report claims, end to end from a run's rows: intervals that come from the number of
scenarios when they all agree, one error rate for the whole report, the winner's own rate, and
no sentence that reads as a test when none ran."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.analyse import findings
from experiments.analyse.report import write_report
from experiments.store.folder import write_meta
from tests.experiments.analyse.test_report import RowsWriter, row

PERSONAS = ("friendly", "technical", "cautious")


def crossed_run(folder: Path, scenarios: int, fails=lambda persona, scenario: False, *,
                temperatures=(0.0, 0.5, 1.0), repeats: int = 3) -> Path:
    """The default sweep's shape: 3 personas x temperatures x repeats over `scenarios`
    scenarios, every case passing unless `fails(persona, scenario)`."""
    folder.mkdir(parents=True, exist_ok=True)
    with RowsWriter(folder) as writer:
        for s, persona, t, r in itertools.product(range(scenarios), PERSONAS, temperatures,
                                                  range(1, repeats + 1)):
            writer.write(row(persona=persona, temperature=t, config_hash=f"{persona}{t}",
                             scenario=f"s{s:02d}", repeat=r,
                             status="failed" if fails(persona, s) else "ok",
                             response_words=40 + s % 7 + 3 * (persona == "technical")))
    write_meta(folder, {"grid_name": "default", "status": "finished",
                        "created": "2026-01-01T00:00:00+00:00"})
    return folder


def effects(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "effects.csv")


def test_23_agreeing_scenarios_give_intervals_and_detectable_differences_from_23(tmp_path):
    """The default sweep (23 scenarios, all pass): with 23 scenarios a configuration could
    still fail about 1 scenario in 7, so no interval or detectable difference is a few points
    (the cells used to count as draws: 'about 4 points', -3 to +3)."""
    run = crossed_run(tmp_path / "run", 23)
    text = write_report(run, charts=False).read_text()
    table = effects(run)
    # At least the exact binomial bound over 23 scenarios (14.8 points at 95%); wider at the
    # family's level.
    assert (table["ci_high"] >= 0.148).all() and (table["ci_low"] <= -0.148).all()
    assert (table["mdd"] >= 0.148).all()
    assert set(table["factor"]) == {"persona", "temperature"} and len(table) == 6
    assert "about 4 points" not in text and "It cannot show a smaller one" not in text
    assert "could still fail up to 15% of scenarios like these" in text
    assert "differences up to" in text and "cannot be ruled out" in text


@pytest.mark.thorough
def test_a_persona_failing_2_of_23_scenarios_is_not_called_no_difference(tmp_path):
    run = crossed_run(tmp_path / "run", 23, lambda p, s: p == "technical" and s < 2)
    text = write_report(run, charts=False).read_text()
    table = effects(run).set_index(["level", "reference"])
    found = table.loc[("technical", "cautious")]
    assert found["effect"] == pytest.approx(-2 / 23)
    assert found["ci_low"] <= -0.09 <= found["ci_high"] and not found["significant"]
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    effect_line = next(line for line in summary.splitlines() if "Factor effects" in line)
    assert "**persona**: no two levels shown to differ; differences up to" in effect_line
    assert "cannot be ruled out (e.g. technical vs cautious -9 pts (" in effect_line
    assert "no level of any factor differs" not in text
    assert "| persona | technical | cautious | -9 pts |" in text  # the effects table's row


def test_a_12_case_sweep_of_2_scenarios_says_no_test_ran_and_claims_nothing(tmp_path):
    run = crossed_run(tmp_path / "run", 2, lambda p, s: p == "cautious" and s == 0,
                      temperatures=(0.0,), repeats=2)
    text = write_report(run, charts=False).read_text()
    assert "12 cases" in text and "no test was run" in text
    for wording in ("at the 5% level", "no persona differs", "no level of any factor differs",
                    "no two personas shown to differ", "no two levels shown to differ",
                    "It beats", "cannot rank it"):
        assert wording not in text, wording
    assert "**Factor effects:** not tested: too few scenarios" in text
    assert "**Persona style:** not tested: too few scenarios" in text


@pytest.mark.thorough
def test_the_best_configurations_rate_allows_for_having_picked_it(tmp_path):
    """12 configurations: the best's interval in the summary is the exact one at 5%/12 (all
    of them at once), wider than its own 95% interval in the table."""
    from statsmodels.stats.proportion import proportion_confint

    folder = tmp_path / "run"
    folder.mkdir()
    with RowsWriter(folder) as writer:
        for config, s in itertools.product(range(12), range(8)):
            passed = (s + config) % 8 < (6 if config == 0 else 4)
            writer.write(row(persona=PERSONAS[config % 3], temperature=config / 10,
                             config_hash=f"c{config:02d}", scenario=f"s{s}", repeat=1,
                             status="ok" if passed else "failed"))
    write_meta(folder, {"grid_name": "g", "status": "finished",
                        "created": "2026-01-01T00:00:00+00:00"})
    text = write_report(folder, charts=False).read_text()
    low, high = proportion_confint(6, 8, alpha=0.05 / 12, method="beta")
    alone, _ = proportion_confint(6, 8, alpha=0.05, method="beta")
    best = next(line for line in text.splitlines() if line.startswith("- **Best config"))
    assert f"75% ({low * 100:.0f}–{high:.0%} with 95% confidence held at once by all 12" in best
    assert "allows for having picked it" in best and low < alone


@pytest.mark.slow
def test_the_winners_rate_covers_the_truth_when_twelve_configurations_are_equal():
    """12 equal configurations (true rate 0.5), 6 scenarios: the picked best's simultaneous
    interval covers 0.5 in at least 93% of studies (its own 95% interval did 78-90%)."""
    rng = np.random.default_rng(8)
    covered = 0
    for _ in range(300):
        outcome = rng.random((12, 6)) < 0.5
        df = pd.DataFrame([{"scenario": f"s{s}", "repeat": 0, "config_hash": f"c{c:02d}",
                            "status": "ok" if outcome[c, s] else "failed",
                            "success": float(outcome[c, s])}
                           for c in range(12) for s in range(6)])
        rates = findings.rate_table(df, {f"c{c:02d}": f"c{c:02d}" for c in range(12)})
        best = rates.sort_values(["rate", "label"], ascending=[False, True]).iloc[0]
        covered += best["all_low"] <= 0.5 <= best["all_high"]
    assert covered / 300 >= 0.93


def null_sweep(rng: np.random.Generator, scenarios: int = 6) -> pd.DataFrame:
    """Rows with no true difference anywhere: 3 personas x 2 models x 2 temperatures x 2
    repeats, scenarios of varied difficulty."""
    difficulty = rng.normal(0.0, 1.5, scenarios)
    rows = []
    for s, persona, model, t, r in itertools.product(range(scenarios), PERSONAS, ("m1", "m2"),
                                                     (0.0, 0.7), range(2)):
        ok = rng.random() < 1 / (1 + math.exp(-difficulty[s]))
        rows.append({"scenario": f"s{s}", "repeat": r, "persona": persona, "model_name": model,
                     "temperature": t, "config_hash": f"{persona}{model}{t}",
                     "status": "ok" if ok else "failed", "success": float(ok)})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_a_report_with_no_true_difference_claims_one_at_most_5_percent_of_the_time():
    """Every factor's levels and the best against the rest form one family: with nothing
    there, some claim appears in at most 5% of reports (per factor it was 9-16%)."""
    rng = np.random.default_rng(33)
    studies, claimed = 160, 0
    for _ in range(studies):
        df = null_sweep(rng)
        labels = {h: h for h in df["config_hash"].unique()}
        found = (findings.effect_table(df)["significant"].any()
                 or findings.winner_table(df, labels)["significant"].any())
        claimed += bool(found)
    assert claimed / studies <= 0.05


def test_the_effects_table_keeps_its_contract_and_its_intervals_match_its_p_values(tmp_path):
    run = crossed_run(tmp_path / "run", 12, lambda p, s: p == "technical" and s < 8)
    write_report(run, charts=False)
    with (run / "effects.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {"factor", "level", "reference", "effect", "ci_low", "ci_high", "mdd"} <= set(rows[0])
    for r in rows:
        excludes = float(r["ci_low"]) > 0 or float(r["ci_high"]) < 0
        assert excludes == (float(r["p_adjusted"]) < 0.05) == (r["significant"] == "True")
    assert any(r["significant"] == "True" for r in rows)


def test_which_persona_is_best_is_tested_between_every_pair_of_levels(tmp_path):
    """Technical passes everything, friendly and cautious fail the same 8 of 12 scenarios:
    technical is shown above friendly too, though neither is the first level, and is named
    the best persona; friendly and cautious are not told apart."""
    run = crossed_run(tmp_path / "run", 12, lambda p, s: p != "technical" and s < 8)
    text = write_report(run, charts=False).read_text()
    table = effects(run).set_index(["factor", "level", "reference"])
    assert table.loc[("persona", "technical", "friendly"), "significant"]
    assert not table.loc[("persona", "friendly", "cautious"), "significant"]
    effect_line = next(line for line in text.splitlines() if "Factor effects (" in line)
    assert "technical vs friendly +67 pts" in effect_line
    assert "Best persona: technical, above every other level." in effect_line
