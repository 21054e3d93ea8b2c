"""Two runs paired for `experiments compare`: the factor they differ in, and B - A on the rest."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from experiments.analyse import inference
from experiments.analyse.findings import FACTORS, values
from experiments.analyse.inference import Estimate


class NothingToPair(ValueError):
    """The two runs share no scenario, repeat and configuration that both answered."""


@dataclass(frozen=True)
class Pairing:
    """B - A over the cases both runs answered, paired on scenario, repeat and `keys`."""

    differing: dict[str, tuple[list[Any], list[Any]]]  # factor -> (A's levels, B's levels)
    keys: list[str]  # the factors the cases are paired on besides scenario and repeat
    overall: Estimate
    rate_a: float
    rate_b: float
    table: Any  # one row per paired configuration (the keys' combinations)
    notes: list[str] = field(default_factory=list)


def scenario_hashes(definitions: list[dict[str, Any]]) -> dict[str, str]:
    """Scenario id -> a hash of its whole definition (turns, checks, everything)."""
    return {str(d.get("id")): hashlib.sha256(json.dumps(d, sort_keys=True, default=str)
                                             .encode()).hexdigest()[:16] for d in definitions}


def _levels(df: Any, column: str) -> list[Any]:
    return inference.levels(df, column) if column in df else []


def pair_runs(df_a: Any, df_b: Any, hashes_a: dict[str, str] | None = None,
              hashes_b: dict[str, str] | None = None) -> Pairing:
    """Find the factors whose levels differ between the runs, pair the cases on scenario,
    repeat and every other factor, and estimate B - A; scenarios whose definitions differ
    (hashes) are left out and said. NothingToPair when no case pairs up."""
    notes = []
    differing = {name: (_levels(df_a, c), _levels(df_b, c)) for name, c in FACTORS.items()
                 if _levels(df_a, c) != _levels(df_b, c)}
    keys = [name for name, c in FACTORS.items() if name not in differing and c in df_a
            and c in df_b]
    if len(differing) > 1:
        notes.append(f"The runs differ in {len(differing)} factors ({', '.join(differing)}): "
                     "B - A mixes their effects.")
    changed = sorted(s for s in set(hashes_a or {}) & set(hashes_b or {})
                     if hashes_a[s] != hashes_b[s])
    if changed:
        notes.append(f"Left out {len(changed)} scenario(s) whose definition differs between "
                     f"the runs: {', '.join(changed[:8])}.")
    frames = [values(df, "success") for df in (df_a, df_b)]
    frames = [f[~f["scenario"].isin(changed)] for f in frames]
    overall = inference.paired_runs(*frames, keys, "value")
    if overall.pairs == 0:
        raise NothingToPair(_nothing(frames, keys, changed))
    if overall.unmatched:
        notes.append(f"Compared on the {overall.pairs} case pairs both runs answered; "
                     f"{overall.unmatched} answered case(s) are left out because the other "
                     "run errored on them.")
    rates = [_paired_rate(f, frames[1 - i], keys) for i, f in enumerate(frames)]
    return Pairing(differing, keys, overall, rates[0], rates[1],
                   _per_configuration(frames, keys), notes)


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


def _per_configuration(frames: list[Any], keys: list[str]) -> Any:
    """B - A for each combination of the paired factors, Holm-corrected over them."""
    import pandas as pd

    rows = []
    groups_b = dict(iter(frames[1].groupby(keys, dropna=False))) if keys else {(): frames[1]}
    for key, part_a in (frames[0].groupby(keys, dropna=False) if keys else [((), frames[0])]):
        if (part_b := groups_b.get(key)) is None:
            continue
        found = inference.paired_runs(part_a, part_b, [], "value")
        if found.pairs:
            names = key if isinstance(key, tuple) else (key,)
            rows.append({"configuration": " / ".join(_name(v) for v in names) or "all",
                         "pairs": found.pairs, "scenarios": found.scenarios,
                         "diff": found.value, "ci_low": found.low, "ci_high": found.high,
                         "p_value": found.p_value, "note": found.note})
    table = pd.DataFrame(rows, columns=["configuration", "pairs", "scenarios", "diff",
                                        "ci_low", "ci_high", "p_value", "note"])
    table["p_holm"] = inference.holm(table["p_value"].fillna(1.0).to_numpy())
    table["significant"] = (table["p_holm"] < inference.ALPHA) & table["ci_low"].notna()
    return table.sort_values(["diff", "configuration"]).reset_index(drop=True)


def _name(value: Any) -> str:
    return f"T={value:g}" if isinstance(value, float) else str(value)
