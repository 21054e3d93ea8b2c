"""A run's outcomes as one array [scenario, each varied factor's levels, repeat].

Every comparison the report makes is an array difference on it: two levels of a factor are
matched on scenario, repeat and every other factor (so adjusted for them), averaged over
repeats within a cell, then over cells within a scenario, giving one difference per scenario.
The same code serves the report and benchmarks/stats_calibration.py, which runs thousands of
simulated sweeps through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def level_order(values: Any) -> list[Any]:
    """Levels in a stable order (numbers by value, names alphabetically), blanks left out."""
    import pandas as pd

    found = [v for v in pd.unique(np.asarray(values)) if not pd.isna(v)]
    return sorted(found, key=lambda v: (str(type(v)), v))


@dataclass(frozen=True)
class Cube:
    """values: the mean outcome of each cell and repeat (NaN where the case errored or never
    ran); ran: whether it ran. A blank level (a local model's setting on another model) has a
    slot of its own after a factor's levels."""

    scenarios: list[Any]
    factors: list[str]
    levels: list[list[Any]]
    values: np.ndarray
    ran: np.ndarray

    def axis(self, factor: str) -> int:
        return 1 + self.factors.index(factor)


@dataclass(frozen=True)
class Layout:
    """Where each row of a frame goes in a cube: its scenarios, factors' levels and the flat
    cell-and-repeat index of each row (made once, filled with as many measures as needed)."""

    scenarios: list[Any]
    factors: list[str]
    levels: list[list[Any]]
    shape: tuple[int, ...]
    flat: np.ndarray
    scenario_codes: np.ndarray
    repeat_codes: np.ndarray
    repeats: int

    def regrouped(self, factor: str, column: Any) -> Layout:
        """The same rows laid out by one other factor (a configuration) instead."""
        import pandas as pd

        order = level_order(column)
        blank = int(bool(np.asarray(pd.isna(column)).any()))
        shape = (len(self.scenarios), len(order) + blank, self.repeats)
        codes = [self.scenario_codes, _codes(column, order), self.repeat_codes]
        return Layout(self.scenarios, [factor], [order], shape,
                      np.ravel_multi_index(codes, shape), self.scenario_codes,
                      self.repeat_codes, self.repeats)


def _codes(column: Any, order: list[Any]) -> np.ndarray:
    import pandas as pd

    codes = pd.Index(order).get_indexer(column) if order else np.full(len(column), -1)
    return np.where(codes < 0, len(order), codes)  # a blank level: the slot after the levels


def layout(frame: Any, factors: Sequence[str], columns: dict[str, str] | None = None
           ) -> Layout:
    """The layout of `frame`'s rows: scenario, repeat and the factors (each read from its
    column in `columns`, default: the column of its name)."""
    import pandas as pd

    scenario_codes, scenarios = pd.factorize(frame["scenario"], sort=True)
    repeat_codes, repeats = pd.factorize(frame["repeat"], sort=True)
    codes, levels, shape = [scenario_codes], [], [len(scenarios)]
    for factor in factors:
        column = frame[(columns or {}).get(factor, factor)]
        order = level_order(column)
        codes.append(_codes(column, order))
        levels.append(order)
        shape.append(len(order) + int(bool(column.isna().any())))
    codes.append(repeat_codes)
    shape.append(len(repeats))
    return Layout(list(scenarios), list(factors), levels, tuple(shape),
                  np.ravel_multi_index(codes, shape), scenario_codes, repeat_codes,
                  len(repeats))


def fill(where: Layout, value: Any) -> Cube:
    """The cube of one measure (NaN = errored) laid out as `where` says; rows sharing a cell
    and repeat are averaged."""
    value = np.asarray(value, dtype=float)
    answered = ~np.isnan(value)
    size = int(np.prod(where.shape))
    total = np.bincount(where.flat, np.where(answered, value, 0.0), minlength=size)
    count = np.bincount(where.flat, answered.astype(float), minlength=size)
    ran = np.bincount(where.flat, minlength=size) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(count > 0, total / count, np.nan)
    return Cube(where.scenarios, where.factors, where.levels, values.reshape(where.shape),
                ran.reshape(where.shape))


def build(frame: Any, factors: Sequence[str], column: str = "value") -> Cube:
    """The cube of `frame`'s `column` (rows: scenario, repeat, the factors)."""
    return fill(layout(frame, factors), frame[column].to_numpy(float))


def nanmean(array: np.ndarray, axis: Any) -> np.ndarray:
    """numpy's nanmean without its warning for slices with nothing in them (NaN there)."""
    present = ~np.isnan(array)
    total = np.where(present, array, 0.0).sum(axis=axis)
    count = present.sum(axis=axis)
    return np.divide(total, count, out=np.full(np.shape(total), np.nan), where=count > 0)


@dataclass(frozen=True)
class Paired:
    """Level minus reference for some pairs of one factor's levels, one row per pair:
    per-scenario differences on the cases every level answered (`estimate`), and with each
    errored case counted against the level (`worst`) or for it (`best`); `counts` counts
    each pair's answered case pairs, `used` the answered cases every level answered and
    `left_out` the answered cases another level's error dropped."""

    pairs: list[tuple[int, int]]
    estimate: np.ndarray
    worst: np.ndarray
    best: np.ndarray
    counts: np.ndarray
    used: int
    left_out: int


def contrasts(cube: Cube, factor: str, pairs: Sequence[tuple[int, int]] | None = None,
              averaged: Sequence[str] = (), fill: tuple[float, float] | None = (0.0, 1.0)
              ) -> Paired:
    """`pairs` (level, reference) of `factor` (default: every later level against every
    earlier one), matched on everything but `averaged` (factors averaged over first: a model's
    own settings). `fill` is the worst and best value an errored case could have had (None:
    unbounded, errors are only left out)."""
    count = len(cube.levels[cube.factors.index(factor)])
    chosen = list(pairs) if pairs is not None else [(j, i) for i in range(count)
                                                   for j in range(i + 1, count)]
    values, ran = cube.values, cube.ran
    errored = ran & np.isnan(values)
    low, high = fill if fill is not None else (np.nan, np.nan)
    sides = [values, np.where(errored, low, values), np.where(errored, high, values)]
    drop = tuple(cube.axis(f) for f in averaged)
    if drop:
        sides = [nanmean(side, drop) for side in sides]
        ran = np.asarray(ran.any(axis=drop))
    axis = cube.axis(factor) - sum(1 for d in drop if d < cube.axis(factor))
    sides = [np.moveaxis(side, axis, 1)[:, :count] for side in sides]
    ran = np.moveaxis(ran, axis, 1)[:, :count]
    answered = ~np.isnan(sides[0])
    complete = (answered.sum(axis=1) == ran.sum(axis=1))[:, None]
    left_out, used = int((answered & ~complete).sum()), int((answered & complete).sum())
    sides[0] = np.where(complete, sides[0], np.nan)
    if not chosen:
        empty = np.zeros((0, len(cube.scenarios)))
        return Paired(chosen, empty, empty, empty, np.zeros(0, int), used, left_out)
    level = np.array([j for j, _ in chosen], dtype=int)
    reference = np.array([i for _, i in chosen], dtype=int)
    estimate = sides[0][:, level] - sides[0][:, reference]
    worst = sides[1][:, level] - sides[2][:, reference]
    best = sides[2][:, level] - sides[1][:, reference]
    counts = (~np.isnan(estimate)).reshape(*estimate.shape[:2], -1).sum(axis=(0, 2))
    return Paired(chosen, per_scenario(estimate), per_scenario(worst), per_scenario(best),
                  counts, used, left_out)


def joined(each: Sequence[Paired]) -> Paired:
    """Several factors' contrasts as one (their pairs in order), to compute them at once;
    `used` and `left_out` are the first's."""
    def stacked(name: str) -> np.ndarray:
        return np.concatenate([getattr(paired, name) for paired in each])

    return Paired([p for paired in each for p in paired.pairs], stacked("estimate"),
                  stacked("worst"), stacked("best"), stacked("counts"), each[0].used,
                  each[0].left_out)


def per_scenario(paired: np.ndarray) -> np.ndarray:
    """[scenario, pair, cells..., repeat] differences to [pair, scenario]: the mean over
    repeats within a cell, then over the cells of a scenario."""
    cells = nanmean(paired, -1)
    return nanmean(cells.reshape(*cells.shape[:2], -1), -1).T
