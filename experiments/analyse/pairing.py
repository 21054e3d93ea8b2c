"""Two runs paired for `experiments compare`: the factor they differ in, and B - A on the rest.

The comparison report has one error rate too: with no true change, the chance that it claims
any (overall or in a configuration) is at most 5%; the overall difference gets half of it and
the configurations share the other half (Bonferroni), each interval at its comparison's level.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from experiments.analyse import cube, inference
from experiments.analyse.findings import FACTORS, values
from experiments.analyse.inference import ALPHA, EFFECT_METHOD, MIN_SCENARIOS, TOO_FEW, Estimate


class NothingToPair(ValueError):
    """The two runs share no scenario, repeat and configuration that both answered."""


@dataclass(frozen=True)
class Pairing:
    """B - A over the cases both runs answered, paired on scenario, repeat and `keys`."""

    differing: dict[str, tuple[list[Any], list[Any]]]  # factor -> (A's levels, B's levels)
    keys: list[str]  # what cases are paired on besides scenario and repeat
    overall: Estimate
    rate_a: float
    rate_b: float
    table: Any  # one row per paired configuration (the keys' combinations)
    only_a: list[str] = field(default_factory=list)  # configurations with no partner in B
    only_b: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def scenario_hashes(definitions: list[dict[str, Any]]) -> dict[str, str]:
    """Scenario id -> a hash of its whole definition (turns, checks, everything)."""
    return {str(d.get("id")): hashlib.sha256(json.dumps(d, sort_keys=True, default=str)
                                             .encode()).hexdigest()[:16] for d in definitions}


def _levels(df: Any, column: str) -> list[Any]:
    return cube.level_order(df[column]) if column in df else []


def paired_runs(first: Any, second: Any, keys: list[str], alpha: float = ALPHA) -> Estimate:
    """second minus first for two runs' value frames: cases paired on scenario, repeat and
    `keys` (the factors both share), one difference per scenario, the interval at `alpha`
    (an errored case counted as either a pass or a fail)."""
    import pandas as pd

    both = pd.concat([first.assign(_run="first"), second.assign(_run="second")])
    paired = cube.contrasts(cube.build(both, ["_run", *keys]), "_run", [(1, 0)])
    found = inference.differences(paired.estimate, paired.worst, paired.best, [alpha])
    scenarios, pairs = int(found["scenarios"][0]), int(paired.counts[0])
    note = ("no scenario answered in both runs" if not pairs else
            f"{TOO_FEW} ({scenarios} < {MIN_SCENARIOS})" if scenarios < MIN_SCENARIOS else "")
    return Estimate(float(found["value"][0]), float(found["low"][0]), float(found["high"][0]),
                    EFFECT_METHOD, scenarios, float(found["p"][0]), note, 1 - alpha, pairs,
                    paired.left_out)


def pair_runs(df_a: Any, df_b: Any, hashes_a: dict[str, str] | None = None,
              hashes_b: dict[str, str] | None = None) -> Pairing:
    """Pair two runs' cases on scenario, repeat and every factor they share; a factor whose
    levels do not overlap at all (T = 0 in A, T = 0.7 in B) is what is compared, and when
    none is, the configurations themselves are paired. Scenarios whose definitions differ
    (hashes) are left out and said. NothingToPair when no case pairs up."""
    notes = []
    found = {name: (_levels(df_a, c), _levels(df_b, c)) for name, c in FACTORS.items()
             if c in df_a and c in df_b}
    differing = {name: levels for name, levels in found.items() if not set(levels[0])
                 & set(levels[1])}
    keys = [name for name in found if name not in differing]
    if len(differing) > 1:
        notes.append(f"The runs differ in {len(differing)} factors ({', '.join(differing)}): "
                     "B - A mixes their effects.")
    if not differing and set(df_a["config_hash"]) & set(df_b["config_hash"]):
        keys.append("config")
    hashes_a, hashes_b = hashes_a or {}, hashes_b or {}
    changed = sorted(s for s in set(hashes_a) & set(hashes_b) if hashes_a[s] != hashes_b[s])
    if changed:
        notes.append(f"Left out {len(changed)} scenario(s) whose definition differs between "
                     f"the runs: {', '.join(changed[:8])}.")
    frames = [values(df, "success") for df in (df_a, df_b)]
    frames = [f[~f["scenario"].isin(changed)] for f in frames]
    first, second = frames
    overall = paired_runs(first, second, keys, ALPHA / 2)
    if overall.pairs == 0:
        raise NothingToPair(_nothing(frames, keys, changed))
    if overall.unmatched:
        notes.append(f"Compared on the {overall.pairs} case pairs both runs answered; "
                     f"{overall.unmatched} answered case(s) are left out because the other "
                     "run errored on them.")
    rates = [_paired_rate(f, frames[1 - i], keys) for i, f in enumerate(frames)]
    table, only_a, only_b = _per_configuration(frames, keys)
    return Pairing(differing, keys, overall, rates[0], rates[1], table, only_a, only_b, notes)


def _nothing(frames: list[Any], keys: list[str], changed: list[str]) -> str:
    shared = set(frames[0]["scenario"]) & set(frames[1]["scenario"])
    if not shared:
        why = "the runs share no scenario" + (" with the same definition" if changed else "")
    else:
        why = (f"no case of the {len(shared)} shared scenario(s) was answered in both runs "
               f"with the same {', '.join(['repeat', *keys])}")
    return f"Nothing to pair: {why}."


def _paired_rate(frame: Any, other: Any, keys: list[str]) -> float:
    """A run's success over the cases both runs answered, averaged per scenario."""
    columns = ["scenario", "repeat", *keys]
    answered = other.dropna(subset=["value"])[columns].drop_duplicates()
    both = frame.dropna(subset=["value"]).merge(answered, on=columns)
    return float(both.groupby("scenario")["value"].mean().mean()) if len(both) else math.nan


def _per_configuration(frames: list[Any], keys: list[str]) -> tuple[Any, list[str],
                                                                       list[str]]:
    """B - A for each combination of the paired keys (Bonferroni over them, in the half of
    the report's alpha the overall B - A leaves), and the combinations found in only one run."""
    import pandas as pd

    groups = [dict(iter(f.groupby(keys, dropna=False))) if keys else {(): f} for f in frames]
    names = _names(frames, keys)
    rows = []
    shared = sorted(set(groups[0]) & set(groups[1]), key=str)
    level = ALPHA / 2 / max(1, len(shared))
    for key in shared:
        found = paired_runs(groups[0][key], groups[1][key], [], level)
        if found.pairs:
            rows.append({"configuration": names[key], "pairs": found.pairs,
                         "scenarios": found.scenarios, "diff": found.value,
                         "ci_low": found.low, "ci_high": found.high,
                         "p_value": found.p_value, "confidence": found.level,
                         "note": found.note})
    table = pd.DataFrame(rows, columns=["configuration", "pairs", "scenarios", "diff",
                                        "ci_low", "ci_high", "p_value", "confidence", "note"])
    table["p_adjusted"] = (table["p_value"] * ALPHA / level).clip(upper=1.0)
    table["significant"] = (table["p_adjusted"] < ALPHA) & table["ci_low"].notna()
    alone = [sorted(names[k] for k in set(mine) - set(theirs))
             for mine, theirs in (groups, groups[::-1])]
    return table.sort_values(["diff", "configuration"]).reset_index(drop=True), *alone


def _names(frames: list[Any], keys: list[str]) -> dict[Any, str]:
    """Each combination of the keys named by its factor levels (the configuration key added
    where two share those levels)."""
    shown = [k for k in keys if k != "config"]
    found: dict[Any, str] = {}
    for frame in frames:
        for key, _ in (frame.groupby(keys, dropna=False) if keys else [((), frame)]):
            parts = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
            found[key] = " / ".join(_name(parts[k]) for k in shown) or "all"
    counts: dict[str, int] = {}
    for name in found.values():
        counts[name] = counts.get(name, 0) + 1
    return {key: name if counts[name] == 1 or "config" not in keys else
            f"{name} [{dict(zip(keys, key, strict=True))['config'][:8]}]"
            for key, name in found.items()}


def _name(value: Any) -> str:
    return f"T={value:g}" if isinstance(value, float) else str(value)
