"""stats_calibration: the harness's intervals and tests against known truth in simulated sweeps."""

from __future__ import annotations

import os
import sys
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.analyse import inference

QUICK = os.environ.get("STATS_QUICK") == "1"
STUDIES = 400 if QUICK else 1000
SEED = 20_260_520
BOOTSTRAP = 400 if QUICK else 1000
# A sweep: 3 personas x 2 models x 2 temperatures (T = 0 with identical repeats, T = 0.7 with
# independent ones) x 3 repeats over G scenarios.
LEVELS = {"persona": 3, "model": 2, "temperature": 2}
REPEATS = 3
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


@dataclass(frozen=True)
class Setting:
    """One simulated design and its truth: logit effects plus a random scenario intercept."""

    name: str
    scenarios: int
    sigma: float = 1.5  # scenario difficulty spread (logit sd)
    base: float = 0.5
    model: float = 0.0
    persona: tuple[float, float, float] = (0.0, 0.0, 0.0)
    temperature: float = 0.0
    flip: bool = False  # the model effect's sign differs by scenario (mean effect 0)
    words: tuple[float, float, float] = (0.0, 0.0, 0.0)  # persona effect on style words
    errors: float = 0.0  # chance model 1 errors on every case of a harder-than-median scenario
    tags: tuple[str, ...] = field(default=("main",))

    @property
    def null(self) -> bool:  # no factor effect on success
        return not (self.model or any(self.persona) or self.temperature)


def logits(s: Setting) -> np.ndarray:
    """[persona, model, temperature] linear predictor without the scenario intercept."""
    return (s.base + np.asarray(s.persona)[:, None, None] + s.model * np.arange(2)[:, None]
            + s.temperature * np.arange(2))


def true_rates(s: Setting) -> np.ndarray:
    """Each configuration's success rate over the population of scenarios (quadrature)."""
    if not s.flip:
        return (expit(logits(s)[..., None] + s.sigma * NODES) * WEIGHTS).sum(-1)
    return (true_rates(replace(s, flip=False)) + true_rates(replace(s, model=-s.model,
                                                                    flip=False))) / 2


def true_contrasts(rates: np.ndarray, axis: int) -> np.ndarray:
    """Level l minus level 0 of one factor, averaged over the others: [levels - 1]."""
    moved = np.moveaxis(rates, axis, 0)
    return (moved[1:] - moved[0]).reshape(len(moved) - 1, -1).mean(-1)


def simulate(s: Setting, studies: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Outcomes [study, scenario, persona, model, temperature, repeat] and style words."""
    intercept = rng.normal(0.0, s.sigma, (studies, s.scenarios))
    sign = rng.choice([-1.0, 1.0], intercept.shape) if s.flip else np.ones(intercept.shape)
    eta = (logits(s) + intercept[..., None, None, None]
           + (sign[..., None, None, None] - 1) * s.model * np.arange(2)[:, None])
    shape = (studies, s.scenarios, 3, 2, 2, REPEATS)
    outcomes = (rng.random(shape) < expit(eta)[..., None]).astype(float)
    words = (60 + 15 * rng.normal(size=(studies, s.scenarios))[..., None, None, None, None]
             + np.asarray(s.words)[:, None, None, None] + 8 * rng.normal(size=shape))
    for data in (outcomes, words):
        data[..., 0, :] = data[..., 0, :1]  # T = 0: every repeat repeats the first answer
    failing = (intercept < 0) & (rng.random(intercept.shape) < s.errors)
    outcomes[:, :, :, 1][failing] = np.nan  # a provider that fails on the hard scenarios
    return outcomes, words


def new_contrasts(outcomes: np.ndarray, axis: int, bounded: bool = True) -> tuple[np.ndarray, ...]:
    """inference.contrast for every level of one factor, batched: outcomes [study, scenario,
    persona, model, temperature, repeat] (NaN = errored) paired case by case, averaged per
    cell, then per scenario; returns (value, low, high, p) arrays [study, level - 1]."""
    moved = np.moveaxis(outcomes, axis, 2)
    reference = moved[:, :, 0]
    found = []
    for level in range(1, moved.shape[2]):
        paired = (moved[:, :, level] - reference).reshape(*moved.shape[:2], -1,
                                                          outcomes.shape[-1])
        per_scenario = np.nanmean(np.nanmean(paired, -1), -1)
        floor = batch_floor(paired.reshape(len(paired), -1, paired.shape[-1])) if bounded \
            else 0.0
        found.append(inference.scenario_t(per_scenario, floor))
    return tuple(np.stack([f[i] for f in found], -1) for i in range(4))


def batch_floor(paired: np.ndarray) -> np.ndarray:
    """inference.draws + least_variance batched: paired [..., cell, repeat] differences (NaN =
    not paired); a cell whose repeats agree counts once, else each repeat counts."""
    answered, first = (~np.isnan(paired)).sum(-1), np.nanmax(paired, -1)
    same = first == np.nanmin(paired, -1)
    count = np.where(answered == 0, 0, np.where(same, 1, answered)).sum(-1)
    total = np.where(answered == 0, 0.0, np.where(same, first, np.nansum(paired, -1))).sum(-1)
    return inference.least_variance(total / np.maximum(count, 1), count)


def claims(p_values: np.ndarray) -> np.ndarray:
    """A study claims a difference when any Holm-adjusted p-value of the family is < 5%."""
    return (inference.holm(p_values) < inference.ALPHA).any(-1)


def covered(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> np.ndarray:
    return (low <= truth + 1e-12) & (truth - 1e-12 <= high)


def mcnemar(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The old exact McNemar over paired cases (last axes flattened)."""
    b = (first * (1 - second)).reshape(first.shape[0], -1).sum(-1)
    c = (second * (1 - first)).reshape(first.shape[0], -1).sum(-1)
    p = 2 * stats.binom.cdf(np.minimum(b, c), b + c, 0.5)
    return np.where(b + c == 0, 1.0, np.minimum(p, 1.0))


def old_bootstrap(means: np.ndarray, proportion: bool) -> tuple[np.ndarray, np.ndarray]:
    """The old cluster bootstrap: fixed seed, percentile; all agree: Wilson / zero width."""
    scenarios = means.shape[-1]
    picks = np.random.default_rng(20_261_123).integers(0, scenarios, (BOOTSTRAP, scenarios))
    weights = np.stack([np.bincount(p, minlength=scenarios) for p in picks]) / scenarios
    resampled = means @ weights.T
    low, high = np.percentile(resampled, [2.5, 97.5], axis=-1)
    agree, value = np.all(means == means[..., :1], axis=-1), means.mean(-1)
    fallback = (inference.wilson(np.round(value * scenarios) / scenarios, scenarios)
                if proportion else (value, value))
    return np.where(agree, fallback[0], low), np.where(agree, fallback[1], high)


def analyse(s: Setting, studies: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every method on `studies` simulated sweeps of one design: per-study hit/claim arrays."""
    outcomes, words = simulate(s, studies, rng)
    rates = true_rates(s)
    if s.errors:
        return errored(s, outcomes, rates)
    found = rate_methods(s, outcomes, rates.ravel())
    hits, false, widths = [], [], []
    for axis, factor in enumerate(LEVELS, start=2):
        _, low, high, p = new_contrasts(outcomes, axis)
        hits.append(covered(low, high, true_contrasts(rates, axis - 2)))
        if getattr(s, factor) in (0.0, (0.0, 0.0, 0.0)) or (factor == "model" and s.flip):
            false.append(claims(p))
        widths.append(high - low)
    found["effect_cov"] = np.concatenate(hits, -1)
    found["effect_width"] = np.median(np.concatenate(widths, -1), keepdims=True)
    if false:
        found["effect_claims"] = np.stack(false, -1)
    found.update(best_vs_rest(s, outcomes, rates.ravel()))
    found.update(old_pairs(s, outcomes, rates))
    found.update(style(s, words))
    if s.null:
        found.update(identical(outcomes))
    return found


def identical(outcomes: np.ndarray) -> dict[str, np.ndarray]:
    """T = 0, persona 1 vs 0: old McNemar and the new contrast on 3 identical repeats vs 1."""
    cold = outcomes[:, :, :, :, :1]
    found, p = {}, {}
    for repeats in (3, 1):
        kept = cold[..., :repeats]
        found[f"t0_old{repeats}"] = mcnemar(kept[:, :, 1, 0], kept[:, :, 0, 0]) < inference.ALPHA
        p[repeats] = new_contrasts(kept, 2)[3][:, 0]
        found[f"t0_new{repeats}"] = p[repeats] < inference.ALPHA
    return {**found, "t0_same": np.isclose(p[3], p[1])}


def rate_methods(s: Setting, outcomes: np.ndarray, rates: np.ndarray) -> dict[str, np.ndarray]:
    """Each configuration's rate interval: a false claim is a lower bound above the truth
    (the configuration reported as doing better than it does)."""
    g = s.scenarios
    by_config = outcomes.mean(-1).reshape(len(outcomes), g, -1).transpose(0, 2, 1)
    count = outcomes.reshape(len(outcomes), g, -1, REPEATS).sum((1, 3))
    found = {}
    for name, (low, high) in {
            "rate": inference.scenario_wilson(by_config)[1:],
            "old_rate": inference.wilson(count / (g * REPEATS), g * REPEATS),
            "boot_rate": old_bootstrap(by_config, proportion=True)}.items():
        found[f"{name}_cov"] = covered(low, high, rates)
        found[f"{name}_over"] = low > rates + 1e-12
    return found


def errored(s: Setting, outcomes: np.ndarray, rates: np.ndarray) -> dict[str, np.ndarray]:
    """Model 1 errors on hard scenarios: old pooled rates vs scenarios both answered."""
    value, low, high, p = (a[:, 0] for a in new_contrasts(outcomes, 3))
    enough = (~np.isnan(outcomes[:, :, 0, 1, 0, 0])).sum(-1) >= inference.MIN_SCENARIOS
    axes = (1, 2, 3, 4)
    pooled = np.nanmean(outcomes[:, :, :, 1], axes) - outcomes[:, :, :, 0].mean(axes)
    truth = true_contrasts(rates, 1)[0]
    return {"errors_cov": covered(low, high, truth)[enough],
            "errors_claims": (p < inference.ALPHA) & enough,
            "errors_old_bias": pooled - truth, "errors_new_bias": value - truth}


def best_vs_rest(s: Setting, outcomes: np.ndarray, rates: np.ndarray) -> dict[str, np.ndarray]:
    """inference.best_vs_rest batched: the best configuration against each other one with
    picked_best's intervals and claims (the studentized range's 95% point), coverage counted
    when every interval of a study holds its truth; and Holm over k-1 alone for contrast."""
    flat = outcomes.reshape(len(outcomes), s.scenarios, -1, REPEATS).transpose(0, 2, 1, 3)
    configurations = flat.shape[1]
    best = flat.mean((2, 3)).argmax(-1)
    others = np.argsort(np.arange(configurations)[None] == best[:, None], -1, kind="stable")
    top = np.take_along_axis(flat, best[:, None, None, None], 1)
    rest = np.take_along_axis(flat, others[:, :-1, None, None], 1)
    value, _, high, p = inference.scenario_t((top - rest).mean(-1), batch_floor(top - rest))
    se = (high - value) / stats.t.ppf(1 - inference.ALPHA / 2, s.scenarios - 1)
    half = inference.picked_best_point(configurations, s.scenarios) / np.sqrt(2) * se
    truth = rates[best][:, None] - rates[others[:, :-1]]
    hits = covered(value - half, value + half, truth)
    found = {"best_cov": hits, "best_all_cov": hits.all(-1)}
    if s.null:
        found["best_claims"] = (np.abs(value) > half).any(-1)
        found["best_holm_claims"] = claims(p)
    return found


def old_pairs(s: Setting, outcomes: np.ndarray, rates: np.ndarray) -> dict[str, np.ndarray]:
    """Old: all 66 pairs by McNemar on repeats (Holm); T 0 vs 0.7 McNemar + bootstrap."""
    flat = np.moveaxis(outcomes.reshape(len(outcomes), s.scenarios, -1, REPEATS), 2, 0)
    found = {}
    if s.null:
        found["old_pairs_claims"] = claims(np.stack([
            mcnemar(flat[i], flat[j]) for i in range(len(flat)) for j in range(i + 1, len(flat))
        ], -1))
    cold, warm = outcomes[..., 0, :], outcomes[..., 1, :]
    low, high = old_bootstrap((warm - cold).mean((2, 3, 4)), proportion=False)
    found["old_compare_cov"] = covered(low, high, true_contrasts(rates, 2))
    _, low, high, p = new_contrasts(outcomes, 4)
    found["compare_cov"] = covered(low, high, true_contrasts(rates, 2))
    if s.temperature == 0.0:
        found["old_compare_claims"] = mcnemar(cold, warm)[:, None] < inference.ALPHA
        found["compare_claims"] = p < inference.ALPHA
    return found


def style(s: Setting, words: np.ndarray) -> dict[str, np.ndarray]:
    """Persona style words (unbounded) compared on scenario means, personas against the first
    with Holm; the old Kruskal-Wallis over cases is left out: it did not over-claim under no
    difference, it overstated the evidence of a real one (p = 1e-26 vs 0.0013)."""
    _, low, high, p = new_contrasts(words, 2, bounded=False)
    found = {"style_cov": covered(low, high, np.asarray(s.words[1:]) - s.words[0])}
    if not any(s.words):
        found["style_claims"] = claims(p)
    return found


EFFECTS = {"model": 1.0, "persona": (0.0, 0.5, -0.5), "temperature": -0.5,
           "words": (0.0, 10.0, -5.0)}


def settings() -> list[Setting]:
    found = [Setting(f"{kind} G={g}", g, **(EFFECTS if kind == "effects" else {}))
             for g in (4, 8, 16) for kind in ("null", "effects")]
    found += [Setting("low spread G=8", 8, sigma=0.5, **EFFECTS),
              Setting("near ceiling G=8", 8, sigma=3.0, base=2.0, **EFFECTS),
              Setting("near ceiling null G=8", 8, sigma=3.0, base=2.0)]
    found += [Setting(f"{kind} G={g}", g, tags=("small",), **(EFFECTS if kind == "effects" else {}))
              for g in (2, 3) for kind in ("null", "effects")]
    found += [Setting(f"sign differs by scenario G={g}", g, base=0.0, model=2.0, flip=True,
                      tags=("stress",)) for g in (4, 8)]
    found += [Setting("errors on hard scenarios G=8", 8, errors=0.7, tags=("errors",))]
    return found


def mean_of(results: list[dict[str, np.ndarray]], key: str) -> float:
    found = [r[key].ravel() for r in results if key in r]
    return float(np.concatenate(found).mean()) if found else float("nan")


def line(name: str, results: list[dict[str, np.ndarray]], prefix: str, goal: str) -> str:
    """`name: coverage C (designs lo-hi), false claims F (worst design W) (goal)`."""
    cover, false = f"{prefix}_cov", f"{prefix}_claims"
    if not any(false in r for r in results):
        false = f"{prefix}_over"
    each = [mean_of([r], cover) for r in results if cover in r]
    text = (f"{mean_of(results, cover):.3f} (designs {min(each):.3f}-{max(each):.3f})" if each
            else "n/a (no interval)")
    worst = max(mean_of([r], false) for r in results if false in r)
    return (f"{name}: coverage {text}, false claims {mean_of(results, false):.3f} "
            f"(worst design {worst:.3f}) [{goal}]")


METHODS = (
    ("rate, Wilson over scenario means (new)", "rate", "goal 0.93-0.97"),
    ("rate, Wilson over repeats (old)", "old_rate", "replaced"),
    ("rate, cluster bootstrap (old)", "boot_rate", "replaced"),
    ("factor effect, t over scenario differences (new)", "effect", "goal 0.93-0.97, <= 0.05"),
    ("best vs rest, adjusted for picking the best (new)", "best", "goal 0.93-0.97, <= 0.05"),
    ("best vs rest, Holm over k-1 alone (not used)", "best_holm", "over-claims"),
    ("compare two runs, paired on scenario (new)", "compare", "goal 0.93-0.97, <= 0.05"),
    ("compare two runs, McNemar on repeats + bootstrap (old)", "old_compare", "replaced"),
    ("all pairs, McNemar on repeats, Holm over 66 (old)", "old_pairs", "replaced"),
    ("style words, scenario means (new)", "style", "goal 0.93-0.97, <= 0.05"),
)


def mdd_line(g: int, rng: np.random.Generator) -> str:
    """The minimum detectable difference the harness states for the model factor (median over
    studies with no model effect), and how often a true difference of that size is found."""
    s = Setting(f"mdd G={g}", g, **{**EFFECTS, "model": 0.0})
    value, _, high, _ = new_contrasts(simulate(s, STUDIES, rng)[0], 3)
    sd = (high - value) / stats.t.ppf(1 - inference.ALPHA / 2, g - 1) * np.sqrt(g)
    mdd = float(np.median([inference.minimum_detectable(g, float(e)) for e in sd.ravel()]))
    low, high = 0.0, 6.0
    for _ in range(40):  # the logit effect that makes the true difference the MDD
        middle = (low + high) / 2
        truth = true_contrasts(true_rates(replace(s, model=middle)), 1)[0]
        low, high = (middle, high) if truth < mdd else (low, middle)
    found = new_contrasts(simulate(replace(s, model=low), STUDIES, rng)[0], 3)[3] < 0.05
    return (f"minimum detectable difference G={g}: stated {mdd:.2f}, power at that true "
            f"difference {found.mean():.2f} (80% if the spread stays as seen; smaller "
            "differences are found less often)")


def harness_check(rng: np.random.Generator) -> float:
    """The batched code above against experiments.analyse.inference on whole data frames:
    the largest difference in any effect, bound or p-value (should be ~1e-15)."""
    import pandas as pd

    s = Setting("check", 6, **EFFECTS)
    outcomes, _ = simulate(s, 3, rng)
    worst = 0.0
    for study in outcomes:
        index = np.indices(study.shape).reshape(study.ndim, -1)
        df = pd.DataFrame(dict(zip(["scenario", *LEVELS, "repeat"], index, strict=True)))
        table = inference.effects(df.assign(success=study.ravel()), list(LEVELS))
        batch = np.concatenate([np.stack(new_contrasts(study[None], axis))[:, 0].T
                                for axis in range(2, 5)])
        batch[:, 1:3] = np.clip(batch[:, 1:3], -1, 1)
        harness = table[["effect", "ci_low", "ci_high", "p_value"]].to_numpy(float)
        worst = max(worst, float(np.abs(harness - batch).max()))
    return worst


def main() -> None:
    started = time.perf_counter()
    # Errored cells (NaN) make all-NaN slices on purpose; numpy's warnings about them are noise.
    warnings.simplefilter("ignore", RuntimeWarning)
    np.seterr(invalid="ignore", divide="ignore")
    rng = np.random.default_rng(SEED)
    runs = [(s, analyse(s, STUDIES, rng)) for s in settings()]
    chosen = [r for s, r in runs if "main" in s.tags]
    print(f"stats_calibration: {STUDIES} simulated studies per design, {len(chosen)} designs "
          f"(3 personas x 2 models x T 0/0.7 x {REPEATS} repeats, 4-16 scenarios, scenario "
          "difficulty sd 0.5-3 on the logit scale)")
    for name, prefix, goal in METHODS:
        print(line(name, chosen, prefix, goal))
    report_designs(runs)
    for g in (4, 8, 16):
        print(mdd_line(g, rng))
    print(f"harness check: batched methods = experiments.analyse.inference within "
          f"{harness_check(rng):.1e}")
    print(f"stats_calibration: {time.perf_counter() - started:.0f} s")


def report_designs(runs: list[tuple[Setting, dict[str, np.ndarray]]]) -> None:
    """Per design, the small-scenario threshold, the stress case, errors, identical repeats."""
    for s, r in runs[:-1]:  # the last design (errors) has a line of its own
        print(f"  {s.name}: rate coverage {mean_of([r], 'rate_cov'):.3f}, effect coverage "
              f"{mean_of([r], 'effect_cov'):.3f} (median width {mean_of([r], 'effect_width'):.2f})"
              f", effect false claims {mean_of([r], 'effect_claims'):.3f}")
    errors = [runs[-1][1]]
    print(f"errors on model 1's hard scenarios (G=8, null): pooled rates over answered cases "
          f"(old) bias {mean_of(errors, 'errors_old_bias'):+.3f}; on scenarios both answered "
          f"(new) bias {mean_of(errors, 'errors_new_bias'):+.3f}, coverage "
          f"{mean_of(errors, 'errors_cov'):.3f}, false claims "
          f"{mean_of(errors, 'errors_claims'):.3f}")
    each = [mean_of([r], "best_all_cov") for s, r in runs if "main" in s.tags]
    print(f"best vs rest, every interval of a study at once: coverage {min(each):.3f}-"
          f"{max(each):.3f} over the designs (each interval alone: the method line above)")
    nulls = [r for s, r in runs if "main" in s.tags and s.null]
    print(f"identical repeats (T = 0, persona A vs B, no true difference): old McNemar false "
          f"claims {mean_of(nulls, 't0_old3'):.3f} with 3 repeats vs "
          f"{mean_of(nulls, 't0_old1'):.3f} with 1; new {mean_of(nulls, 't0_new3'):.3f} vs "
          f"{mean_of(nulls, 't0_new1'):.3f} (same p-values: {mean_of(nulls, 't0_same'):.0%})")


if __name__ == "__main__":
    main()
