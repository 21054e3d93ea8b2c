"""Seaborn charts of a run (PNG, ~110 dpi); each still renders, with a note, when it has no data."""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.stats import mean_interval, wilson

DPI = 110
CAP = 5
CHARTS: list[tuple[str, str, Callable[..., Any]]] = []


def chart(name: str, title: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        CHARTS.append((name, title, fn))
        return fn

    return register


def _note(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=10, color="#444",
            transform=ax.transAxes, bbox={"boxstyle": "round", "fc": "#f4f4f4", "ec": "#bbb"})


def _fmt_t(value: float) -> str:
    return f"{value:g}"


def _models(df: Any) -> list[str]:
    return sorted(df["model_label"].unique())


@chart("success_heatmap.png", "Success rate by persona and temperature")
def success_heatmap(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    models, variations = _models(df), sorted(df["variation"].unique())
    fig, axes = plt.subplots(len(variations), len(models), squeeze=False,
                             figsize=(1.6 + 3.6 * len(models), 0.9 + 2.6 * len(variations)))
    temps = sorted(df["temperature"].unique())
    personas = sorted(df["persona"].unique())
    for i, variation in enumerate(variations):
        for j, model in enumerate(models):
            ax = axes[i][j]
            part = summary[(summary["model"] == model) & (summary["variation"] == variation)]
            rate = part.pivot(index="persona", columns="temperature", values="success_rate")
            n = part.pivot(index="persona", columns="temperature", values="n")
            rate = rate.reindex(index=personas, columns=temps)
            n = n.reindex(index=personas, columns=temps)
            labels = rate.copy().astype(object)
            for p in personas:
                for t in temps:
                    value = rate.loc[p, t]
                    labels.loc[p, t] = "not run" if math.isnan(value) else \
                        f"{value:.0%}\nn={int(n.loc[p, t])}"
            sns.heatmap(rate.astype(float), ax=ax, vmin=0, vmax=1, cmap="RdYlGn",
                        annot=labels.values, fmt="", cbar=j == len(models) - 1,
                        cbar_kws={"label": "success rate"}, linewidths=0.5,
                        annot_kws={"fontsize": 9})
            title = model if len(variations) == 1 else f"{model}\nvariation: {variation}"
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("temperature")
            ax.set_ylabel("persona" if j == 0 else "")
            ax.set_xticklabels([_fmt_t(t) for t in temps])
            ax.tick_params(axis="y", rotation=0)
    return fig


@chart("latency.png", "Latency per case by model and persona")
def latency(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(_models(df)) + 3), 4.4))
    order, hue_order = _models(df), sorted(df["persona"].unique())
    sns.boxplot(df, x="model_label", y="latency_s", hue="persona", order=order,
                hue_order=hue_order, ax=ax, showfliers=False, width=0.7, palette="Set2")
    sns.stripplot(df, x="model_label", y="latency_s", hue="persona", order=order,
                  hue_order=hue_order, ax=ax, dodge=True, size=2.5, alpha=0.45,
                  palette="dark:#333", legend=False)
    positive = df["latency_s"][df["latency_s"] > 0]
    log = bool(len(positive)) and positive.max() / max(positive.min(), 1e-6) > 50
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("model")
    ax.set_ylabel(f"latency per case, all turns (s{', log scale' if log else ''})")
    ax.legend(title="persona", fontsize=8, title_fontsize=9)
    return fig


def _band(ax: Any, xs: list[float], ys: list[float], lows: list[float], highs: list[float],
          label: str, color: Any) -> None:
    ax.plot(xs, ys, marker="o", label=label, color=color)
    if not all(math.isnan(v) for v in lows):
        ax.fill_between(xs, lows, highs, alpha=0.12, color=color, linewidth=0)


@chart("temperature_curves.png", "Temperature response: success and answer length")
def temperature_curves(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    models = _models(df)
    fig, axes = plt.subplots(2, len(models), squeeze=False, sharex=True,
                             figsize=(max(7.0, 1.0 + 4.4 * len(models)), 6.4))
    personas = sorted(df["persona"].unique())
    colors = dict(zip(personas, sns.color_palette("Set2", len(personas)), strict=True))
    span = float(df["temperature"].max() - df["temperature"].min()) or 1.0
    for j, model in enumerate(models):
        part = df[df["model_label"] == model]
        for i, persona in enumerate(personas):
            # A small sideways offset per persona keeps equal lines from hiding each other.
            shift = (i - (len(personas) - 1) / 2) * 0.012 * span
            rows = part[part["persona"] == persona]
            temps = sorted(rows["temperature"].unique())
            if not temps:
                continue
            rate, length = [], []
            for t in temps:
                at = rows[rows["temperature"] == t]
                k, n = int(at["success"].sum()), len(at)
                rate.append((k / n, *wilson(k, n)))
                length.append(mean_interval(at["response_words"].astype(float).tolist()))
            xs = [t + shift for t in temps]
            for ax, series in ((axes[0][j], rate), (axes[1][j], length)):
                ys, lows, highs = (list(v) for v in zip(*series, strict=True))
                _band(ax, xs, ys, lows, highs, persona, colors[persona])
        axes[0][j].set_title(model, fontsize=10)
        axes[0][j].set_ylim(-0.02, 1.02)
        axes[0][j].set_ylabel("success rate (95% Wilson band)" if j == 0 else "")
        axes[1][j].set_ylabel("answer length, words (mean, 95% CI)" if j == 0 else "")
        axes[1][j].set_xlabel("temperature")
        axes[0][j].yaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
        axes[1][j].set_xticks(sorted(df["temperature"].unique()))
    axes[0][0].legend(title="persona", fontsize=8, title_fontsize=9, loc="lower left")
    return fig


def _tool_counts(df: Any) -> Any:
    import pandas as pd

    rows = []
    for r in df.itertuples():
        names = [n for turn in r.tool_sequence.split(" | ") for n in turn.split(">")
                 if n and n != "(none)"]
        rows.append({"scenario": r.scenario, **Counter(names)})
    counts = pd.DataFrame(rows).fillna(0)
    return counts.groupby("scenario").mean()


@chart("tool_use.png", "Tool calls per case by scenario")
def tool_use(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    counts = _tool_counts(df)
    if counts.shape[1] == 0:
        fig, ax = plt.subplots(figsize=(7, 3))
        _note(ax, "No tool was called in this run.")
        ax.set_axis_off()
        return fig
    counts = counts[sorted(counts.columns)]
    fig, ax = plt.subplots(figsize=(max(6.0, 2.5 + 0.75 * counts.shape[1]),
                                    max(3.5, 1.5 + 0.38 * len(counts))))
    sns.heatmap(counts, ax=ax, annot=True, fmt=".2g", cmap="Blues", linewidths=0.5, vmin=0,
                cbar_kws={"label": "mean calls per case"}, annot_kws={"fontsize": 8},
                mask=counts == 0)
    ax.set_xlabel("tool")
    ax.set_ylabel("scenario")
    ax.tick_params(axis="x", rotation=40)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    return fig


@chart("iterations.png", "Model calls per user turn")
def iterations(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    import pandas as pd

    hue = "model_label" if df["model_label"].nunique() > 1 else "persona"
    rows = [{"calls": int(v), hue: getattr(r, hue)} for r in df.itertuples()
            for v in str(r.turn_iterations).split("|") if v.strip().isdigit()]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    if not rows:
        _note(ax, "No turn finished, so there are no iterations to show.")
        return fig
    turns = pd.DataFrame(rows)
    order = list(range(0, max(CAP, int(turns["calls"].max())) + 1))
    sns.countplot(turns, x="calls", hue=hue, order=order, hue_order=sorted(turns[hue].unique()),
                  ax=ax, palette="Set2")
    ax.axvline(order.index(CAP), color="#c0392b", linestyle="--", linewidth=1)
    ax.text(order.index(CAP) - 0.1, ax.get_ylim()[1] * 0.95, f"cap ({CAP})", ha="right",
            va="top", color="#c0392b", fontsize=9)
    ax.set_xlabel("model calls (reasoning iterations) in one user turn")
    ax.set_ylabel("user turns")
    ax.legend(title="model" if hue == "model_label" else "persona", fontsize=8)
    return fig


@chart("cost_vs_success.png", "Estimated cost vs. success per configuration")
def cost_vs_success(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    data = summary.copy()
    free = bool((data["mean_cost_usd"].fillna(0.0) == 0).all())
    data["cost"] = data["mean_cost_usd"].fillna(0.0)
    if free:
        # Everything sits at $0: spread the points a little so each configuration stays visible.
        data["cost"] = [(i - (len(data) - 1) / 2) * 0.6 / max(len(data), 1)
                        for i in range(len(data))]
    models = _models(df)
    palette = dict(zip(models, sns.color_palette("tab10", len(models)), strict=False))
    for r in data.itertuples():
        ax.errorbar(r.cost, r.success_rate, yerr=[[max(0.0, r.success_rate - r.ci_low)],
                                                   [max(0.0, r.ci_high - r.success_rate)]],
                    fmt="none", ecolor=palette[r.model], alpha=0.35, capsize=2)
    sns.scatterplot(data, x="cost", y="success_rate", hue="model", style="persona", s=70,
                    ax=ax, palette=palette, hue_order=models)
    ax.set_ylim(-0.02, 1.05)
    ax.yaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    ax.set_xlabel("mean estimated cost per case (USD)")
    ax.set_ylabel("success rate (95% Wilson interval)")
    if free:
        unknown = bool(data["mean_cost_usd"].isna().any())
        text = ("No configuration has a known price\n(see experiments/prices.yaml)." if unknown
                else "Every configuration is free (estimated $0): the offline model\n"
                "is rule-based, so only the success axis carries information;\n"
                "points are spread sideways only to keep them apart.")
        ax.set_xlim(-1, 1)
        ax.set_xticks([0], ["$0" if not unknown else "unknown"])
        ax.text(0.03, 0.05, text, transform=ax.transAxes, fontsize=9, color="#444",
                bbox={"boxstyle": "round", "fc": "#f4f4f4", "ec": "#bbb"})
    else:
        ax.xaxis.set_major_formatter(plt.matplotlib.ticker.StrMethodFormatter("${x:,.4f}"))
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


@chart("scenario_success.png", "Success rate by scenario")
def scenario_success(df: Any, summary: Any, plt: Any, sns: Any) -> Any:
    rows = []
    for scenario, group in df.groupby("scenario"):
        k, n = int(group["success"].sum()), len(group)
        low, high = wilson(k, n)
        rows.append((k / n, low, high, scenario, group["category"].iloc[0]))
    rows.sort()
    fig, ax = plt.subplots(figsize=(10.0, max(3.0, 1.2 + 0.36 * len(rows))))
    categories = sorted({r[4] for r in rows})
    colors = dict(zip(categories, sns.color_palette("Set2", len(categories)), strict=True))
    for y, (rate, low, high, scenario, category) in enumerate(rows):
        ax.barh(y, rate, color=colors[category], label=category)
        n = int((df["scenario"] == scenario).sum())
        ax.text(1.02, y, f"{rate:.0%} (n={n})", va="center", fontsize=8, color="#333",
                transform=ax.get_yaxis_transform())
        ax.errorbar(rate, y, xerr=[[max(0.0, rate - low)], [max(0.0, high - rate)]], fmt="none",
                    ecolor="#333",
                    capsize=2, linewidth=0.8)
    ax.set_yticks(range(len(rows)), [r[3] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.0)
    ax.xaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    ax.set_xlabel("success rate (95% Wilson interval), all configurations pooled")
    ax.set_ylabel("scenario")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), title="category", fontsize=8,
              loc="center left", bbox_to_anchor=(1.2, 0.5))
    return fig


@dataclass(frozen=True)
class ChartFile:
    title: str
    name: str
    error: str | None = None


def write_charts(df: Any, summary: Any, charts_dir: Path) -> list[ChartFile]:
    """Draw every registered chart into charts_dir; a chart that fails says why in its PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.9)
    charts_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, title, draw in CHARTS:
        error = None
        try:
            with warnings.catch_warnings():
                # seaborn 0.13 still passes boxplot arguments matplotlib 3.11 deprecates.
                warnings.simplefilter("ignore", matplotlib.MatplotlibDeprecationWarning)
                fig = draw(df, summary, plt, sns)
        except Exception as exc:  # noqa: BLE001 - one bad chart must not lose the others
            error = f"{type(exc).__name__}: {exc}"
            fig, ax = plt.subplots(figsize=(7, 3))
            _note(ax, f"This chart could not be drawn: {error}")
            ax.set_axis_off()
        fig.suptitle(title, fontsize=12, fontweight="bold")
        fig.tight_layout()
        fig.savefig(charts_dir / name, dpi=DPI)
        plt.close(fig)
        written.append(ChartFile(title, name, error))
    return written
