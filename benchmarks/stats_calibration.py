"""stats_calibration: the report's intervals and claims against known truth, end to end.

Every simulated sweep (benchmarks/stats_designs.py) is turned into the rows a run writes and
read by experiments.analyse.findings.analyse, the function write_report calls, so what is
checked is what a report says: each configuration's rate, the winner's own rate, every pair of
each factor's levels, the best against the rest, persona style, one family for all of them
(report-wide false claims), two runs compared (experiments compare's pairing), and the live
experiments' numbers (an arm's rate read from the first visitor on; side-by-side Bradley-Terry).

Each rate is judged against its goal with its simulation error: within two standard errors of
the goal passes, and the line says so. STATS_QUICK=1 runs 400 studies per design (1000
otherwise); two processes share the designs.
"""

from __future__ import annotations

import os
import random
import resource
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.stats_designs import (
    EFFECTS,
    Design,
    judge,
    pair_truth,
    simulate,
    study_rows,
    template,
    true_rates,
)
from experiments.analyse.power import failing_share_power

QUICK = os.environ.get("STATS_QUICK") == "1"
STUDIES = 400 if QUICK else 1000
SEED = 20_261_126
DESIGNS = [Design(f"null G={g}", g, compare=g == 8) for g in (4, 6, 8, 16)] + [
    Design("effects G=8", 8, compare=True, **EFFECTS), Design("effects G=16", 16, **EFFECTS),
    Design("near ceiling G=8", 8, sigma=3.0, base=2.0, **EFFECTS),
    Design("near ceiling null G=8", 8, sigma=3.0, base=2.0),
    Design("all pass G=23", 23, sigma=0.0, base=40.0),
    Design("ceiling: p1 fails 5% of scenarios G=23", 23, sigma=0.0, base=40.0,
           fails={"p1": 0.05}),
    Design("ceiling: p1 fails 10%, m1 3% G=23", 23, sigma=0.0, base=40.0,
           fails={"p1": 0.10, "m1": 0.03}),
    Design("errors on failed cases (not at random) G=8", 8, errors=0.5),
    Design("unequal repeats G=8", 8, uneven=True),
    Design("T = 0 only G=4", 4, cold_only=True, **EFFECTS),
    Design("sign differs by scenario G=8", 8, base=0.0, model=2.0, flip=True)]
# The quick run leaves out designs another one already stands for (every goal is still
# checked), so that it fits in a few minutes on two cores.
if QUICK:
    DESIGNS = [d for d in DESIGNS if d.name not in ("null G=6", "effects G=16",
                                                    "near ceiling null G=8")]
POWER_SCENARIOS = (16,) if QUICK else (8, 16)


def run_design(d: Design, seed: int) -> dict[str, list]:
    """Every study of one design through the report's findings (and compare's pairing)."""
    from experiments.analyse import findings
    from experiments.analyse.inference import ALPHA
    from experiments.analyse.pairing import paired_runs

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(seed)
    outcomes, words, errored = simulate(d, STUDIES, rng)
    rates, base = true_rates(d), template(d)
    labels = {h: h for h in base["config_hash"].unique()}
    found: dict[str, list] = {"mdd_model": [], "mdd_persona": [], "level": []}
    for study in range(STUDIES):
        rows = study_rows(d, base, outcomes[study], words[study], errored[study], rng)
        report = findings.analyse(rows, labels)
        for key, value in judge(d, report, rates).items():
            found.setdefault(key, []).append(value)
        for factor in ("model", "persona"):
            mdd = report.effects.loc[report.effects["factor"] == factor, "mdd"]
            found[f"mdd_{factor}"].append(float(mdd.max()) if len(mdd) else np.nan)
        found["level"].append(1 - float(report.effects["confidence"].iloc[0]))
        if d.compare:  # the overall B - A of `experiments compare`, at its level
            frame = findings.values(rows, "success")
            cold, warm = (frame[frame["temperature"] == t].drop(columns="temperature")
                          for t in (0.0, 0.7))
            pairing = paired_runs(cold, warm, ["persona", "model"], ALPHA / 2)
            truth = pair_truth(rates, 2, 1, 0)
            found.setdefault("compare_cov", []).append(
                np.array([pairing.low <= truth <= pairing.high]))
            shown = pairing.p_value < 1 - pairing.level
            found.setdefault("compare_claims", []).append(
                np.array([shown and np.sign(truth) != np.sign(pairing.value)]))
    return found


def power_design(d: Design, seed: int, factor: str) -> float:
    """Share of studies in which the report claims the `factor` difference d holds."""
    from experiments.analyse import findings

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(seed)
    outcomes, words, errored = simulate(d, STUDIES, rng)
    base = template(d)
    labels = {h: h for h in base["config_hash"].unique()}
    claimed = 0
    for study in range(STUDIES):
        rows = study_rows(d, base, outcomes[study], words[study], errored[study], rng)
        effects = findings.analyse(rows, labels).effects
        chosen = effects[(effects["factor"] == factor) & effects["significant"]]
        claimed += bool(len(chosen[chosen["level"].isin(["m1", "p1"])
                                   & chosen["reference"].isin(["m0", "p0"])]))
    return claimed / STUDIES


# When the live report is read: from the first visitor (the sequence claims validity from
# there, and the interval it replaced first missed at a median of 27), then every 20 to 200.
LIVE_LOOKS = frozenset((1, 2, 3, 5, 10, 15, *range(20, 201, 20)))


def live_rate(rate: float, seed: int) -> dict[str, list]:
    """An arm whose visitors rate up `rate` of their one to three replies, read at each of
    LIVE_LOOKS: did the interval hold the true rate at every look at once?"""
    from experiments.live.sequential import rate_interval

    rng, held = random.Random(seed), []
    for _ in range(STUDIES):
        values, ok = [], True
        for visitor in range(1, max(LIVE_LOOKS) + 1):
            ratings = rng.randint(1, 3)
            values.append(sum(rng.random() < rate for _ in range(ratings)) / ratings)
            if visitor in LIVE_LOOKS:
                found = rate_interval(values, 0.05)
                ok &= found.low <= rate <= found.high
        held.append(np.array([ok]))
    return {"live_cov": held, "live_claims": [~h for h in held]}


def side_by_side(visitors: int, strengths: tuple[float, ...], seed: int) -> dict[str, list]:
    """3 arms picked side by side by `visitors` visitors (1-3 picks each, a visitor's taste
    repeated): coverage of the strengths and whether any arm was named over another wrongly."""
    from experiments.live.ranking import rank

    rng, arms, found = random.Random(seed), ["a", "b", "c"], {"sbs_cov": [], "sbs_claims": []}
    truth = dict(zip(arms, strengths, strict=True))
    for study in range(STUDIES):
        picks = []
        for visitor in range(visitors):
            x, y = rng.sample(arms, 2)
            p, first = 1 / (1 + np.exp(truth[y] - truth[x])), None
            for _ in range(rng.randint(1, 3)):
                if first is None or rng.random() > 0.7:
                    first = x if rng.random() < p else y
                picks.append({"visitor": f"v{visitor}", "arm_a": x, "arm_b": y,
                              "winner": first})
        ranking = rank(picks, arms, samples=600, seed=study).strengths
        found["sbs_cov"].append(np.array([all(s.low <= truth[s.arm] <= s.high
                                              for s in ranking)]))
        found["sbs_claims"].append(np.array([any(truth[s.arm] <= truth[o] for s in ranking
                                                 for o in s.above)]))
    return found


def rate_of(results: list[dict[str, list]], key: str) -> tuple[float, int, list[float]]:
    """The rate over every study of these designs, the studies behind it, and per design."""
    each = [np.concatenate([np.ravel(x) for x in r[key]]).astype(float) for r in results
            if r.get(key)]
    if not each:
        return float("nan"), 0, []
    pooled = np.concatenate(each)
    return float(pooled.mean()), min(len(r[key]) for r in results if r.get(key)) * len(each), [
        float(e.mean()) for e in each]


def verdict(value: float, studies: int, goal: float, above: bool) -> str:
    """'pass' when the rate is on the goal's side or within two simulation errors of it."""
    se = np.sqrt(max(value * (1 - value), goal * (1 - goal) / 4) / max(studies, 1))
    ok = value >= goal - 2 * se if above else value <= goal + 2 * se
    sign = ">=" if above else "<="
    return f"goal {sign} {goal:g}, 2 SE {2 * se:.3f}: {'pass' if ok else 'FAIL'}"


def line(name: str, results: list[dict[str, list]], prefix: str,
         coverage_goal: float = 0.93) -> str:
    cover, studies, each = rate_of(results, f"{prefix}_cov")
    claims, claim_studies, claim_each = rate_of(results, f"{prefix}_claims")
    spread = f" (designs {min(each):.3f}-{max(each):.3f})" if len(each) > 1 else ""
    worst = f", worst design {max(claim_each):.3f}" if len(claim_each) > 1 else ""
    return (f"{name}: coverage {cover:.3f}{spread} [{verdict(cover, studies, coverage_goal, True)}]"
            f", false claims {claims:.3f}{worst} [{verdict(claims, claim_studies, 0.05, False)}]")


METHODS = (
    ("rate of a configuration: exact over scenario means (new)", "rate"),
    ("the winner's own rate: simultaneous over all configurations (new)", "winner"),
    ("factor effects: every pair, t over scenarios floored where they tie (new)", "effect"),
    ("best against the rest: allowing for picking it (new)", "best"),
    ("persona style: every pair on scenario means (new)", "style"),
    ("experiments compare: two runs paired on scenario (new)", "compare"),
)


def model_shift(d: Design, target: float) -> Design:
    """The design with the model effect (logit) whose true difference is `target`."""
    low, high = 0.0, 8.0
    for _ in range(40):
        middle = (low + high) / 2
        truth = pair_truth(true_rates(replace(d, model=middle)), 1, 1, 0)
        low, high = (middle, high) if truth < target else (low, middle)
    return replace(d, name=f"{d.name}, model +{target:.2f}", model=low)


def main() -> None:
    started = time.perf_counter()
    warnings.simplefilter("ignore")
    with ProcessPoolExecutor(2) as pool:
        designs = [pool.submit(run_design, d, SEED + n) for n, d in enumerate(DESIGNS)]
        live = [pool.submit(live_rate, rate, SEED + n) for n, rate in
                enumerate((0.03, 0.05, 0.1))]
        sbs = [pool.submit(side_by_side, visitors, arms, SEED + n) for n, (visitors, arms) in
               enumerate(((30, (0.0, 0.0, 0.0)), (100, (0.0, 0.0, 0.0)),
                          (100, (0.0, 0.6, -0.4))))]
        results = [f.result() for f in designs]
        by_name = dict(zip((d.name for d in DESIGNS), results, strict=True))
        by_design = {d.name: d for d in DESIGNS}
        stated = {g: float(np.nanmedian(by_name[f"null G={g}"]["mdd_model"]))
                  for g in POWER_SCENARIOS}
        ceiling = float(np.nanmedian(by_name["all pass G=23"]["mdd_persona"]))
        checks = {g: pool.submit(power_design, model_shift(Design(f"G={g}", g), mdd), SEED + g,
                                 "model") for g, mdd in stated.items()}
        checks[23] = pool.submit(power_design, replace(by_design["all pass G=23"],
                                                       fails={"p1": ceiling}),
                                 SEED + 23, "persona")
        live_found, sbs_found = [f.result() for f in live], [f.result() for f in sbs]
        powers = {g: f.result() for g, f in checks.items()}
    print(f"stats_calibration: {STUDIES} simulated studies per design, {len(DESIGNS)} sweep "
          "designs (3 personas x 2 models x T 0/0.7 x 3 repeats, 4-23 scenarios, by the "
          "report's own findings), each rate against its goal within two simulation errors")
    for name, prefix in METHODS:
        print(line(name, results, prefix))
    print(line(f"live: an arm's rate, betting confidence sequence, at all {len(LIVE_LOOKS)} "
               "looks at once, from the first visitor (new)", live_found, "live"))
    print(line("live: side by side, Bradley-Terry pairs sharing alpha (new)", sbs_found, "sbs"))
    claims, studies, each = rate_of(results, "report_claims")
    print(f"report-wide false claims {claims:.3f} (worst design {max(each):.3f}; a report "
          f"claiming any difference that is not there) "
          f"[{verdict(max(each), STUDIES, 0.05, False)}]")
    for d, r in zip(DESIGNS, results, strict=True):
        parts = [f"{key} {rate_of([r], f'{key}_cov')[0]:.3f}" for key in
                 ("rate", "winner", "effect") if r.get(f"{key}_cov")]
        print(f"  {d.name}: coverage " + ", ".join(parts) + f"; report-wide false claims "
              f"{rate_of([r], 'report_claims')[0]:.3f}")
    for name, key in (("rates at 4 scenarios, T = 0 only", "T = 0 only G=4"),
                      ("the winner's rate, 12 equal configurations at 4 scenarios", "null G=4"),
                      ("the winner's rate, 12 equal configurations at 6 scenarios", "null G=6")):
        if key not in by_name:
            continue
        value = rate_of([by_name[key]], "rate_cov" if "T = 0" in name else "winner_cov")[0]
        print(f"{name}: coverage {value:.3f} [{verdict(value, STUDIES, 0.93, True)}]")
    for g, mdd in stated.items():
        level = by_name[f"null G={g}"]["level"][0]
        low = failing_share_power(g, mdd, level)
        se = 2 * np.sqrt(powers[g] * (1 - powers[g]) / STUDIES)
        ok = low - se <= powers[g] <= 0.8 + se
        print(f"detectable difference G={g} (model): stated {mdd:.2f}, found 80% of the time "
              f"if every scenario moves alike, {low:.2f} if it is a share failing outright "
              f"(both stated in the report); found {powers[g]:.2f} with a logit shift over "
              f"scenarios of varied difficulty [between the two, 2 SE {se:.3f}: "
              f"{'pass' if ok else 'FAIL'}]")
    se = 2 * np.sqrt(powers[23] * (1 - powers[23]) / STUDIES)
    print(f"detectable difference at the ceiling G=23 (a persona failing a share of "
          f"scenarios outright): stated {ceiling:.2f}, found {powers[23]:.2f} of the time "
          f"[goal 0.80, 2 SE {se:.3f}: {'pass' if abs(powers[23] - 0.8) <= se else 'FAIL'}]")
    used = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"stats_calibration: {time.perf_counter() - started:.0f} s ({used:.0f} s of CPU "
          "over its processes; the rest was waiting for a busy machine's cores)")


if __name__ == "__main__":
    main()
