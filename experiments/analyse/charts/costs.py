"""Charts of what cases cost: latency per model call and to the first token, money against
success, tools and model calls used, and the errors that stopped cases."""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from typing import Any

from experiments.analyse.charts import (
    chart,
    colours,
    empty,
    levels,
    markers,
    note,
    rate_axis,
    t_label,
)

CAP = 5


def _hue(df: Any) -> tuple[str, str]:
    """Colour by temperature when it varies (it is what a reader compares), else by persona."""
    if df["temperature"].nunique() > 1:
        return "temperature", "temperature"
    return "persona", "persona"


def _box(ax: Any, sns: Any, data: Any, y: str, hue: str) -> None:
    order, hue_order = levels(data, "model_label"), levels(data, hue)
    palette = colours(hue_order)
    sns.boxplot(data, x="model_label", y=y, hue=hue, order=order, hue_order=hue_order, ax=ax,
                showfliers=False, width=0.7, palette=palette)
    sns.stripplot(data, x="model_label", y=y, hue=hue, order=order, hue_order=hue_order,
                  ax=ax, dodge=True, size=2.2, alpha=0.4, palette="dark:#333", legend=False)
    positive = data[y][data[y] > 0]
    if len(positive) and positive.max() / max(positive.min(), 1e-6) > 50:
        ax.set_yscale("log")


@chart("latency_per_call.png", "Latency per model call and time to first token",
       "Case latency divided by its model calls, so one-call and three-call scenarios compare;"
       " the right panel is the wait until the first model output arrived (retries included).")
def latency_per_call(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    data = df[df["judged"]].copy()
    if data.empty:
        return empty(plt, "Every case errored: no latency to show.")
    hue, name = _hue(data)
    if hue == "temperature":
        data["temperature"] = data["temperature"].map(t_label)
    fig, axes = plt.subplots(1, 2, figsize=(max(9.0, 3.0 * data["model_label"].nunique() + 5),
                                            4.4))
    for ax, column, label in ((axes[0], "latency_per_call_s", "seconds per model call"),
                              (axes[1], "ttft_s", "seconds to first token")):
        part = data.dropna(subset=[column])
        if part.empty:
            note(ax, "not recorded in this run")
            continue
        _box(ax, sns, part, column, hue)
        ax.set_xlabel("model")
        ax.set_ylabel(label)
        if ax.get_legend():
            ax.get_legend().set_title(name)
    return fig


@chart("cost_vs_success.png", "Estimated cost vs. success per configuration",
       "One panel per persona; colour is the model and the marker the temperature, so every "
       "configuration is a distinct point with its 95% interval.")
def cost_vs_success(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    personas = levels(summary, "persona")
    colour, marker = colours(levels(summary, "model")), markers(levels(summary, "temperature"))
    costs = summary["mean_cost_usd"]
    free = bool((costs.fillna(0.0) == 0).all())
    # Unpriced configurations are not free: they sit apart, left of $0, under their own tick.
    unpriced_x = -0.12 * float(costs.max()) if not free else 0.0
    fig, axes = plt.subplots(1, len(personas), squeeze=False, sharey=True,
                             figsize=(max(7.0, 1.5 + 3.6 * len(personas)), 4.6))
    for ax, persona in zip(axes[0], personas, strict=True):
        part = summary[summary["persona"] == persona].reset_index(drop=True)
        for i, r in part.iterrows():
            # All free: spread the points sideways so none hides another.
            priced = not math.isnan(r["mean_cost_usd"])
            x = ((i - (len(part) - 1) / 2) * 0.08 if free else
                 r["mean_cost_usd"] if priced else unpriced_x)
            ax.errorbar(x, r["success_rate"], yerr=[[max(0.0, r["success_rate"] - r["ci_low"])],
                                                    [max(0.0, r["ci_high"] - r["success_rate"])]],
                        fmt=marker[r["temperature"]], color=colour[r["model"]], capsize=2,
                        markersize=7, label=f"{r['model']}, {t_label(r['temperature'])}")
        ax.set_title(persona, fontsize=10)
        ax.set_ylim(-0.03, 1.05)
        if free:
            ax.set_xlim(-1, 1)
            ax.set_xticks([0], [_free_label(costs)])
        elif costs.isna().any():
            ax.axvline(unpriced_x / 2, color="0.7", linewidth=0.8, linestyle=":")
            ticks = [t for t in ax.get_xticks() if t >= 0]
            ax.set_xticks([unpriced_x, *ticks], ["unpriced", *(f"{t:.2g}" for t in ticks)])
        ax.set_xlabel("mean estimated cost per case (USD)")
    axes[0][0].yaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    axes[0][0].set_ylabel(rate_axis(summary["ci_method"]), fontsize=8)
    handles, labels_ = axes[0][-1].get_legend_handles_labels()
    for ax in axes[0]:
        more_h, more_l = ax.get_legend_handles_labels()
        handles, labels_ = handles + more_h, labels_ + more_l
    unique = dict(zip(labels_, handles, strict=True))
    axes[0][-1].legend(unique.values(), unique.keys(), fontsize=7, loc="center left",
                       bbox_to_anchor=(1.01, 0.5))
    return fig


def _free_label(costs: Any) -> str:
    if costs.isna().all():
        return "unpriced"
    return "$0 (free)" if costs.notna().all() else "$0 (free) or unpriced"


def _tool_counts(df: Any) -> Any:
    """Mean calls of each tool per case, by scenario, and by model too when there are several
    (pooled, one model's calls would hide another's)."""
    import pandas as pd

    several = df["model_label"].nunique() > 1
    rows = []
    for r in df.itertuples():
        names = [name for turn in r.tool_sequence for name in turn]
        row = f"{r.scenario} / {r.model_label}" if several else r.scenario
        rows.append({"scenario": row, **Counter(names)})
    counts = pd.DataFrame(rows).fillna(0)
    return counts.groupby("scenario").mean()


@chart("tool_use.png", "Tool calls per case by scenario",
       "Mean calls of each tool per case (by model when there are several); a scenario's "
       "expected tool should be the bright cell "
       "in its row, and stray tools show up as faint cells.")
def tool_use(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    counts = _tool_counts(df)
    if counts.shape[1] == 0:
        return empty(plt, "No tool was called in this run.")
    counts = counts[sorted(counts.columns)]
    fig, ax = plt.subplots(figsize=(max(6.0, 2.5 + 0.75 * counts.shape[1]),
                                    max(3.5, 1.5 + 0.38 * len(counts))))
    sns.heatmap(counts, ax=ax, annot=True, fmt=".2g", cmap="cividis", linewidths=0.5, vmin=0,
                cbar_kws={"label": "mean calls per case"}, annot_kws={"fontsize": 8},
                mask=counts == 0)
    ax.set_xlabel("tool")
    ax.set_ylabel("scenario")
    ax.tick_params(axis="x", rotation=40)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    return fig


@chart("model_calls.png", "Model calls per user turn",
       "How many model calls each user turn took; bars beside each other compare strategies "
       "when they vary (each has its own budget), else models; the dashed line is the react "
       "loop's cap of five.")
def model_calls(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    import pandas as pd

    hue = next((c for c in ("strategy", "model_label") if c in df and df[c].nunique() > 1),
               "persona")
    # Runs made before per-turn model calls were recorded have their model replies per turn.
    source = "turn_model_calls" if any(len(c) for c in df["turn_model_calls"]) \
        else "turn_iterations"
    rows = [{"calls": calls, hue: getattr(r, hue)} for r in df.itertuples()
            for calls in getattr(r, source)]
    if not rows:
        return empty(plt, "No turn finished, so there are no model calls to show.")
    turns = pd.DataFrame(rows)
    order = list(range(0, max(CAP, int(turns["calls"].max())) + 1))
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    hue_order = sorted(turns[hue].unique())
    sns.countplot(turns, x="calls", hue=hue, order=order, hue_order=hue_order, ax=ax,
                  palette=colours(hue_order))
    ax.axvline(order.index(CAP), color="#D55E00", linestyle="--", linewidth=1)
    # The cap's label above the plot and the legend beside it: neither covers a bar.
    ax.text(order.index(CAP), 1.01, f"react cap ({CAP})", ha="center", va="bottom",
            color="#D55E00", fontsize=9, transform=ax.get_xaxis_transform())
    what = "model calls" if source == "turn_model_calls" else "model replies (older run)"
    ax.set_xlabel(f"{what} in one user turn")
    ax.set_ylabel("user turns")
    ax.legend(title={"model_label": "model"}.get(hue, hue), fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), labels=[textwrap.fill(str(h), 30) for h in hue_order])
    return fig


@chart("errors.png", "Errored cases by type",
       "Cases the provider or harness could not finish, by error type and model; they are left "
       "out of every success rate, and --retry-errors runs them again.")
def errors(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    failed = df[~df["judged"]]
    if failed.empty:
        return empty(plt, f"No case errored ({len(df)} cases ran to a verdict).")
    table = failed.groupby(["error_type", "model_label"]).size().unstack(fill_value=0)
    fig, ax = plt.subplots(figsize=(7.5, max(2.8, 1.4 + 0.5 * len(table))))
    left = None
    palette = colours(list(table.columns))
    for model in table.columns:
        ax.barh(table.index, table[model], left=left, color=palette[model], label=model)
        left = table[model] if left is None else left + table[model]
    ax.set_xlabel("errored cases")
    ax.set_ylabel("error type")
    ax.legend(title="model", fontsize=8)
    return fig
