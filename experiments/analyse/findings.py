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


def family_of(df: Any) -> Family:
    """The report's one family: what its summary can claim, from the design alone."""
    scenarios = df["scenario"].nunique()
    if scenarios < MIN_SCENARIOS:
        return Family(scenarios=scenarios)
    answered = df[df["status"] != ERROR]
    configurations = answered["config_hash"].nunique()
    personas = df["persona"].nunique() if "persona" in df else 0
    return Family({EFFECTS: sum(pairs(len(cube.level_order(df[c]))) for c in varying(df)
                                .values()),
                   BEST: max(0, configurations - 1),
                   STYLE: len(style_measures(df)) * pairs(personas)},
                  configurations, scenarios)


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
    import pandas as pd

    family = family or family_of(df)
    factors = list(varying(df))
    rows = []
    if factors:
        outcomes = cube.build(values(df, column), factors)
        level = family.level(EFFECTS) if family.kinds else ALPHA
        for factor in factors:
            # A model's effect is over its own settings (averaged): other models have none.
            averaged = [f for f in MODEL_SETTINGS if factor == "model" and f in factors]
            paired = cube.contrasts(outcomes, factor, averaged=averaged)
            names = outcomes.levels[factors.index(factor)]
            found = _claims(compare(paired, level, True), family, EFFECTS)
            for (j, i), row in zip(paired.pairs, found, strict=True):
                if not row["pairs"] and not paired.left_out and len(factors) > 1:
                    others = [f for f in factors if f != factor and f not in averaged]
                    row["note"] = (f"not separable: its levels never ran with the same "
                                   f"{', '.join(others)} (they changed together)")
                rows.append({"factor": factor, "level": names[j], "reference": names[i],
                             **row})
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


def _configurations(df: Any, labels: dict[str, str]) -> tuple[cube.Cube, Any]:
    frame = values(df, "success").assign(config=lambda f: f["config"].map(labels))
    return cube.build(frame, ["config"]), frame


def rate_table(df: Any, labels: dict[str, str]) -> Any:
    """Each configuration's success rate over its scenario means with its 95% interval and
    one simultaneous over every configuration (the winner's: it allows for having picked it)."""
    import pandas as pd

    configs, _ = _configurations(df, labels)
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


def winner_table(df: Any, labels: dict[str, str], family: Family | None = None) -> Any:
    """The configuration with the highest rate against each other one, paired on scenario and
    repeat, allowing for having picked it (the family's studentized range)."""
    import pandas as pd

    family = family or family_of(df)
    configs, _ = _configurations(df, labels)
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
    import pandas as pd

    family = family or family_of(df)
    factors = [f for f in varying(df) if f != "persona"]
    means, differences = [], []
    level = family.level(STYLE) if STYLE in family.kinds else ALPHA
    for column, name, scale in style_measures(df):
        frame = values(df, column)
        if scale is not None:
            frame["value"] = (frame["value"] - scale[0]) / (scale[1] - scale[0])
        outcomes = cube.build(frame, ["persona", *factors])
        paired = cube.contrasts(outcomes, "persona", fill=(0.0, 1.0) if scale else None)
        found = _claims(compare(paired, level, scale is not None), family, STYLE)
        span = scale[1] - scale[0] if scale else 1.0
        personas = outcomes.levels[0]
        for (j, i), row in zip(paired.pairs, found, strict=True):
            row.update({k: row[k] * span for k in ("effect", "ci_low", "ci_high", "sd", "mdd")})
            differences.append({"measure": name, "column": column, "level": personas[j],
                                "reference": personas[i], **row})
        claimed = {p for r in differences if r["column"] == column and r["significant"]
                   for p in (r["level"], r["reference"])}
        for persona, group in values(df, column).groupby("persona"):
            mean = inference.level_mean(group, "value", scale, count=scale is None)
            means.append({"measure": name, "column": column, "persona": persona,
                          "cases": int(group["value"].notna().sum()),
                          "scenarios": mean.scenarios, "mean": mean.value,
                          "ci_low": mean.low, "ci_high": mean.high,
                          "differs": persona in claimed})
    return (pd.DataFrame(means, columns=STYLE_COLUMNS),
            pd.DataFrame(differences, columns=STYLE_DIFFERENCE_COLUMNS))


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
    family = family_of(df)
    style, differences = style_tables(df, family)
    return Findings(family, effect_table(df, family), winner_table(df, labels, family),
                    rate_table(df, labels), style, differences)
