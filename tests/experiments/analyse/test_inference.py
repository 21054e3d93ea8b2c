"""Scenario-level inference: intervals that behave, effects that find what is there and only
that, identical repeats, paired runs and errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from experiments.analyse import inference
from experiments.analyse.inference import (
    MIN_SCENARIOS,
    TOO_FEW,
    best_vs_rest,
    contrast,
    effects,
    level_mean,
    minimum_detectable,
    paired_runs,
    repeat_agreement,
    repeat_notices,
)


def cases(scenarios: int, repeats: int, passed: int) -> pd.DataFrame:
    """scenarios x repeats cases of one configuration, the first `passed` of them successes
    (filled scenario by scenario)."""
    rows = [{"scenario": f"s{s}", "repeat": r} for s in range(scenarios) for r in range(repeats)]
    return pd.DataFrame(rows).assign(success=[float(i < passed) for i in range(len(rows))])


def grid(scenarios: int, outcome, repeats: int = 3, **levels: list) -> pd.DataFrame:
    """A crossed sweep: every scenario x level combination x repeat, `outcome(row)` its value."""
    names = ["scenario", *levels, "repeat"]
    rows = [dict(zip(names, combo, strict=True)) for combo in itertools.product(
        [f"s{s}" for s in range(scenarios)], *levels.values(), range(repeats))]
    df = pd.DataFrame(rows)
    return df.assign(success=[float(outcome(r)) for r in df.to_dict("records")])


def readme_study() -> pd.DataFrame:
    """The README's local study: offline passes everything, SmolLM2 nothing, 4 scenarios x
    3 personas x 3 temperatures x 3 repeats."""
    return grid(4, lambda r: r["model"] == "offline", persona=["friendly", "technical",
                                                               "cautious"],
                model=["offline", "local:smollm2"], temperature=[0.0, 0.7, 1.0])


def test_rate_intervals_are_monotone_in_successes():
    almost, every = level_mean(cases(23, 3, 68)), level_mean(cases(23, 3, 69))
    assert almost.low <= every.low and almost.high <= every.high
    assert every.low < 0.9  # 23 scenarios all passing do not make the rate certain
    five, six = level_mean(cases(6, 1, 5)), level_mean(cases(6, 1, 6))
    assert five.low <= six.low and five.high <= six.high
    bounds = [level_mean(cases(8, 3, k)) for k in range(25)]
    assert all(a.low <= b.low and a.high <= b.high for a, b in itertools.pairwise(bounds))


def test_intervals_hold_their_estimate_and_have_width():
    rng = np.random.default_rng(3)
    for _ in range(30):
        df = grid(6, lambda r: rng.random() < 0.7, model=["a", "b"])
        rate = level_mean(df)
        effect = contrast(df, "model", "b", "a")
        for found in (rate, effect):
            assert found.low <= found.value <= found.high and found.high > found.low
    agreeing = level_mean(cases(MIN_SCENARIOS, 3, 3 * MIN_SCENARIOS))
    assert agreeing.value == 1.0 and agreeing.high - agreeing.low > 0.2


def test_judge_scores_on_agreeing_scenarios_are_not_certain():
    scores = cases(5, 2, 0).assign(judge_score=2.0)
    found = level_mean(scores, "judge_score", bounds=(1.0, 5.0))
    assert found.value == 2.0 and found.low < 2.0 < found.high


def test_too_few_scenarios_gives_no_interval():
    found = level_mean(cases(MIN_SCENARIOS - 1, 3, 9))
    assert found.value == 1.0 and not found.has_interval and TOO_FEW in found.note
    effect = contrast(grid(2, lambda r: r["model"] == "a", model=["a", "b"]), "model", "b", "a")
    assert effect.value == -1.0 and not effect.has_interval


def test_a_real_100_point_difference_on_4_scenarios_is_found_with_an_interval():
    table = effects(readme_study(), ["persona", "model", "temperature"])
    model = table[table["factor"] == "model"].iloc[0]
    assert (model["level"], model["reference"]) == ("offline", "local:smollm2")
    assert model["effect"] == 1.0 and model["significant"]
    assert 0.5 < model["ci_low"] < model["ci_high"] == 1.0
    others = table[table["factor"] != "model"]
    assert not others["significant"].any()
    assert (others["ci_high"] - others["ci_low"] > 0).all()  # no difference, still a width


def test_null_studies_do_not_over_claim():
    rng = np.random.default_rng(20)
    claims = 0
    for _ in range(100):
        difficulty = dict(zip([f"s{s}" for s in range(6)], rng.normal(0, 1.5, 6), strict=True))
        df = grid(6, lambda r, d=difficulty: rng.random() < 1 / (1 + math.exp(-d[r["scenario"]])),
                  repeats=2, persona=["p", "q", "r"], model=["a", "b"])
        table = effects(df, ["persona", "model"])
        claims += table.groupby("factor")["significant"].any().sum()
    assert claims <= 16  # of 200 factor families, 5% each: 10 expected, 16 is 2 sd above


def test_identical_repeats_add_nothing():
    df = readme_study().assign(answer=lambda d: d["scenario"] + d["model"] + d["persona"])
    df.loc[df["temperature"] > 0, "answer"] += df["repeat"].astype(str)
    df["config"] = df["persona"] + df["model"] + df["temperature"].astype(str)
    agreement = repeat_agreement(df, "config", ["answer"], "temperature")
    assert repeat_notices(agreement) == [
        "T = 0: repeats identical in all 24 cells; effective n = scenarios (4)"]
    one = effects(df[df["repeat"] == 0], ["persona", "model", "temperature"])
    three = effects(df, ["persona", "model", "temperature"])
    counts = ["pairs", "left_out"]
    assert (three["pairs"] == 3 * one["pairs"]).all()
    pd.testing.assert_frame_equal(one.drop(columns=counts), three.drop(columns=counts))


def test_minimum_detectable_difference_shrinks_with_scenarios():
    found = [minimum_detectable(g, 0.3) for g in range(MIN_SCENARIOS, 21)]
    assert all(a > b for a, b in itertools.pairwise(found))
    assert found[0] > 0.4 and found[-1] < 0.25
    assert minimum_detectable(8, 0.6) == pytest.approx(2 * minimum_detectable(8, 0.3))


def test_best_vs_rest_allows_for_picking_the_best():
    equal = grid(6, lambda r: r["scenario"] in ("s0", "s1", "s2"), config=list("abcdef"))
    assert not best_vs_rest(equal, "config")["significant"].any()
    clear = grid(17, lambda r: r["config"] == "b", repeats=1, config=["a", "b", "c"])
    table = best_vs_rest(clear, "config")
    assert (table["best"] == "b").all() and table["significant"].all()
    assert (table["ci_low"] > 0).all() and (table["ci_high"] <= 1).all()


def test_paired_runs_pair_on_scenario_repeat_and_the_shared_factors():
    study = readme_study()
    cold = study[study["temperature"] == 0.0].drop(columns="temperature")
    warm = study[study["temperature"] == 0.7].drop(columns="temperature")
    warm = warm.assign(success=np.where(warm["scenario"] == "s0", 0.0, warm["success"]))
    found = paired_runs(cold, warm, ["persona", "model"])
    assert found.pairs == 4 * 3 * 2 * 3 and found.unmatched == 0
    assert found.value == pytest.approx(-0.5 / 4) and found.scenarios == 4


def test_errors_compare_on_the_cases_both_answered():
    flaky = grid(5, lambda r: True, model=["flaky-a", "flaky-b"]).astype({"success": float})
    flaky.loc[(flaky["model"] == "flaky-a") & (flaky["scenario"] == "s0"), "success"] = math.nan
    flaky.loc[(flaky["model"] == "flaky-b") & (flaky["scenario"] != "s0"), "success"] = math.nan
    found = contrast(flaky, "model", "flaky-b", "flaky-a")
    assert found.scenarios == 0 and found.pairs == 0 and not found.has_interval
    assert found.unmatched == 5 * 3
    table = effects(flaky, ["model"])
    assert not table["significant"].any()


def test_holm_matches_its_definition():
    assert inference.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
