"""A live experiment's report: per-arm rates per visitor, the differences, the call, the CSV."""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from experiments.live.definition import LiveExperiment, from_stored
from experiments.live.ranking import MIN_PAIR_VISITORS, Ranking, rank
from experiments.live.sequential import (
    MIN_VISITORS,
    Interval,
    difference_interval,
    rate_interval,
)
from experiments.live.store import BOTH_BAD, EVENT_COLUMNS, PICK_COLUMNS, TIE, LiveStore

# The fewest visitors with a decisive pick before a side-by-side report shows any strength or
# interval (the ranking asks this of every pair; the Experiments page reads it from here).
MIN_PICKERS = MIN_PAIR_VISITORS


@dataclass(frozen=True)
class ArmSummary:
    name: str
    persona: str
    model: str
    visitors: int  # assigned
    raters: int  # visitors who rated at least one reply: the unit of the rate
    ups: int
    downs: int
    rate: Interval  # mean over raters of each one's share of replies rated up
    turns_per_visitor: float
    error_rate: float  # failed replies / replies
    leads_per_visitor: float
    versus_control: Interval | None
    score: Interval  # the mean feedback score (1-5) over visitors who gave one


@dataclass(frozen=True)
class PairCount:
    """How often a pair of arms was compared side by side, and how the picks went."""

    arms: tuple[str, str]
    wins: tuple[int, int]
    ties: int
    both_bad: int


@dataclass(frozen=True)
class LiveReport:
    experiment: LiveExperiment
    status: str
    arms: list[ArmSummary]
    better: str | None  # the arm the report may call better, or None
    ranking: Ranking = dataclasses.field(default_factory=Ranking)  # side by side
    pairs: list[PairCount] = dataclasses.field(default_factory=list)
    pickers: int = 0  # visitors who picked at least once

    def text(self) -> str:
        return render(self)


def visitor_rates(events: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """arm -> visitor -> that visitor's share of rated replies rated up. A visitor's ratings
    are not independent of each other, so each visitor counts once, whatever they rated."""
    ratings: dict[tuple[str, str], list[float]] = defaultdict(list)
    for event in events:
        if event["kind"] == "rating":
            ratings[(event["arm"], event["visitor"])].append(1.0 if event["value"] > 0 else 0.0)
    rates: dict[str, dict[str, float]] = defaultdict(dict)
    for (arm, visitor), values in ratings.items():
        rates[arm][visitor] = sum(values) / len(values)
    return rates


def visitor_scores(events: list[dict[str, Any]]) -> dict[str, list[float]]:
    """arm -> each scoring visitor's feedback score, put on 0-1 ((score - 1) / 4)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for event in events:
        if event["kind"] == "score":
            scores[event["arm"]].append((event["value"] - 1) / 4)
    return scores


def score_interval(values: list[float], alpha: float) -> Interval:
    """The mean score on its 1-5 scale, with the rate's confidence sequence mapped there."""
    found = rate_interval(values, alpha)
    return Interval(1 + 4 * found.estimate, 1 + 4 * found.low, 1 + 4 * found.high, found.n)


def pair_counts(experiment: LiveExperiment, picks: list[dict[str, Any]]) -> list[PairCount]:
    found: dict[tuple[str, str], list[int]] = {}
    order = {arm.name: n for n, arm in enumerate(experiment.arms)}
    for pick in picks:
        first, second = sorted((pick["arm_a"], pick["arm_b"]), key=lambda a: order.get(a, 99))
        pair = (first, second)
        counts = found.setdefault(pair, [0, 0, 0, 0])
        winner = pick["winner"]
        column = {pair[0]: 0, pair[1]: 1, TIE: 2, BOTH_BAD: 3}.get(winner)
        if column is not None:
            counts[column] += 1
    return [PairCount(pair, (c[0], c[1]), c[2], c[3]) for pair, c in found.items()]


def analyse(experiment: LiveExperiment, events: list[dict[str, Any]],
            assignments: list[dict[str, Any]], status: str = "running",
            picks: list[dict[str, Any]] | None = None) -> LiveReport:
    rates, scores = visitor_rates(events), visitor_scores(events)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for event in events:
        counts[(event["arm"], event["kind"])] += 1
        if event["kind"] == "rating":
            counts[(event["arm"], "up" if event["value"] > 0 else "down")] += 1
    assigned: dict[str, int] = defaultdict(int)
    for row in assignments:
        assigned[row["arm"]] += 1
    control = list(rates[experiment.arms[0].name].values())
    # Each arm is compared with the control: the error is split between the comparisons.
    alpha = experiment.alpha / max(1, len(experiment.arms) - 1)
    summaries = []
    for index, arm in enumerate(experiment.arms):
        values = list(rates[arm.name].values())
        visitors = assigned[arm.name]
        turns = counts[(arm.name, "turn")]
        summaries.append(ArmSummary(
            arm.name, arm.persona, arm.model, visitors, len(values), counts[(arm.name, "up")],
            counts[(arm.name, "down")], rate_interval(values, experiment.alpha),
            turns / visitors if visitors else 0.0,
            counts[(arm.name, "error")] / turns if turns else 0.0,
            counts[(arm.name, "lead")] / visitors if visitors else 0.0,
            difference_interval(control, values, alpha) if index else None,
            score_interval(scores[arm.name], experiment.alpha)))
    picks = picks or []
    ranking = rank(picks, [arm.name for arm in experiment.arms], experiment.alpha)
    return LiveReport(experiment, status, summaries, _better(summaries), ranking,
                      pair_counts(experiment, picks), len({p["visitor"] for p in picks}))


def _better(arms: list[ArmSummary]) -> str | None:
    """The arm better than all others compared, when a confidence sequence says so."""
    winners = [a for a in arms[1:] if a.versus_control and a.versus_control.low > 0]
    if winners:
        return max(winners, key=lambda a: a.versus_control.estimate).name  # type: ignore
    if all(a.versus_control and a.versus_control.high < 0 for a in arms[1:]):
        return arms[0].name
    return None


def report(store: LiveStore, name: str) -> LiveReport:
    found = store.get(name)
    if found is None:
        raise ValueError(f"there is no live experiment named {name!r}")
    return analyse(from_stored(found["definition"]), store.events(name),
                   store.assignments(name), found["status"], store.picks(name))


def _percent(interval: Interval) -> str:
    if math.isnan(interval.estimate):
        return "no ratings yet"
    return (f"{interval.estimate:.1%} [{interval.low:.1%}, {interval.high:.1%}]")


def _signed(interval: Interval | None) -> str:
    if interval is None:
        return "control"
    if math.isnan(interval.estimate):
        return "no ratings yet"
    return f"{interval.estimate:+.1%} [{interval.low:+.1%}, {interval.high:+.1%}]"


def _score(interval: Interval) -> str:
    if math.isnan(interval.estimate):
        return "none yet"
    return f"{interval.estimate:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def render(result: LiveReport) -> str:
    experiment = result.experiment
    if experiment.side_by_side:
        return "\n".join(_side_by_side(result))
    confidence = 1 - experiment.alpha
    total = sum(a.visitors for a in result.arms)
    lines = [f"# Live experiment {experiment.name} ({result.status}, {total} visitors)", "",
             f"Rates are per visitor (each visitor's share of replies rated up, one number per "
             f"visitor), with {confidence:.0%} anytime-valid intervals that hold from the first "
             "visitor (a betting confidence sequence for a bounded mean); differences from the "
             "control have a normal-mixture confidence sequence (mSPRT). Both stay valid "
             "however often this report is read. A feedback score is one per visitor (1 to 5, "
             "their last), with the same kind of interval as a rate.",
             "", "| arm | persona | model | visitors | raters | up | down | rate up "
             "| vs control | turns/visitor | error rate | leads/visitor | scores | score |",
             "|---|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---|"]
    for a in result.arms:
        lines.append(f"| {a.name} | {a.persona} | {a.model} | {a.visitors} | {a.raters} | "
                     f"{a.ups} | {a.downs} | {_percent(a.rate)} | {_signed(a.versus_control)} "
                     f"| {a.turns_per_visitor:.2f} | {a.error_rate:.1%} | "
                     f"{a.leads_per_visitor:.2f} | {a.score.n} | {_score(a.score)} |")
    lines.append("")
    if result.better:
        lines.append(f"better arm {result.better}: its difference's confidence sequence "
                     "excludes zero.")
    else:
        lines.append(f"better arm: none yet (no difference's confidence sequence excludes zero; "
                     f"none is computed before {MIN_VISITORS} raters per arm).")
    lines += ["", f"Stopping rule: stop the first time this report names a better arm, or at "
              f"{experiment.max_visitors} visitors with none named (then the arms are not "
              f"shown to differ by the effects the test can see). Reading the report at any "
              f"time keeps the chance of a false claim below {experiment.alpha:g}."]
    return "\n".join(lines)


def _side_by_side(result: LiveReport) -> list[str]:
    experiment, ranking = result.experiment, result.ranking
    control = experiment.arms[0].name
    pairs = len(experiment.arms) * (len(experiment.arms) - 1) // 2
    who = "visitor" if result.pickers == 1 else "visitors"
    lines = [f"# Live experiment {experiment.name} (side by side, {result.status}, "
             f"{result.pickers} {who} picked)", "",
             "Each message was answered by two arms, in a random order and unnamed until the "
             "visitor picked the better answer (or a tie, or both bad). Bradley-Terry "
             f"strengths are log-odds of being picked over {control} (fitted by maximum "
             "likelihood on the decisive picks), with intervals from a bootstrap over visitors "
             "(a visitor's picks count together) that hold for all "
             f"{pairs} pairs of arms at once ({1 - experiment.alpha:.0%} together, "
             f"{100 * (1 - ranking.level):.4g}% each).", ""]
    if ranking.status:
        lines.append(f"**{ranking.status[:1].upper()}{ranking.status[1:]}.**")
    else:
        lines += ["| rank | arm | persona | model | strength | P(picked over "
                  f"{control}) | decisive picks | error rate |",
                  "|---:|---|---|---|---|---|---:|---:|"]
        arms = {a.name: a for a in result.arms}
        for place, s in enumerate(ranking.strengths, 1):
            arm, (p, low, high) = arms[s.arm], s.beats_control
            strength = ("0 (reference)" if s.arm == control else
                        f"{s.estimate:+.2f} [{s.low:+.2f}, {s.high:+.2f}]")
            chance = "-" if s.arm == control else f"{p:.1%} [{low:.1%}, {high:.1%}]"
            lines.append(f"| {place} | {s.arm} | {arm.persona} | {arm.model} | {strength} | "
                         f"{chance} | {s.picks} | {arm.error_rate:.1%} |")
        shown = [f"{s.arm} over {', '.join(s.above)}" for s in ranking.strengths if s.above]
        lines += ["", "Picked more often, shown for all pairs at once: "
                  + ("; ".join(shown) if shown else "no arm over any other yet") + "."]
    lines += ["", "| pair | first won | second won | tie | both bad |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {p.arms[0]} vs {p.arms[1]} | {p.wins[0]} | {p.wins[1]} | {p.ties} | "
              f"{p.both_bad} |" for p in result.pairs]
    lines += ["", f"Stopping rule: stop at {experiment.max_visitors} visitors who picked, then "
              "read the ranking: an arm is picked more often than another only where the line "
              "above says so. These intervals are fixed-sample ones, not anytime-valid: decide "
              "once, at the stop, not at every look."]
    return lines


def events_csv(store: LiveStore, name: str, picks: bool = False) -> str:
    """The experiment's events (or side-by-side picks) as CSV: ids, kinds and numbers, never
    any message text."""
    if store.get(name) is None:
        raise ValueError(f"there is no live experiment named {name!r}")
    columns, rows = (PICK_COLUMNS, store.picks(name)) if picks else (EVENT_COLUMNS,
                                                                       store.events(name))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row[column] for column in columns])
    return out.getvalue()
