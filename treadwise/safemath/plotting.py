"""The area-under-a-curve figure: curve, shaded area, dashed bounds, label and title, as PNG."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import IO

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.numeric import Numeric

SAMPLES = 1201
FIGSIZE = (5.6, 5.0)  # inches: 616 x 550 px
DPI = 110
TEXT_PT, TITLE_PT = 12, 14  # about 9 and 11 px high on a 400 px phone
TITLE_CHARS = 44


@dataclass(frozen=True)
class AreaPlot:
    """What the figure says: the bounds, their labels and the texts around the curve."""

    lower: float
    upper: float
    lower_label: str
    upper_label: str
    title: str
    area_label: str
    curve_label: str


def render_area(function: Numeric, plot: AreaPlot, target: str | IO[bytes]) -> None:
    """Draw `function` over a little more than [lower, upper] with the area shaded; save as PNG."""
    lo, hi = sorted((plot.lower, plot.upper))
    pad = (hi - lo) * 0.15 or 0.5
    xs = np.union1d(np.linspace(lo - pad, hi + pad, SAMPLES), [lo, hi])
    ys = _values(function, xs)
    finite = np.isfinite(ys)
    inside = (xs >= lo) & (xs <= hi)
    if not (finite & inside).any():
        raise MathInputError(
            f"the function has no real values between {plot.lower_label} and {plot.upper_label}, "
            "so there is nothing to plot"
        )
    if np.isinf(ys[inside]).mean() > 0.5:
        raise MathInputError(
            f"the curve is too large to draw between {plot.lower_label} and {plot.upper_label} "
            "(beyond 1e308 over most of the range); try bounds closer together"
        )
    bottom, top = _view(ys[finite])
    span = top - bottom
    # Points far outside the view are poles: leaving them out breaks the line instead of
    # drawing a vertical stroke from +big to -big.
    shown = finite & (ys > bottom - 2 * span) & (ys < top + 2 * span)
    curve = np.where(shown, ys, np.nan)
    fill = np.clip(np.where(finite, ys, 0.0), bottom - span, top + span)

    figure = area_figure(xs, curve, fill, inside & shown, (lo - pad, hi + pad), (bottom, top),
                         plot)
    figure.savefig(target, format="png")


def area_figure(xs: np.ndarray, curve: np.ndarray, fill: np.ndarray, shaded: np.ndarray,
                x_range: tuple[float, float], y_range: tuple[float, float],
                plot: AreaPlot) -> Figure:
    """The laid-out figure. A phone shows it about 300 px wide, half its size: fonts are large
    enough to read there, and the legend sits below the axes, off the curve and away from the
    top corner where the page puts its fullscreen and download buttons."""
    figure = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(xs, curve, color="#1f77b4", linewidth=2.2, label=plot.curve_label)
    axes.fill_between(xs, fill, 0, where=shaded, interpolate=True, color="#1f77b4",
                      alpha=0.3, label=plot.area_label)
    for value, label in ((plot.lower, plot.lower_label), (plot.upper, plot.upper_label)):
        axes.axvline(value, color="#d62728", linestyle="--", linewidth=1.5, label=f"x = {label}")
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xlim(*x_range)
    axes.set_ylim(*y_range)
    axes.set_title("\n".join(textwrap.wrap(plot.title, TITLE_CHARS)) or plot.title,
                   fontsize=TITLE_PT)
    axes.set_xlabel("x", fontsize=TEXT_PT)
    axes.set_ylabel("f(x)", fontsize=TEXT_PT)
    axes.tick_params(labelsize=TEXT_PT)
    axes.grid(True, alpha=0.35)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, fontsize=TEXT_PT,
                frameon=False)
    figure.tight_layout()
    # tight_layout leaves a placeholder engine behind, which makes savefig draw everything
    # twice (a dry run first); the layout is already final, so drop it: same pixels, one draw.
    figure.set_layout_engine(None)
    return figure


def _values(function: Numeric, xs: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        ys = np.asarray(function(xs))
    if np.iscomplexobj(ys):
        ys = np.where(np.abs(ys.imag) < 1e-12, ys.real, np.nan)
    return ys.astype(float)


def _view(values: np.ndarray) -> tuple[float, float]:
    """A y-range that shows the curve and the axis, ignoring the spikes near poles."""
    low, high = float(values.min()), float(values.max())
    q_low, q_high = (float(v) for v in np.percentile(values, [2, 98]))
    if high - low > 10 * max(q_high - q_low, 1e-12):
        middle = q_high - q_low or 1.0
        low, high = q_low - 0.5 * middle, q_high + 0.5 * middle
    low, high = min(low, 0.0), max(high, 0.0)
    margin = (high - low) * 0.08 or 1.0
    return low - margin, high + margin
