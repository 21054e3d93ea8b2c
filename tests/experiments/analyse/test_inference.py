"""Scenario-level intervals: exact rates, differences whose precision comes from the number of
scenarios even when they all agree, unbounded means that never fake precision, the power a
grid has, and the one family a report's claims share."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from experiments.analyse import inference, power
from experiments.analyse.family import BEST, EFFECTS, STYLE, Family
from experiments.analyse.inference import MIN_SCENARIOS, TOO_FEW, differences, level_mean


def cases(scenarios: int, repeats: int, passed: int) -> pd.DataFrame:
    """scenarios x repeats cases of one configuration, the first `passed` of them successes
    (filled scenario by scenario)."""
    rows = [{"scenario": f"s{s}", "repeat": r} for s in range(scenarios) for r in range(repeats)]
    return pd.DataFrame(rows).assign(success=[float(i < passed) for i in range(len(rows))])


def compared(d, alpha: float = 0.05) -> dict[str, float]:
    """One contrast's result from its per-scenario differences (no errors)."""
    d = np.asarray([d], dtype=float)
    return {k: float(v[0]) for k, v in differences(d, d, d, [alpha]).items()}


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (0, 10, 0.0, 0.308497), (10, 10, 0.691503, 1.0), (8, 10, 0.443905, 0.974789),
    (23, 23, 0.851815, 1.0)])
def test_rates_are_exact_clopper_pearson_over_scenarios(k, n, low, high):
    assert level_mean(cases(n, 1, k)).low == pytest.approx(low, abs=1e-6)
    assert level_mean(cases(n, 1, k)).high == pytest.approx(high, abs=1e-6)


def test_rate_intervals_are_monotone_in_successes_and_count_scenarios():
    almost, every = level_mean(cases(23, 3, 68)), level_mean(cases(23, 3, 69))
    assert almost.low <= every.low and almost.high <= every.high
    assert every.low == pytest.approx(0.852, abs=1e-3)  # 23 of 23 scenarios: not certainty
    bounds = [level_mean(cases(8, 3, k)) for k in range(25)]
    assert all(a.low <= b.low and a.high <= b.high for a, b in itertools.pairwise(bounds))
    # Ten repeats of five scenarios are five observations, not fifty.
    assert level_mean(cases(5, 10, 30)).low < 0.2


@pytest.mark.thorough
def test_rates_at_4_scenarios_cover_at_least_95_percent_at_t0():
    """0/1 scenario means (T = 0 only) at 4 scenarios: the exact interval covers the true rate
    at every rate (Wilson's dips to 84% at some)."""
    from scipy import stats

    worst = 1.0
    for rate in np.linspace(0.01, 0.99, 99):
        found = [level_mean(cases(4, 1, k)) for k in range(5)]
        hits = [f.low <= rate <= f.high for f in found]
        worst = min(worst, float(np.sum(stats.binom.pmf(range(5), 4, rate) * hits)))
    assert worst >= 0.95


def test_agreeing_scenarios_leave_a_difference_open_by_their_number_not_their_cells():
    every = compared(np.zeros(23))
    # Exactly the binomial bound: 1 - 0.025 ** (1 / 23) of scenarios could differ unseen.
    assert every["low"] == pytest.approx(-(1 - 0.025 ** (1 / 23)))
    assert every["high"] == -every["low"]
    assert compared(np.zeros(10))["high"] > 0.25  # fewer scenarios, wider
    # 23 agreeing scenarios cannot show a difference that exists on a tenth of scenarios.
    assert compared(np.zeros(23))["high"] > 0.10


def test_a_sparse_difference_at_the_ceiling_is_covered_by_simulation():
    """Persona B fails outright a share of scenarios that persona A passes (all else passes):
    the interval covers the true difference at least 95% of the time, at 23 scenarios."""
    rng = np.random.default_rng(5)
    for share in (0.05, 0.10, 0.15):
        found = rng.random((2000, 23)) < share
        d = -found.astype(float)
        result = differences(d, d, d, np.full(len(d), 0.05))
        hits = (result["low"] <= -share) & (-share <= result["high"])
        assert hits.mean() >= 0.95, (share, hits.mean())


def test_two_of_23_failing_is_not_ruled_out():
    d = np.zeros(23)
    d[:2] = -1.0
    found = compared(d)
    assert found["value"] == pytest.approx(-2 / 23) and found["low"] < -0.2 < 0 < found["high"]


def test_a_100_point_difference_needs_more_than_4_scenarios():
    """4 of 4 scenarios going one way happens 1 time in 8 by chance (a sign test's p = 0.125):
    the report does not call it shown; 8 of 8 (p = 0.008) it does."""
    assert compared(np.ones(4))["low"] < 0 < compared(np.ones(8))["low"]
    assert compared(np.ones(8))["p"] < 0.05 < compared(np.ones(4))["p"]


def test_p_values_are_the_level_at_which_the_interval_leaves_out_zero():
    rng = np.random.default_rng(2)
    for _ in range(20):
        d = np.clip(rng.normal(0.2, 0.4, 12), -1, 1)
        p = compared(d)["p"]
        assert compared(d, p * 1.01)["low"] > 0 >= compared(d, p * 0.99)["low"]


def test_an_errored_case_may_have_been_a_pass_or_a_fail():
    estimate = np.zeros((1, 10))
    worst, best = estimate.copy(), estimate.copy()
    worst[0, :3], best[0, :3] = -1.0, 1.0  # 3 scenarios' cases errored on one side
    found = differences(estimate, worst, best, [0.05])
    plain = differences(estimate, estimate, estimate, [0.05])
    assert found["low"][0] < plain["low"][0] and found["high"][0] > plain["high"][0]


def test_unbounded_means_that_agree_get_no_interval_and_counts_stay_at_or_above_zero():
    value, low, high = inference.mean_interval([0.0] * 6, count=True)
    assert value == 0.0 and math.isnan(low) and math.isnan(high)
    _, low, _ = inference.mean_interval([0, 0, 0, 0, 0, 0.3], count=True)
    assert low == 0.0
    words = cases(5, 2, 0).assign(words=12.0)
    found = level_mean(words, "words", bounds=None, count=True)
    assert found.value == 12.0 and not found.has_interval and "same value" in found.note


def test_judge_scores_on_agreeing_scenarios_are_not_certain():
    scores = cases(5, 2, 0).assign(judge_score=2.0)
    found = level_mean(scores, "judge_score", bounds=(1.0, 5.0))
    assert found.value == 2.0 and found.low < 2.0 < found.high


def test_too_few_scenarios_gives_no_interval():
    found = level_mean(cases(MIN_SCENARIOS - 1, 3, 9))
    assert found.value == 1.0 and not found.has_interval and TOO_FEW in found.note
    assert math.isnan(compared(-np.ones(3))["low"]) and math.isnan(compared(-np.ones(3))["p"])


def test_the_stated_detectable_difference_is_found_80_percent_of_the_time():
    """At the ceiling, the detectable share of scenarios failing outright is found with 80%
    power by the very interval the report uses; half of it far less often."""
    share = power.failing_share_detectable(23, 0.05)
    assert 0.1 < share < 0.4
    assert power.failing_share_power(23, share, 0.05) == pytest.approx(0.8, abs=0.01)
    assert power.failing_share_power(23, share / 2, 0.05) < 0.5
    shift = power.shift_detectable(16, 0.09, 0.05)
    rng = np.random.default_rng(9)
    d = np.clip(rng.normal(shift, 0.3, (3000, 16)), -1, 1)
    found = differences(d, d, d, np.full(3000, 0.05))
    assert (found["low"] > 0).mean() == pytest.approx(0.8, abs=0.05)


def test_scenarios_needed_grow_with_a_smaller_difference_and_a_stricter_level():
    ten = power.scenarios_needed(0.10, 0.3, 0.05)
    assert ten["shift"] > power.scenarios_needed(0.20, 0.3, 0.05)["shift"]
    assert power.scenarios_needed(0.10, 0.3, 0.005)["shift"] > ten["shift"]
    assert ten["failing share"] > 20


def test_one_family_splits_the_error_rate_and_keeps_decisions_and_intervals_together():
    family = Family({EFFECTS: 6, BEST: 8, STYLE: 15}, configurations=9, scenarios=23)
    assert family.level(EFFECTS) == pytest.approx(0.05 / 3 / 6)
    assert family.level(STYLE) == pytest.approx(0.05 / 3 / 15)
    # Picking the best of 9 costs more than one comparison, less than all 36 pairs' Bonferroni.
    assert 0.05 / 3 / 36 < family.level(BEST) < 0.05 / 3 / 8
    level = family.level(EFFECTS)
    assert family.adjusted(EFFECTS, level * 0.99) < 0.05 < family.adjusted(EFFECTS, level * 1.01)
    assert "at most 5%" in family.sentence() and "29 comparisons" in family.sentence()
    assert "no claim" in Family(scenarios=2).sentence()
