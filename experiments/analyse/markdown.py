"""Markdown pieces the reports share: percentages, points, intervals and tables."""

from __future__ import annotations

import math
from typing import Any


def pct(value: float | None) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.0%}"


def money(value: float) -> str:
    if value is None or math.isnan(value):
        return "unknown"
    return "$0 (free)" if value == 0 else f"${value:.4f}"


def interval(row: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """"64–100%", or why there is no interval."""
    if math.isnan(row[low]):
        return "n/a" if row.get("scenarios", 1) == 0 else "too few scenarios"
    return rate_range(row[low], row[high])


def rate_range(low: float, high: float) -> str:
    """Two rates as one range: "64–100%"."""
    return f"{pct(low).removesuffix('%')}–{pct(high)}"


def number(value: float, spec: str = ".3f") -> str:
    return "n/a" if value is None or math.isnan(value) else format(value, spec)


def points(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 100:+.0f} pts"


def span(row: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """An interval of differences in points, or why there is none."""
    if math.isnan(row[low]):
        return row.get("note") or "no interval"
    return f"{points(row[low])} to {points(row[high])}"


def confidence(row: Any) -> str:
    """An interval's level as a reader sees it: 95%, 99.7%."""
    level, low = row.get("confidence", math.nan), row.get("ci_low", math.nan)
    return "-" if level != level or low != low else f"{100 * level:.4g}%"


def p_value(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3g}"


def level(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def cells(frame: Any, columns: dict[str, Any]) -> list[list[str]]:
    """The table's rows as text: header -> column name or a function of the row."""
    return [[fn(row) if callable(fn) else str(row[fn]) for fn in columns.values()]
            for _, row in frame.iterrows()]


def table(frame: Any, columns: dict[str, Any]) -> str:
    """A Markdown table: header -> column name or a function of the row."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in cells(frame, columns):
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ")
                                       for c in row) + " |")
    return "\n".join(lines)
