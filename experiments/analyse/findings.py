"""What a run's rows can support: its design, factor effects, the best against the rest, errors."""

from __future__ import annotations

import math
from typing import Any

from experiments.analyse import inference
from experiments.analyse.inference import MIN_SCENARIOS, PROPORTION

# Grid factors and the column each is read from; one that is absent or never varies is skipped.
# A local model's own settings (decoding, its routing) are factors apart from the model.
FACTORS = {"persona": "persona", "model": "model_name", "temperature": "temperature",
           "variation": "variation", "strategy": "strategy", "decoding": "decoding",
           "model_routing": "model_routing", "grounding": "grounding", "routing": "routing"}
# A local model's own settings: blank for other models.
MODEL_SETTINGS = ("decoding", "model_routing", "grounding")
# Outcomes reported as rates when the rows carry them (capability and safety split the checks).
OUTCOMES = {"success": "task success", "capability_success": "capability",
            "safety_success": "safe behaviour"}
STYLE = {"response_words": "words", "hedges": "hedging words", "questions": "questions asked",
         "numbers": "numbers given", "units": "numbers with units"}
JUDGE = ("judge_score", "judge score (1-5)", (1.0, 5.0))
# Above this share of errored cases a configuration's numbers rest on what it happened to
# answer; the report warns.
ERROR_WARNING = 0.10
ERROR, JUDGE_ERROR = "error", "judge_error"
KEY = ("scenario", "repeat")


def varying(df: Any) -> dict[str, str]:
    """The grid factors this run varied: name -> column."""
    return {name: column for name, column in FACTORS.items()
            if column in df and df[column].nunique(dropna=True) > 1}


def values(df: Any, column: str) -> Any:
    """The rows as inference reads them: scenario, repeat, config, each factor under its name,
    and `value` (NaN where the case errored, or the judge did for a judge measure)."""
    import pandas as pd

    value = pd.to_numeric(df[column], errors="coerce").astype(float)
    void = df["status"].eq(ERROR) | (df["status"].eq(JUDGE_ERROR) & (column == JUDGE[0]))
    factors = {name: df[col] for name, col in FACTORS.items() if col in df}
    return pd.DataFrame({"scenario": df["scenario"], "repeat": df["repeat"],
                         "config": df["config_hash"], **factors,
                         "value": value.where(~void)})


def answered_by_all(frame: Any, factor: str, others: list[str]) -> tuple[Any, int]:
    """The answered cases whose scenario, repeat and other factors were answered at every
    level of `factor` that ran with them (so errors on one side do not tilt the comparison),
    and how many answered cases the errors leave out."""
    keys = [*KEY, *others]
    ran = frame.groupby(keys, dropna=False)[factor].transform("nunique")
    answered = frame["value"].notna()
    levels = frame[answered].groupby(keys, dropna=False)[factor].transform("nunique")
    complete = levels == ran[answered]
    return frame[answered][complete], int((~complete).sum())


def effect_table(df: Any, column: str = "success",
                 bounds: tuple[float, float] | None = PROPORTION) -> Any:
    """Every varied factor's levels against its first, adjusted for the others and compared
    on the cases all its levels answered, with what the grid could have detected (mdd)."""
    import pandas as pd

    frame, factors = values(df, column), list(varying(df))
    rows = []
    for factor in factors:
        # A model's effect is over its own settings (averaged): other models have none.
        others = [f for f in factors
                  if f != factor and not (factor == "model" and f in MODEL_SETTINGS)]
        common, left_out = answered_by_all(frame, factor, others)
        levels = inference.levels(frame, factor)
        for row in inference.factor_effect(common, factor, others, "value", bounds, levels):
            sd = row["se"] * math.sqrt(row["scenarios"]) if row["scenarios"] else math.nan
            if not row["pairs"] and not left_out and others:
                row["note"] = (f"not separable: its levels never ran with the same "
                               f"{', '.join(others)} (they changed together)")
            rows.append({**row, "left_out": left_out, "mdd": _mdd(row["scenarios"], sd)})
    return pd.DataFrame(rows, columns=[*inference.EFFECT_COLUMNS, "mdd"])


def _mdd(scenarios: int, sd: float, critical: float | None = None) -> float:
    if scenarios < MIN_SCENARIOS or math.isnan(sd):
        return math.nan
    return inference.minimum_detectable(scenarios, sd, critical)


def winner_table(df: Any, labels: dict[str, str]) -> Any:
    """The best configuration against each other one (adjusted for picking the best), with
    each contrast's minimum detectable difference."""
    frame = values(df, "success").assign(config=lambda f: f["config"].map(labels))
    table = inference.best_vs_rest(frame, "config", "value")
    if table.empty:
        return table.assign(mdd=[])
    configurations = frame["config"].nunique()
    table["mdd"] = [_mdd(int(r.scenarios), r.se * math.sqrt(r.scenarios),
                         inference.picked_best_point(configurations, int(r.scenarios))
                         / math.sqrt(2)) if r.scenarios >= MIN_SCENARIOS else math.nan
                    for r in table.itertuples()]
    return table


def style_table(df: Any) -> Any:
    """Each style measure and the judge's score by persona on scenario means: a mean with its
    interval per persona, and each persona against the first adjusted for the other factors."""
    import pandas as pd

    measures = [(c, name, None) for c, name in STYLE.items()] + [JUDGE]
    factors = [f for f in varying(df) if f != "persona"]
    rows = []
    for column, name, bounds in measures:
        if column not in df or df[column].dropna().empty or df["persona"].nunique() < 2:
            continue
        frame = values(df, column)
        common, _ = answered_by_all(frame, "persona", factors)
        against = {r["level"]: r for r in inference.factor_effect(common, "persona", factors,
                                                                   "value", bounds)}
        for persona, group in frame.groupby("persona"):
            mean = inference.level_mean(group, "value", bounds)
            effect = against.get(persona, {})
            rows.append({"measure": name, "column": column, "persona": persona,
                         "cases": int(group["value"].notna().sum()),
                         "scenarios": mean.scenarios, "mean": mean.value,
                         "ci_low": mean.low, "ci_high": mean.high,
                         "vs": effect.get("reference", ""),
                         **{k: effect.get(k, math.nan) for k in
                            ("effect", "p_holm")},
                         "effect_low": effect.get("ci_low", math.nan),
                         "effect_high": effect.get("ci_high", math.nan),
                         "significant": bool(effect.get("significant", False))})
    return pd.DataFrame(rows, columns=STYLE_COLUMNS)


STYLE_COLUMNS = ["measure", "column", "persona", "cases", "scenarios", "mean", "ci_low",
                 "ci_high", "vs", "effect", "p_holm", "effect_low", "effect_high",
                 "significant"]


def repeat_lines(df: Any) -> list[str]:
    """'T = 0: repeats identical ...' for each temperature whose repeats gave the same answer
    (same text and outcome) in every cell."""
    answered = df[df["status"] != ERROR]
    if answered["repeat"].nunique() < 2:
        return []
    agreement = inference.repeat_agreement(answered, "config_hash", ["answer", "success"],
                                           "temperature")
    return inference.repeat_notices(agreement)


def design_lines(df: Any, effects: Any, winner: Any) -> list[str]:
    """What the grid can and cannot show, stated before any result: the unit, effective n,
    identical repeats and the smallest differences it can detect."""
    scenarios, configs = df["scenario"].nunique(), df["config_hash"].nunique()
    lines = [f"The unit is the scenario: {scenarios} scenarios x {configs} configuration(s) x "
             f"{df['repeat'].nunique()} repeat(s) = {len(df)} cases. Every interval and test "
             f"counts scenarios, not cases: effective n = {scenarios} per configuration."]
    lines += repeat_lines(df)
    if scenarios < MIN_SCENARIOS:
        return [*lines, f"Too few scenarios ({scenarios} < {MIN_SCENARIOS}): no interval or "
                "test is given, and this grid cannot show any difference."]
    worst = effects.groupby("factor", sort=False)["mdd"].max().dropna()
    parts = [f"{_points(mdd)} for {factor}" for factor, mdd in worst.items()]
    if "mdd" in winner and len(single := winner["mdd"].dropna()):
        parts.append(f"{_points(single.median())} between two single configurations")
    if parts:
        lines.append("Smallest differences this grid can show (80% power at the 5% level, if "
                     "the scenarios vary as much as they did here): " + "; ".join(parts)
                     + ". It cannot show a smaller one.")
    lines.append("Effects are averages over these scenarios: a factor that helps on some and "
                 "hurts on others shows as little or no effect.")
    return lines


def _points(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return "none up to 100 points" if value >= 1 else f"about {value * 100:.0f} points"


def error_lines(df: Any, labels: dict[str, str]) -> list[str]:
    """Errors that change a comparison: the share overall, configurations above
    ERROR_WARNING, factors whose levels errored differently, and judge errors."""
    errored = df["status"].eq(ERROR)
    lines = []
    if errored.mean() > ERROR_WARNING:
        lines.append(f"Warning: {errored.sum()} of {len(df)} cases errored "
                     f"({errored.mean():.0%}); every result rests on what was answered.")
    shares = errored.groupby(df["config_hash"]).agg(["sum", "size"])
    high = shares[shares["sum"] > ERROR_WARNING * shares["size"]]
    if len(high):
        lines.append(f"Warning: {len(high)} configuration(s) errored on more than "
                     f"{ERROR_WARNING:.0%} of their cases: " + "; ".join(
                         f"{labels.get(h, h)} ({r['sum']} of {r['size']})"
                         for h, r in high.head(6).iterrows()) + ".")
    for name, column in varying(df).items():
        if text := _factor_errors(df, errored, name, column):
            lines.append(text)
    if judge := int(df["status"].eq(JUDGE_ERROR).sum()):
        lines.append(f"Judge errors: {judge} case(s) have no judge score because the judge "
                     "failed; judge measures leave them out.")
    return lines


def _factor_errors(df: Any, errored: Any, name: str, column: str) -> str:
    per_level = {level: (int(errored[group.index].sum()),
                         frozenset(group.loc[errored[group.index], "scenario"]))
                 for level, group in df.groupby(column)}
    if len({count for count, _ in per_level.values()}) < 2 and \
            len({where for _, where in per_level.values()}) < 2:
        return ""
    others = [n for n in varying(df) if n != name]
    common, left_out = answered_by_all(values(df, "success"), name, others)
    return (f"{name}: errors differ between levels ("
            + "; ".join(f"{level}: {count} errored in {len(where)} scenario(s)"
                        for level, (count, where) in per_level.items())
            + f"); its comparisons use the {len(common)} cases every level answered, "
            f"leaving out {left_out} answered case(s).")
