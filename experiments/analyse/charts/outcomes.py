"""Charts of success: by persona and temperature, by configuration and scenario, by scenario,
and the temperature response."""

from __future__ import annotations

import math
import textwrap
from typing import Any

from experiments.analyse.charts import (
    HEATMAP,
    chart,
    colours,
    empty,
    levels,
    markers,
    note,
    rate_axis,
    t_label,
)
from experiments.analyse.inference import level_mean


def _counts(group: Any) -> tuple[int, int, int]:
    judged = group[group["judged"]]
    return int(judged["success"].sum()), len(judged), int((~group["judged"]).sum())


def _annotation(k: int, n: int, errors: int) -> str:
    if n == 0:
        return f"errors {errors}" if errors else "not run"
    return f"{k / n:.0%}\n{k}/{n}" + (f"\n+{errors} err" if errors else "")


def _heat(ax: Any, sns: Any, frame: Any, labels: Any, colorbar: bool) -> None:
    sns.heatmap(frame.astype(float), ax=ax, vmin=0, vmax=1, cmap=HEATMAP, annot=labels,
                fmt="", cbar=colorbar, cbar_kws={"label": "success rate (ok / judged)"},
                linewidths=0.5, annot_kws={"fontsize": 8})


def _panel(df: Any, rows: str, columns: str) -> tuple[Any, Any]:
    """Success rates and their "k/n" labels on a rows x columns grid."""
    import pandas as pd

    index, heads = levels(df, rows), levels(df, columns)
    rate = pd.DataFrame(math.nan, index=index, columns=heads)
    text = pd.DataFrame("not run", index=index, columns=heads)
    for (r, c), group in df.groupby([rows, columns]):
        k, n, errors = _counts(group)
        rate.loc[r, c] = k / n if n else math.nan
        text.loc[r, c] = _annotation(k, n, errors)
    return rate, text


@chart("success_heatmap.png", "Success rate by persona and temperature",
       "Each cell is one configuration's success (ok / judged cases) with its counts; darker "
       "is worse, and errored cases are listed, not counted as failures.")
def success_heatmap(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    models = levels(df, "model_label")
    facets = sorted({(v, s) for v, s in zip(df["variation"], df["strategy"], strict=True)})
    fig, axes = plt.subplots(len(facets), len(models), squeeze=False,
                             figsize=(1.8 + 3.8 * len(models), 1.0 + 2.8 * len(facets)))
    for i, (variation, strategy) in enumerate(facets):
        for j, model in enumerate(models):
            ax = axes[i][j]
            part = df[(df["model_label"] == model) & (df["variation"] == variation)
                      & (df["strategy"] == strategy)]
            if part.empty:
                note(ax, "not run")
                ax.set_axis_off()
                continue
            rate, text = _panel(part, "persona", "temperature")
            _heat(ax, sns, rate, text.values, j == len(models) - 1)
            extra = [f"variation: {variation}"] if len(facets) > 1 else []
            extra += [f"strategy: {strategy}"] if df["strategy"].nunique() > 1 else []
            ax.set_title("\n".join([textwrap.fill(model, 32), *extra]), fontsize=10)
            ax.set_xlabel("temperature")
            ax.set_ylabel("persona" if j == 0 else "")
            ax.set_xticklabels([f"{t:g}" for t in rate.columns])
            ax.tick_params(axis="y", rotation=0)
    return fig


@chart("config_scenario.png", "Success by configuration and scenario",
       "Rows are configurations, columns scenarios; each cell shows passed/judged repeats, so "
       "a scenario that fails everywhere reads as a dark column, a weak configuration as a "
       "dark row.")
def config_scenario(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    names = dict(zip(summary["config_hash"], summary["label"], strict=True))
    data = df.assign(configuration=df["config_hash"].map(names))
    rate, text = _panel(data, "configuration", "scenario")
    order = [names[h] for h in summary["config_hash"] if names[h] in rate.index]
    rate, text = rate.loc[order], text.loc[order]
    text = text.map(lambda s: s.split("\n", 1)[-1] if s != "not run" else "-")
    # Long labels (local models' descriptions) are wrapped and given room, never cut.
    wrapped = [textwrap.fill(str(name), 70) for name in rate.index]
    rate.index = text.index = wrapped
    widest = max((len(line) for name in wrapped for line in name.split("\n")), default=0)
    lines = sum(name.count("\n") + 1 for name in wrapped)
    fig, ax = plt.subplots(figsize=(min(30.0, 3.5 + 0.75 * rate.shape[1] + 0.07 * widest),
                                    min(40.0, 1.8 + 0.22 * lines + 0.14 * rate.shape[0])))
    _heat(ax, sns, rate, text.values, True)
    ax.set_xlabel("scenario")
    ax.set_ylabel("configuration (best first)")
    ax.tick_params(axis="x", rotation=45)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    return fig


def _curve(part: Any, persona: str, column: str) -> tuple[list[float], list[float], list[Any]]:
    xs, ys, errs = [], [], []
    rows = part[(part["persona"] == persona) & part["judged"]]
    for t, at in rows.groupby("temperature"):
        found = level_mean(at.astype({column: float}), column,
                           (0.0, 1.0) if column == "success" else None,
                           count=column != "success")
        mean, low, high = found.value, found.low, found.high
        xs.append(float(t))
        ys.append(mean)
        errs.append((0.0 if math.isnan(low) else max(0.0, mean - low),
                     0.0 if math.isnan(high) else max(0.0, high - mean)))
    return xs, ys, errs


@chart("temperature_curves.png", "Temperature response: success and answer length",
       "One panel per model, the y-axis shared along each row; each persona has its own colour"
       " and marker, nudged sideways so equal values stay visible, with 95% interval bars.")
def temperature_curves(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    temps = levels(df, "temperature")
    if len(temps) < 2:
        return empty(plt, f"Temperature does not vary in this run (all cases at T={temps[0]:g})"
                          if temps else "No case ran.")
    models, personas = levels(df, "model_label"), levels(df, "persona")
    colour, marker = colours(personas), markers(personas)
    fig, axes = plt.subplots(2, len(models), squeeze=False, sharex=True, sharey="row",
                             figsize=(max(7.0, 1.2 + 4.4 * len(models)), 6.6))
    span = (max(temps) - min(temps)) or 1.0
    for j, model in enumerate(models):
        part = df[df["model_label"] == model]
        for i, persona in enumerate(personas):
            shift = (i - (len(personas) - 1) / 2) * 0.025 * span
            for row, column in enumerate(("success", "response_words")):
                xs, ys, errs = _curve(part, persona, column)
                if not xs:
                    continue
                axes[row][j].errorbar([x + shift for x in xs], ys,
                                      yerr=list(zip(*errs, strict=True)), label=persona,
                                      color=colour[persona], marker=marker[persona],
                                      capsize=3, linewidth=1.4, markersize=6)
        axes[0][j].set_title(textwrap.fill(model, 32), fontsize=10)
        axes[1][j].set_xlabel("temperature")
        axes[1][j].set_xticks(temps)
    axes[0][0].set_ylim(-0.03, 1.03)
    axes[0][0].yaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    axes[0][0].set_ylabel(rate_axis(summary["ci_method"]), fontsize=8)
    axes[1][0].set_ylabel("answer length, words (mean over scenarios, 95% t)", fontsize=8)
    axes[0][0].legend(title="persona", fontsize=8, title_fontsize=9, loc="lower left")
    return fig


@chart("scenario_success.png", "Success by scenario, configuration by configuration",
       "Each dot is one configuration's success on a scenario (colour: model, marker: "
       "temperature); the bar is the pooled rate, so a low bar with spread dots means the "
       "configuration matters there.")
def scenario_success(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    judged = df[df["judged"]]
    if judged.empty:
        return empty(plt, "Every case errored: no success rate to show.")
    pooled = judged.groupby("scenario")["success"].mean().sort_values()
    per = judged.groupby(["scenario", "config_hash", "model_label", "temperature"])[
        "success"].mean().reset_index()
    colour, marker = colours(levels(df, "model_label")), markers(levels(df, "temperature"))
    fig, ax = plt.subplots(figsize=(10.0, max(3.0, 1.4 + 0.38 * len(pooled))))
    position = {s: y for y, s in enumerate(pooled.index)}
    ax.barh(range(len(pooled)), pooled.values, color="#d9d9d9", label="pooled")
    for (model, temp), group in per.groupby(["model_label", "temperature"]):
        ys = [position[s] + (int(h[:4], 16) % 7 - 3) * 0.07 for s, h in
              zip(group["scenario"], group["config_hash"], strict=True)]
        ax.scatter(group["success"], ys, color=colour[model], marker=marker[temp], s=22,
                   alpha=0.85, label=f"{model}, {t_label(temp)}", linewidths=0)
    ax.set_yticks(range(len(pooled)), list(pooled.index))
    ax.set_xlim(-0.03, 1.03)
    ax.xaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    ax.set_xlabel("success rate of one configuration on the scenario (ok / judged)")
    handles, labels_ = ax.get_legend_handles_labels()
    unique = dict(zip(labels_, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    return fig
