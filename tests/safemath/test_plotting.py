"""The integral's plot reads on a phone: its legend sits off the curve, below the axes and away
from the top corner where the page puts its buttons, and its text is legible at 400 px."""

from __future__ import annotations

import numpy as np
import pytest

from treadwise.safemath.plotting import AreaPlot, area_figure, render_area

SHOWN_PX = 300  # how wide the chat shows a plot on a 400 px screen (its bubble)
MIN_TEXT_PX = 8.5  # the smallest text height, on that screen, a reader can still read


def figure(function, lower: float, upper: float, area: str):
    xs = np.linspace(lower - 0.5, upper + 0.5, 401)
    ys = function(xs)
    plot = AreaPlot(lower, upper, f"{lower:g}", f"{upper:g}",
                    f"\u222b from {lower:g} to {upper:g} = {area.split()[-1]}", area,
                    "f(x) = x\u00b2")
    fig = area_figure(xs, ys, ys, (xs >= lower) & (xs <= upper), (xs[0], xs[-1]),
                      (float(ys.min()) - 1, float(ys.max()) + 1), plot)
    fig.canvas.draw()
    return fig


@pytest.mark.parametrize("function, lower, upper, area", [
    (np.square, 0.0, 3.0, "Area = 9"),
    (np.sin, 0.0, 2 * np.pi, "Signed integral = 0\ngeometric area = 4"),
])
def test_the_legend_is_below_the_axes_not_on_the_curve(function, lower, upper, area):
    fig = figure(function, lower, upper, area)
    axes = fig.axes[0]
    legend = axes.get_legend().get_window_extent()
    frame = axes.get_window_extent()
    assert legend.y1 < frame.y0, "the legend overlaps the plotting area"
    # The page's fullscreen and download buttons sit in the image's top right corner.
    width, height = fig.get_size_inches() * fig.dpi
    assert legend.y1 < height * 0.75 and legend.x0 >= 0 and legend.x1 <= width
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert area in labels and "x = 0" in labels, labels


def test_every_text_is_legible_when_a_phone_shows_the_plot_300_px_wide():
    fig = figure(np.square, 0.0, 3.0, "Area = 9")
    scale = SHOWN_PX / (fig.get_size_inches()[0] * fig.dpi)
    axes = fig.axes[0]
    texts = [axes.title, axes.xaxis.label, axes.yaxis.label,
             *axes.get_xticklabels(), *axes.get_yticklabels(), *axes.get_legend().get_texts()]
    heights = {t.get_text(): t.get_fontsize() * fig.dpi / 72 * scale for t in texts
               if t.get_text()}
    assert min(heights.values()) >= MIN_TEXT_PX, heights


def test_the_png_is_written(tmp_path):
    target = tmp_path / "area.png"
    render_area(np.square, AreaPlot(0, 3, "0", "3", "\u222b = 9", "Area = 9", "f(x) = x\u00b2"),
                str(target))
    assert target.read_bytes().startswith(b"\x89PNG")
