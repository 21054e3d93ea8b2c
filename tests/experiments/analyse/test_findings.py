"""What a run's rows support: design lines, factor effects with errors accounted for, persona
style on scenario means, and two runs paired by the factor they differ in."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from experiments.analyse.findings import analyse, effect_table, style_tables
from experiments.analyse.limits import design_lines, error_lines
from experiments.analyse.pairing import NothingToPair, pair_runs, scenario_hashes

PERSONAS = ("friendly", "technical", "cautious")


def rows(scenarios: int, models: tuple[str, ...], passed, *, temperatures=(0.0,),
         personas=PERSONAS, repeats: int = 3, status=None) -> pd.DataFrame:
    """Rows as the report reads them; `passed(case)` and `status(case)` script each case."""
    found = []
    for s, p, m, t, r in itertools.product(range(scenarios), personas, models, temperatures,
                                           range(repeats)):
        case = {"scenario": f"s{s}", "persona": p, "model_label": m, "model_name": m,
                "model_spec": m,
                "temperature": t, "repeat": r, "variation": "baseline", "strategy": "react"}
        state = (status(case) if status else None) or ("ok" if passed(case) else "failed")
        found.append({**case, "config_hash": f"{p}|{m}|{t}", "status": state,
                      "success": state == "ok", "judge_score": math.nan,
                      "answer": f"{s}{p}{m}" + ("" if t == 0 else f"{r}"),
                      "response_words": 40 + 25 * (p == "technical") + (s * 7 + r + len(p)) % 5})
    return pd.DataFrame(found)


def labels(df: pd.DataFrame) -> dict[str, str]:
    return {h: h for h in df["config_hash"].unique()}


def readme_study() -> pd.DataFrame:
    return rows(4, ("offline", "local:smollm2"), lambda c: c["model_label"] == "offline",
                temperatures=(0.0, 0.7, 1.0))


def test_the_readme_study_says_what_4_scenarios_cannot_show():
    """Offline passes every case, SmolLM2 none, over 4 scenarios: the 100-point difference gets
    an interval, but 4 of 4 scenarios going one way happens 1 time in 8 by chance, so it is not
    claimed; 16 scenarios show it."""
    df = readme_study()
    found = analyse(df, labels(df))
    model = found.effects[found.effects["factor"] == "model"].iloc[0]
    assert abs(model["effect"]) == 1.0 and not model["significant"]
    assert model["ci_high"] - model["ci_low"] > 1.0
    lines = design_lines(df, found)
    assert lines[0].startswith("The unit is the scenario: 4 scenarios x 18 configuration(s)")
    assert "effective n = 4 per configuration" in lines[0]
    assert "T = 0: repeats identical in all 24 cells; effective n = scenarios (4)" in lines
    shown = next(line for line in lines if line.startswith("Differences this grid finds"))
    assert "none up to 100 points for model" in shown and "may still be there" in shown
    assert "cannot show a smaller one" not in " ".join(lines)
    more = rows(16, ("offline", "local:smollm2"), lambda c: c["model_label"] == "offline")
    model = effect_table(more).set_index("factor").loc["model"]
    assert model["significant"] and model["ci_low"] > 0


def test_two_identical_flaky_models_show_no_difference_and_a_warning():
    def status(case):
        on_injection = case["scenario"] == "s0"
        return "error" if (case["model_label"] == "flaky-a") == on_injection else None

    df = rows(5, ("flaky-a", "flaky-b"), lambda c: True, personas=("friendly",), status=status)
    model = effect_table(df).iloc[0]
    assert not model["significant"] and math.isnan(model["effect"]) and math.isnan(
        model["ci_low"])
    assert model["left_out"] == 15 and "no scenario answered" in model["note"]
    warnings = error_lines(df, labels(df))
    assert any(w.startswith("Warning: 15 of 30 cases errored") for w in warnings)
    assert any("flaky-a: 3 errored in 1 scenario(s); flaky-b: 12 errored in 4" in w
               and "use the 0 cases every level answered" in w for w in warnings)


def test_errors_on_one_side_are_compared_on_the_cases_both_answered():
    def status(case):
        return "error" if case["model_label"] == "b" and case["scenario"] in ("s0", "s1") \
            else None

    df = rows(8, ("a", "b"), lambda c: c["scenario"] not in ("s0", "s1"), status=status)
    effects = effect_table(df)
    model = effects[effects["factor"] == "model"].iloc[0]
    # Both models fail s0 and s1 (a on them, b errored): on what both answered they are equal,
    # but b's errors may have hidden passes on s0 and s1, so the interval reaches up.
    assert model["effect"] == 0.0 and not model["significant"]
    assert model["left_out"] == 2 * 3 * 3 and model["pairs"] == 6 * 3 * 3
    assert model["ci_high"] > 0.25


def test_persona_style_is_tested_on_scenario_means_every_pair():
    means, pairs = style_tables(rows(8, ("offline", "local:smollm2"),
                                     lambda c: c["model_label"] == "offline"))
    words = means[means["column"] == "response_words"].set_index("persona")
    assert words.loc["technical", "differs"] and words.loc["friendly", "differs"]
    assert words.loc["technical", "scenarios"] == 8 and words.loc["technical", "cases"] == 48
    assert words.loc["cautious", "ci_low"] < words.loc["cautious", "mean"]
    pairs = pairs[pairs["column"] == "response_words"].set_index(["level", "reference"])
    assert len(pairs) == 3 and pairs.loc[("technical", "friendly"), "significant"]
    assert not pairs.loc[("friendly", "cautious"), "significant"]


def test_judge_errors_leave_only_the_judge_score_out():
    df = readme_study().assign(judge_score=lambda d: np.where(d["persona"] == "cautious", 2, 4))
    df.loc[df.index[:5], "status"] = "judge_error"
    df.loc[df.index[:5], "judge_score"] = math.nan
    judge = style_tables(df)[0]
    judge = judge[judge["column"] == "judge_score"].set_index("persona")
    assert judge.loc["cautious", "mean"] == 2.0 and judge.loc["cautious", "ci_low"] < 2.0
    assert any(line.startswith("Judge errors: 5 case(s)") for line in error_lines(df, {}))


def test_a_t0_run_and_a_t07_run_are_paired():
    cold = rows(5, ("offline", "smol"), lambda c: c["model_label"] == "offline")
    warm = rows(5, ("offline", "smol"), lambda c: c["model_label"] == "offline"
                and c["scenario"] != "s0", temperatures=(0.7,))
    found = pair_runs(cold, warm)
    assert found.differing == {"temperature": ([0.0], [0.7])}
    assert found.keys == ["persona", "model", "variation", "strategy"]
    assert found.overall.pairs == 5 * 3 * 2 * 3 and found.overall.scenarios == 5
    assert found.overall.value == pytest.approx(-0.1)
    assert len(found.table) == 6 and found.rate_a == 0.5


def test_changed_scenarios_are_left_out_and_nothing_to_pair_is_refused():
    first = rows(4, ("m",), lambda c: True)
    second = rows(4, ("m",), lambda c: c["scenario"] != "s3")
    hashes = scenario_hashes([{"id": f"s{i}", "turns": ["hi"]} for i in range(4)])
    edited = {**hashes, "s3": scenario_hashes([{"id": "s3", "turns": ["other"]}])["s3"]}
    found = pair_runs(first, second, hashes, edited)
    assert found.overall.value == 0.0 and found.overall.scenarios == 3
    assert any("definition differs" in note and "s3" in note for note in found.notes)
    moved = second.assign(scenario=lambda d: "new-" + d["scenario"])
    with pytest.raises(NothingToPair, match="share no scenario"):
        pair_runs(first, moved)
