"""Charts of a run (PNG, ~110 dpi), each with a one-line caption saying what to read from it.

Colours come from the Okabe-Ito palette and heatmaps from cividis, so every chart reads the
same to colour-blind readers; a chart with nothing to show still renders, with a note.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treadwise.plugins import Registry
from treadwise.replace_file import replace_text, replacing

DPI = 110
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
HEATMAP = "cividis"
ENTRY_POINT_GROUP = "experiments.charts"
# charts/INDEX_FILE lists the charts as the report shows them: in order, each with its title,
# caption and whether it had anything to show.
INDEX_FILE = "charts.json"
EMPTY = "treadwise-empty-chart"
# The charts a reader looks at first, in this order (the report's and the app's); the others
# follow in the registry's order.
KEY_CHARTS = ("success_heatmap.png", "config_scenario.png", "scenario_success.png",
              "temperature_curves.png", "cost_vs_success.png")


@dataclass(frozen=True)
class Chart:
    name: str
    title: str
    caption: str
    draw: Callable[..., Any]


@dataclass(frozen=True)
class ChartFile:
    title: str
    name: str
    caption: str
    error: str | None = None
    empty: bool = False  # nothing to show: the PNG holds a note saying why


CHARTS: Registry[Chart] = Registry(ENTRY_POINT_GROUP)


def chart(name: str, title: str, caption: str) -> Callable[[Callable[..., Any]], Any]:
    """Register a chart: draw(df, summary, plt, sns) returns a matplotlib figure."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        CHARTS.add(name, Chart(name, title, caption, fn))
        return fn

    return register


def note(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=10, color="#444",
            transform=ax.transAxes, bbox={"boxstyle": "round", "fc": "#f4f4f4", "ec": "#bbb"})


def empty(plt: Any, text: str) -> Any:
    """A chart with nothing to show: the note alone (the index marks it, so a page can hide
    it while the report keeps the note)."""
    fig, ax = plt.subplots(figsize=(7, 2.6))
    note(ax, text)
    ax.set_axis_off()
    fig.set_label(EMPTY)
    return fig


def colours(levels: list[Any]) -> dict[Any, str]:
    """A colour per level; beyond eight levels the palette repeats (markers still differ)."""
    return {level: OKABE_ITO[i % len(OKABE_ITO)] for i, level in enumerate(levels)}


def markers(levels: list[Any]) -> dict[Any, str]:
    return {level: MARKERS[i % len(MARKERS)] for i, level in enumerate(levels)}


def levels(df: Any, column: str) -> list[Any]:
    return sorted(df[column].dropna().unique())


def t_label(value: float) -> str:
    return f"T={value:g}"


def rate_axis(methods: Any) -> str:
    """A success axis naming the interval the points carry (inference.RATE_METHOD, or none
    when a configuration had too few scenarios for one)."""
    from experiments.analyse.inference import RATE_METHOD

    found = set(methods)
    shown = "95% " + RATE_METHOD if RATE_METHOD in found else "no interval"
    if found - {RATE_METHOD}:
        shown += "; some: too few scenarios, no interval" if RATE_METHOD in found else \
            ": too few scenarios"
    return f"success ({shown})"


def registered() -> list[Chart]:
    """Every chart, built-in and plugged in, its module imported (charts register on import),
    the key charts first."""
    charts = [item for item in CHARTS.load_all().values() if isinstance(item, Chart)]
    first = {name: place for place, name in enumerate(KEY_CHARTS)}
    return sorted(charts, key=lambda c: first.get(c.name, len(first)))


def write_charts(df: Any, summary: Any, charts_dir: Path) -> list[ChartFile]:
    """Draw every registered chart into charts_dir; a chart that fails says why in its PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.9, palette=OKABE_ITO)
    charts_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for item in registered():
        error = None
        try:
            with warnings.catch_warnings():
                # seaborn 0.13 still passes boxplot arguments matplotlib 3.11 deprecates.
                warnings.simplefilter("ignore", matplotlib.MatplotlibDeprecationWarning)
                fig = item.draw(df, summary, plt, sns)
        except Exception as exc:  # noqa: BLE001 - one bad chart must not lose the others
            error = f"{type(exc).__name__}: {exc}"
            fig = empty(plt, f"This chart could not be drawn: {error}")
        fig.suptitle(item.title, fontsize=12, fontweight="bold")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a crowded chart keeps its layout
            fig.tight_layout()
        with replacing(charts_dir / item.name, binary=True) as out:  # the tab may be reading it
            fig.savefig(out, dpi=DPI, format="png")
        written.append(ChartFile(item.title, item.name, item.caption, error,
                                 fig.get_label() == EMPTY and error is None))
        plt.close(fig)
    replace_text(charts_dir / INDEX_FILE,
                 json.dumps([dataclasses.asdict(c) for c in written], indent=1))
    return written
