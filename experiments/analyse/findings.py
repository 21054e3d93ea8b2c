"""What a run's rows can support: every pair of each factor's levels, the best configuration
against the rest and its own rate, persona style, all in one family (family.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments.analyse import cube, inference, power
from experiments.analyse.family import BEST, EFFECTS, STYLE, Family, pairs
from experiments.analyse.inference import ALPHA, EFFECT_METHOD, MIN_SCENARIOS, TOO_FEW

# Grid factors and the column each is read from; one that is absent or never varies is skipped.
# A local model's own settings (decoding, its routing) are factors apart from the model.
FACTORS = {"persona": "persona", "model": "model_name", "temperature": "temperature",
           "variation": "variation", "strategy": "strategy", "decoding": "decoding",
           "model_routing": "model_routing", "routing": "routing"}
MODEL_SETTINGS = ("decoding", "model_routing")  # a local model's own: blank for other models
# Outcomes reported as rates when the rows carry them (capability and safety split the checks).
OUTCOMES = {"success": "task success", "capability_success": "capability",
            "safety_success": "safe behaviour"}
# Style measures are counts per answer: unbounded above, never below 0.
STYLE_MEASURES = {"response_words": "words", "hedges": "hedging words",
                  "questions": "questions asked", "numbers": "numbers given",
                  "units": "numbers with units"}
JUDGE = ("judge_score", "judge score (1-5)", (1.0, 5.0))
ERROR, JUDGE_ERROR = "error", "judge_error"
COMPARISON = ["effect", "ci_low", "ci_high", "p_value", "p_adjusted", "significant",
              "scenarios", "pairs", "left_out", "confidence", "sd", "mdd", "method", "note"]
EFFECT_COLUMNS = ["factor", "level", "reference", *COMPARISON]
WINNER_COLUMNS = ["best", "other", *COMPARISON]
STYLE_COLUMNS = ["measure", "column", "persona", "cases", "scenarios", "mean", "ci_low",
                 "ci_high", "differs"]
STYLE_DIFFERENCE_COLUMNS = ["measure", "column", "level", "reference", *COMPARISON]


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


def style_measures(df: Any) -> list[tuple[str, str, tuple[float, float] | None]]:
    """The style measures (and the judge's score) this run has values for, by persona."""
    if "persona" not in df or df["persona"].nunique() < 2:
        return []
    found = [(c, name, None) for c, name in STYLE_MEASURES.items()] + [JUDGE]
    return [m for m in found if m[0] in df and not df[m[0]].dropna().empty]


def family_of(df: Any, levels: list[int] | None = None) -> Family:
    """The report's one family: what its summary can claim, from the design alone (`levels`:
    each varied factor's number of levels, when already known)."""
    scenarios = df["scenario"].nunique()
    if scenarios < MIN_SCENARIOS:
        return Family(scenarios=scenarios)
    if levels is None:
        levels = [len(cube.level_order(df[c])) for c in varying(df).values()]
    configurations = df.loc[df["status"] != ERROR, "config_hash"].nunique()
    personas = df["persona"].nunique() if "persona" in df else 0
    return Family({EFFECTS: sum(pairs(count) for count in levels),
                   BEST: max(0, configurations - 1),
                   STYLE: len(style_measures(df)) * pairs(personas)},
                  configurations, scenarios)


@dataclass(frozen=True)
class Prepared:
    """A run's rows made ready once: its varied factors, success as inference reads it, where
    each row sits in the outcome cube, and the report's family."""

    df: Any
    factors: list[str]
    success: Any
    layout: cube.Layout
    family: Family


def prepare(df: Any, family: Family | None = None) -> Prepared:
    found = varying(df)
    where = cube.layout(df, list(found), found)
    return Prepared(df, list(found), measure(df, "success"), where,
                    family or family_of(df, [len(level) for level in where.levels]))


def measure(df: Any, column: str) -> Any:
    """One measure's values as an array, NaN where the case errored (or its judge did)."""
    import pandas as pd

    void = df["status"].eq(ERROR) | (df["status"].eq(JUDGE_ERROR) & (column == JUDGE[0]))
    return pd.to_numeric(df[column], errors="coerce").astype(float).where(~void).to_numpy()


def compare(paired: cube.Paired, level: float, bounded: bool) -> list[dict[str, Any]]:
    """The report's columns for each pair: estimate, interval at `level`, p-value, the
    detectable difference, and why there is no interval when there is none."""
    found = inference.differences(paired.estimate, paired.worst, paired.best,
                                  np.full(len(paired.pairs), level), bounded)
    rows = []
    for n in range(len(paired.pairs)):
        scenarios = int(found["scenarios"][n])
        if not paired.counts[n]:  # nothing to estimate from: no interval around nothing
            found["low"][n] = found["high"][n] = found["p"][n] = math.nan
        has = not math.isnan(found["low"][n])
        note = ("no scenario answered at both levels" if not paired.counts[n] else
                f"{TOO_FEW} ({scenarios} < {MIN_SCENARIOS})" if scenarios < MIN_SCENARIOS
                else "" if has else "every scenario gives the same value: no interval")
        variance = float(found["var"][n])
        rows.append({"effect": float(found["value"][n]), "ci_low": float(found["low"][n]),
                     "ci_high": float(found["high"][n]), "p_value": float(found["p"][n]),
                     "scenarios": scenarios, "pairs": int(paired.counts[n]),
                     "left_out": paired.left_out, "confidence": 1 - level,
                     "sd": math.sqrt(variance) if variance >= 0 else math.nan,
                     "mdd": power.detectable(scenarios, variance, float(found["ties"][n]), level)
                     if has and bounded else math.nan,
                     "method": EFFECT_METHOD, "note": note})
    return rows


def _claims(rows: list[dict[str, Any]], family: Family, kind: str) -> list[dict[str, Any]]:
    for row in rows:
        row["p_adjusted"] = family.adjusted(kind, row["p_value"])
        row["significant"] = bool(row["p_adjusted"] < family.alpha) and not math.isnan(
            row["ci_low"])
    return rows


def effect_table(df: Any, family: Family | None = None, column: str = "success") -> Any:
    """Every pair of every varied factor's levels (later against earlier in the stable
    order), matched on scenario, repeat and the other factors, at the family's level."""
    ready = prepare(df, family)
    return _effects(ready, cube.fill(ready.layout, measure(df, column)))


def _effects(ready: Prepared, outcomes: cube.Cube) -> Any:
    import pandas as pd

    factors, family = ready.factors, ready.family
    level = family.level(EFFECTS) if family.kinds else ALPHA
    # A model's effect is over its own settings (averaged): other models have none.
    averaged = {factor: [f for f in MODEL_SETTINGS if factor == "model" and f in factors]
                for factor in factors}
    each = [cube.contrasts(outcomes, factor, averaged=averaged[factor]) for factor in factors]
    if not each:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    found = iter(_claims(compare(cube.joined(each), level, True), family, EFFECTS))
    rows = []
    for factor, paired in zip(factors, each, strict=True):
        names = outcomes.levels[factors.index(factor)]
        for j, i in paired.pairs:
            row = next(found) | {"left_out": paired.left_out}
            if not row["pairs"] and not paired.left_out and len(factors) > 1:
                others = [f for f in factors if f != factor and f not in averaged[factor]]
                row["note"] = (f"not separable: its levels never ran with the same "
                               f"{', '.join(others)} (they changed together)")
            rows.append({"factor": factor, "level": names[j], "reference": names[i], **row})
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


def configurations(df: Any, labels: dict[str, str], ready: Prepared | None = None
                   ) -> cube.Cube:
    """Success by configuration (named by `labels`), scenario and repeat."""
    ready = prepare(df) if ready is None else ready
    where = ready.layout.regrouped("config", df["config_hash"].map(labels))
    return cube.fill(where, ready.success)


def rate_table(df: Any, labels: dict[str, str], configs: cube.Cube | None = None) -> Any:
    """Each configuration's success rate over its scenario means with its 95% interval and
    one simultaneous over every configuration (the winner's: it allows for having picked it)."""
    import pandas as pd

    configs = configurations(df, labels) if configs is None else configs
    means = cube.nanmean(configs.values, -1).T  # [configuration, scenario]
    count = len(configs.levels[0])
    value, low, high = inference.exact_rate(means)
    _, all_low, all_high = inference.exact_rate(means, ALPHA / max(count, 1))
    scenarios = np.sum(~np.isnan(means), axis=-1)
    few = scenarios < MIN_SCENARIOS
    return pd.DataFrame({"label": configs.levels[0], "scenarios": scenarios, "rate": value,
                         "ci_low": np.where(few, np.nan, low),
                         "ci_high": np.where(few, np.nan, high),
                         "all_low": np.where(few, np.nan, all_low),
                         "all_high": np.where(few, np.nan, all_high)})


def winner_table(df: Any, labels: dict[str, str], family: Family | None = None,
                 configs: cube.Cube | None = None) -> Any:
    """The configuration with the highest rate against each other one, paired on scenario and
    repeat, allowing for having picked it (the family's studentized range)."""
    import pandas as pd

    family = family or family_of(df)
    configs = configurations(df, labels) if configs is None else configs
    names = configs.levels[0]
    rates = cube.nanmean(cube.nanmean(configs.values, -1), 0)
    ranked = sorted((n for n in range(len(names)) if not math.isnan(rates[n])),
                    key=lambda n: (-rates[n], str(names[n])))
    if len(ranked) < 2:
        return pd.DataFrame(columns=WINNER_COLUMNS)
    paired = cube.contrasts(configs, "config", [(ranked[0], n) for n in ranked[1:]])
    level = family.level(BEST) if BEST in family.kinds else ALPHA
    found = _claims(compare(paired, level, True), family, BEST)
    return pd.DataFrame([{"best": names[ranked[0]], "other": names[i], **row}
                         for (_, i), row in zip(paired.pairs, found, strict=True)],
                        columns=WINNER_COLUMNS)


def style_tables(df: Any, family: Family | None = None) -> tuple[Any, Any]:
    """Each style measure (and the judge's score) by persona on scenario means: a mean with
    its 95% interval per persona, and every pair of personas compared, matched on scenario and
    the other factors, at the family's level."""
    return _style(prepare(df, family))


def _style(ready: Prepared) -> tuple[Any, Any]:
    import pandas as pd

    df, family = ready.df, ready.family
    means, differences = [], []
    level = family.level(STYLE) if STYLE in family.kinds else ALPHA
    for column, name, scale in style_measures(df):
        value = measure(df, column)
        span = scale[1] - scale[0] if scale else 1.0
        outcomes = cube.fill(ready.layout, (value - scale[0]) / span if scale else value)
        paired = cube.contrasts(outcomes, "persona", fill=(0.0, 1.0) if scale else None)
        found = _claims(compare(paired, level, scale is not None), family, STYLE)
        personas = outcomes.levels[ready.factors.index("persona")]
        for (j, i), row in zip(paired.pairs, found, strict=True):
            row.update({k: row[k] * span for k in ("effect", "ci_low", "ci_high", "sd", "mdd")})
            differences.append({"measure": name, "column": column, "level": personas[j],
                                "reference": personas[i], **row})
        claimed = {p for r in differences if r["column"] == column and r["significant"]
                   for p in (r["level"], r["reference"])}
        scenario_means = _by_level(outcomes, "persona")
        cases = df.assign(_value=value).groupby("persona")["_value"].count()
        for n, persona in enumerate(personas):
            mean = _level_interval(scenario_means[n], scale)
            means.append({"measure": name, "column": column, "persona": persona,
                          "cases": int(cases.get(persona, 0)), **mean,
                          "differs": persona in claimed})
    return (pd.DataFrame(means, columns=STYLE_COLUMNS),
            pd.DataFrame(differences, columns=STYLE_DIFFERENCE_COLUMNS))


def _by_level(outcomes: cube.Cube, factor: str) -> Any:
    """[level, scenario]: each level's mean over its cells and repeats in each scenario."""
    axis = outcomes.axis(factor)
    count = len(outcomes.levels[axis - 1])
    moved = np.moveaxis(outcomes.values, axis, 1)[:, :count]
    return cube.nanmean(moved.reshape(*moved.shape[:2], -1), -1).T


def _level_interval(means: Any, scale: tuple[float, float] | None) -> dict[str, Any]:
    """A level's mean over scenario means with its 95% interval (exact when bounded, t for a
    count, never below 0), none below MIN_SCENARIOS."""
    scenarios = int(np.sum(~np.isnan(means)))
    if scale is not None:
        value, low, high = (float(x) * (scale[1] - scale[0]) + scale[0]
                            for x in inference.exact_rate(means))
    else:
        value, low, high = inference.mean_interval(means[~np.isnan(means)], count=True)
    if scenarios < MIN_SCENARIOS:
        low = high = math.nan
    return {"scenarios": scenarios, "mean": value, "ci_low": low, "ci_high": high}


def style_table(df: Any) -> Any:
    """Each style measure's mean by persona (style_tables' first table)."""
    return style_tables(df)[0]


@dataclass(frozen=True)
class Findings:
    """Everything a report's summary can say, computed at the one family's levels."""

    family: Family
    effects: Any
    winner: Any
    rates: Any
    style: Any
    style_differences: Any

    def claims(self) -> int:
        """How many differences the summary claims (a null report should make none)."""
        return int(sum(t["significant"].sum() for t in (self.effects, self.winner,
                                                         self.style_differences)))


def analyse(df: Any, labels: dict[str, str]) -> Findings:
    """The report's findings from a run's rows (labels: config hash -> configuration name)."""
    ready = prepare(df)
    configs = configurations(df, labels, ready)
    style, differences = _style(ready)
    return Findings(ready.family, _effects(ready, cube.fill(ready.layout, ready.success)),
                    winner_table(df, labels, ready.family, configs),
                    rate_table(df, labels, configs), style, differences)
