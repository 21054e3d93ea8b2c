"""The persona chart: style measures (and the judge's score) compared across personas."""

from __future__ import annotations

from typing import Any

from experiments.analyse.charts import chart, colours, empty
from experiments.analyse.findings import style_table


@chart("persona_style.png", "Persona style: what each persona's answers contain",
       "Means over scenario means with 95% intervals (t over scenarios; exact for the judge's "
       "1-5 score); a filled marker differs from another persona at the report's one error "
       "rate, tested on one difference per scenario.")
def persona_style_chart(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    style = style_table(df)
    if style.empty:
        return empty(plt, "No judged case: nothing to measure.")
    measures = list(dict.fromkeys(style["measure"]))
    personas = sorted(style["persona"].unique())
    colour = colours(personas)
    fig, axes = plt.subplots(1, len(measures), squeeze=False,
                             figsize=(max(8.0, 2.6 * len(measures)), 3.8))
    for ax, measure in zip(axes[0], measures, strict=True):
        part = style[style["measure"] == measure].set_index("persona").reindex(personas)
        for x, persona in enumerate(personas):
            row = part.loc[persona]
            low, high = (row["mean"] - row["ci_low"], row["ci_high"] - row["mean"])
            ax.errorbar(x, row["mean"], yerr=[[0.0 if low != low else max(0.0, low)],
                                              [0.0 if high != high else max(0.0, high)]],
                        fmt="o", color=colour[persona], capsize=3, markersize=7,
                        markerfacecolor=colour[persona] if row["differs"] else "white")
        ax.set_xticks(range(len(personas)), personas, rotation=30)
        ax.set_title(measure, fontsize=9)
        ax.set_xlim(-0.6, len(personas) - 0.4)
    axes[0][0].set_ylabel("mean over scenarios (95% CI over scenarios)")
    return fig
