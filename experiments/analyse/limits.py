"""What a run's grid can and cannot show, and what its errors change: the report's opening
lines, stated before any result."""

from __future__ import annotations

import math
from typing import Any

from experiments.analyse import cube, inference, power
from experiments.analyse.findings import ERROR, JUDGE_ERROR, Findings, values, varying
from experiments.analyse.inference import MIN_SCENARIOS

# Above this share of errored cases a configuration's numbers rest on what it happened to
# answer; the report warns.
ERROR_WARNING = 0.10


def repeat_lines(df: Any) -> list[str]:
    """'T = 0: repeats identical ...' for each temperature whose repeats gave the same answer
    (same text and outcome) in every cell."""
    answered = df[df["status"] != ERROR]
    if answered["repeat"].nunique() < 2:
        return []
    agreement = inference.repeat_agreement(answered, "config_hash", ["answer", "success"],
                                           "temperature")
    return inference.repeat_notices(agreement)


def points(value: float) -> str:
    if math.isnan(value):
        return "none up to 100 points"
    return f"about {value * 100:.0f} points"


def design_lines(df: Any, found: Findings) -> list[str]:
    """The unit, effective n, identical repeats, the report's one error rate, what every
    scenario agreeing still leaves open, and the differences the grid finds 80% of the time."""
    scenarios, configs = df["scenario"].nunique(), df["config_hash"].nunique()
    lines = [f"The unit is the scenario: {scenarios} scenarios x {configs} configuration(s) x "
             f"{df['repeat'].nunique()} repeat(s) = {len(df)} cases. Every interval and test "
             f"counts scenarios, not cases: effective n = {scenarios} per configuration."]
    lines += repeat_lines(df)
    if scenarios < MIN_SCENARIOS:
        return [*lines, f"Too few scenarios ({scenarios} < {MIN_SCENARIOS}): no interval is "
                "given and no test was run, so this report cannot say whether anything differs."]
    lines.append(found.family.sentence())
    rates = found.rates.dropna(subset=["ci_low"])
    if len(rates) and (rates["rate"] == 1).all():
        low = float(rates["ci_low"].min())
        lines.append(f"Every configuration passed every one of its {scenarios} scenarios. That "
                     f"does not make them perfect: with {scenarios} scenarios each could still "
                     f"fail up to {1 - low:.0%} of scenarios like these (about 1 in "
                     f"{max(2, round(1 / max(1 - low, 1e-9)))}; the exact 95% bound puts its "
                     f"rate at {low:.0%} or more), and two of them could differ by as much.")
    parts, concentrated = [], []
    for factor, rows in found.effects.groupby("factor", sort=False):
        worst = rows.loc[rows["mdd"].isna() | (rows["mdd"] == rows["mdd"].max())].iloc[0]
        parts.append(f"{points(worst['mdd'])} for {factor}")
        if (share := _as_failures(worst)) is not None:
            concentrated.append(f"{share:.0%} of the time for {factor}")
    if len(found.winner):
        parts.append(f"{points(found.winner['mdd'].median(skipna=False))} between two single "
                     "configurations")
    if parts:
        lines.append("Differences this grid finds 80% of the time, each at its comparison's "
                     "level, if every scenario moves alike with the spread seen here (where "
                     "every scenario agreed: if a share of scenarios fails outright): "
                     + "; ".join(parts) + "." + (
                         " A difference of that size made of a few scenarios failing "
                         "outright is found less often: " + "; ".join(concentrated) + "."
                         if concentrated else "") + " Smaller differences are "
                     f"found less often{' still' if concentrated else ''}, so a difference the "
                     "summary does not name may still be there.")
    lines.append("Effects are averages over these scenarios: a factor that helps on some and "
                 "hurts on others shows as little or no effect.")
    return lines


def _as_failures(row: Any) -> float | None:
    """How often a difference of the stated size is found when it comes from scenarios
    failing outright (None where that is already the stated shape, or none is stated)."""
    if math.isnan(row["mdd"]) or row["note"] or row["sd"] == 0:
        return None
    level, scenarios = 1 - row["confidence"], int(row["scenarios"])
    if row["mdd"] == power.failing_share_detectable(scenarios, level):
        return None
    return power.failing_share_power(scenarios, float(row["mdd"]), level)


def error_lines(df: Any, labels: dict[str, str]) -> list[str]:
    """Errors that change a comparison: the share overall, configurations above
    ERROR_WARNING, factors whose levels errored differently, and judge errors."""
    errored = df["status"].eq(ERROR)
    lines = []
    if errored.any():
        lines.append(f"{int(errored.sum())} case(s) errored. An error may have hidden a pass "
                     "or a fail, so every difference's interval allows either (the estimate "
                     "uses the cases both sides answered).")
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
    factors = list(varying(df))
    for name, column in varying(df).items():
        if text := _factor_errors(df, errored, name, column, factors):
            lines.append(text)
    if judge := int(df["status"].eq(JUDGE_ERROR).sum()):
        lines.append(f"Judge errors: {judge} case(s) have no judge score because the judge "
                     "failed; judge measures leave them out.")
    return lines


def _factor_errors(df: Any, errored: Any, name: str, column: str, factors: list[str]) -> str:
    per_level = {level: (int(errored[group.index].sum()),
                         frozenset(group.loc[errored[group.index], "scenario"]))
                 for level, group in df.groupby(column)}
    if len({count for count, _ in per_level.values()}) < 2 and \
            len({where for _, where in per_level.values()}) < 2:
        return ""
    paired = cube.contrasts(cube.build(values(df, "success"), factors), name, pairs=[])
    return (f"{name}: errors differ between levels ("
            + "; ".join(f"{level}: {count} errored in {len(where)} scenario(s)"
                        for level, (count, where) in per_level.items())
            + f"); its comparisons use the {paired.used} cases every level answered, "
            f"leaving out {paired.left_out} answered case(s).")
