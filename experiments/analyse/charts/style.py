"""The persona chart: style measures (and the judge's score) compared across personas."""

from __future__ import annotations

from typing import Any

from experiments.analyse.charts import chart, colours, empty
from experiments.analyse.tables import persona_style


@chart("persona_style.png", "Persona style: what each persona's answers contain",
       "Per case means with 95% intervals; personas that differ in tone should separate on "
       "hedging, questions and numbers (p is Kruskal-Wallis across personas).")
def persona_style_chart(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    style = persona_style(df)
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
            ax.errorbar(x, row["mean"], yerr=[[max(0.0, row["mean"] - row["ci_low"])],
                                              [max(0.0, row["ci_high"] - row["mean"])]],
                        fmt="o", color=colour[persona], capsize=3, markersize=7)
        ax.set_xticks(range(len(personas)), personas, rotation=30)
        ax.set_title(f"{measure}\np = {part['kruskal_p'].iloc[0]:.2g}", fontsize=9)
        ax.set_xlim(-0.6, len(personas) - 0.4)
    axes[0][0].set_ylabel("per case (mean, 95% CI)")
    return fig
