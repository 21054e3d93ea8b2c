"""stats_calibration: the harness's intervals and tests against known truth in simulated sweeps."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.analyse import inference

QUICK = os.environ.get("STATS_QUICK") == "1"
STUDIES = 250 if QUICK else 1000
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
    tags: tuple[str, ...] = field(default=("main",))

    @property
    def null(self) -> bool:
        return not (self.model or any(self.persona) or self.temperature)


def logits(s: Setting) -> np.ndarray:
    """[persona, model, temperature] linear predictor without the scenario intercept."""
    persona = np.asarray(s.persona)[:, None, None]
    model = s.model * np.arange(2)[None, :, None]
    return s.base + persona + model + s.temperature * np.arange(2)[None, None, :]


def true_rates(s: Setting) -> np.ndarray:
    """Each configuration's success rate over the population of scenarios (quadrature)."""
    eta = logits(s)
    if not s.flip:
        return (expit(eta[..., None] + s.sigma * NODES) * WEIGHTS).sum(-1)
    flipped = replace(s, model=-s.model, flip=False)
    return (true_rates(replace(s, flip=False)) + true_rates(flipped)) / 2


def true_contrasts(rates: np.ndarray, axis: int) -> np.ndarray:
    """Level l minus level 0 of one factor, averaged over the others: [levels - 1]."""
    moved = np.moveaxis(rates, axis, 0)
    return np.array([(moved[level] - moved[0]).mean() for level in range(1, moved.shape[0])])


def simulate(s: Setting, studies: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Outcomes [study, scenario, persona, model, temperature, repeat] and style words."""
    intercept = rng.normal(0.0, s.sigma, (studies, s.scenarios))
    eta = logits(s)[None, None] + intercept[..., None, None, None]
    if s.flip:
        sign = rng.choice([-1.0, 1.0], (studies, s.scenarios))[..., None, None, None]
        eta = eta + (sign - 1) * s.model * np.arange(2)[None, None, None, :, None]
    shape = (studies, s.scenarios, 3, 2, 2, REPEATS)
    outcomes = (rng.random(shape) < expit(eta)[..., None]).astype(float)
    words = (60 + 15 * rng.normal(size=(studies, s.scenarios))[..., None, None, None, None]
             + np.asarray(s.words)[:, None, None, None] + 8 * rng.normal(size=shape))
    for data in (outcomes, words):
        data[..., 0, :] = data[..., 0, :1]  # T = 0: every repeat repeats the first answer
    return outcomes, words


def new_contrasts(cells: np.ndarray, axis: int, bounded: bool = True) -> tuple[np.ndarray, ...]:
    """The harness's factor effect (inference.contrast) for every level of one factor, batched:
    cells [study, scenario, persona, model, temperature]; returns [study, level-1] arrays."""
    moved = np.moveaxis(cells, axis, 2)
    reference = moved[:, :, 0].reshape(*moved.shape[:2], -1)
    found = []
    for level in range(1, moved.shape[2]):
        arm = moved[:, :, level].reshape(reference.shape)
        pairs = arm - reference
        floor = (inference.least_variance(pairs.reshape(pairs.shape[0], -1)) if bounded
                 else 0.0)
        found.append(inference.scenario_t(pairs.mean(-1), floor))
    return tuple(np.stack([f[i] for f in found], -1) for i in range(4))


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
    """The old cluster bootstrap (one fixed seed, percentile interval; when every cluster
    agrees, Wilson over clusters for a rate and zero width for a difference)."""
    scenarios = means.shape[-1]
    picks = np.random.default_rng(20_261_123).integers(0, scenarios, (BOOTSTRAP, scenarios))
    weights = np.stack([np.bincount(p, minlength=scenarios) for p in picks]) / scenarios
    resampled = means @ weights.T
    low, high = np.percentile(resampled, [2.5, 97.5], axis=-1)
    agree = np.all(means == means[..., :1], axis=-1)
    value = means.mean(-1)
    if proportion:
        w_low, w_high = inference.wilson(np.round(value * scenarios) / scenarios, scenarios)
        return np.where(agree, w_low, low), np.where(agree, w_high, high)
    return np.where(agree, value, low), np.where(agree, value, high)


def analyse(s: Setting, studies: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every method on `studies` simulated sweeps of one design: per-study hit/claim arrays."""
    outcomes, words = simulate(s, studies, rng)
    g = s.scenarios
    rates = true_rates(s)
    cells = outcomes.mean(-1)
    by_config = cells.reshape(studies, g, -1).transpose(0, 2, 1)
    found: dict[str, np.ndarray] = {}
    _, low, high = inference.scenario_wilson(by_config)
    found["rate_cov"] = covered(low, high, rates.ravel())
    found["rate_over"] = low > rates.ravel() + 1e-12
    count = outcomes.reshape(studies, g, -1, REPEATS).sum((1, 3))
    low, high = inference.wilson(count / (g * REPEATS), g * REPEATS)
    found["old_rate_cov"] = covered(low, high, rates.ravel())
    found["old_rate_over"] = low > rates.ravel() + 1e-12
    low, high = old_bootstrap(by_config, proportion=True)
    found["boot_rate_cov"] = covered(low, high, rates.ravel())
    found["boot_rate_over"] = low > rates.ravel() + 1e-12
    effect_hits, effect_claims = [], []
    for axis, factor in enumerate(LEVELS, start=2):
        _, low, high, p = new_contrasts(cells, axis)
        truth = true_contrasts(rates, axis - 2)
        effect_hits.append(covered(low, high, truth))
        null = getattr(s, factor) in (0.0, (0.0, 0.0, 0.0)) and not s.flip
        if null or (factor == "model" and s.flip):
            effect_claims.append(claims(p))
    found["effect_cov"] = np.concatenate(effect_hits, -1)
    if effect_claims:
        found["effect_claims"] = np.stack(effect_claims, -1)
    found.update(best_vs_rest(s, by_config, rates.ravel()))
    found.update(old_pairs(s, outcomes, cells, rates))
    found.update(style(s, words))
    return found


def best_vs_rest(s: Setting, by_config: np.ndarray, rates: np.ndarray) -> dict[str, np.ndarray]:
    """inference.best_vs_rest batched: the best configuration against each other one, claims
    adjusted for picking the best (a claim when picked_best's p < 5%, i.e. beyond the
    studentized range's 95% point), and the same contrasts under Holm over k-1 alone."""
    configurations = by_config.shape[1]
    best = by_config.mean(-1).argmax(-1)
    top = np.take_along_axis(by_config, best[:, None, None], 1)
    others = np.argsort(np.arange(configurations)[None] == best[:, None], -1, kind="stable")
    rest = np.take_along_axis(by_config, others[:, :-1, None], 1)
    value, low, high, p = inference.scenario_t(top - rest, inference.least_variance(top - rest))
    critical = stats.t.ppf(1 - inference.ALPHA / 2, s.scenarios - 1)
    t_value = value / ((high - value) / critical)
    range_point = stats.studentized_range.ppf(1 - inference.ALPHA, configurations,
                                              s.scenarios - 1)
    truth = rates[best][:, None] - rates[others[:, :-1]]
    found = {"best_cov": covered(np.maximum(low, -1), np.minimum(high, 1), truth)}
    if s.null:
        found["best_claims"] = (np.sqrt(2) * np.abs(t_value) > range_point).any(-1)
        found["best_holm_claims"] = claims(p)
    return found


def old_pairs(s: Setting, outcomes: np.ndarray, cells: np.ndarray,
              rates: np.ndarray) -> dict[str, np.ndarray]:
    """The old ways: all C(12,2) configuration pairs by McNemar on repeats (Holm over all),
    and a T = 0 vs T = 0.7 compare paired on repeat with a cluster-bootstrap interval."""
    studies = outcomes.shape[0]
    flat = np.moveaxis(outcomes.reshape(studies, s.scenarios, -1, REPEATS), 2, 0)
    pairs = [(i, j) for i in range(flat.shape[0]) for j in range(i + 1, flat.shape[0])]
    found = {}
    if s.null:
        p = np.stack([mcnemar(flat[i], flat[j]) for i, j in pairs], -1)
        found["old_pairs_claims"] = claims(p)
    cold, warm = outcomes[..., 0, :], outcomes[..., 1, :]
    low, high = old_bootstrap((warm - cold).mean((2, 3, 4)), proportion=False)
    found["old_compare_cov"] = covered(low, high, true_contrasts(rates, 2))
    _, low, high, p = new_contrasts(cells, 4)
    found["compare_cov"] = covered(low, high, true_contrasts(rates, 2))
    if s.temperature == 0.0:
        found["old_compare_claims"] = mcnemar(cold, warm)[:, None] < inference.ALPHA
        found["compare_claims"] = p < inference.ALPHA
    return found


def style(s: Setting, words: np.ndarray) -> dict[str, np.ndarray]:
    """Persona style words: the harness's scenario-mean contrasts against the old
    Kruskal-Wallis over every case (repeats counted as independent)."""
    _, low, high, p = new_contrasts(words.mean(-1), 2, bounded=False)
    truth = np.asarray(s.words[1:]) - s.words[0]
    found = {"style_cov": covered(low, high, truth)}
    if not any(s.words):
        found["style_claims"] = claims(p)
        by_persona = np.moveaxis(words, 2, 1).reshape(words.shape[0], 3, -1)
        found["old_style_claims"] = np.array(
            [stats.kruskal(*study).pvalue < inference.ALPHA for study in by_persona])[:, None]
    return found


EFFECTS = {"model": 1.0, "persona": (0.0, 0.5, -0.5), "temperature": -0.5,
           "words": (0.0, 10.0, -5.0)}


def settings() -> list[Setting]:
    found = []
    for g in (4, 8, 16):
        found += [Setting(f"null G={g}", g), Setting(f"effects G={g}", g, **EFFECTS)]
    found += [Setting("low spread G=8", 8, sigma=0.5, **EFFECTS),
              Setting("near ceiling G=8", 8, sigma=3.0, base=2.0, **EFFECTS),
              Setting("near ceiling null G=8", 8, sigma=3.0, base=2.0)]
    found += [Setting(f"{kind} G={g}", g, tags=("small",), **(EFFECTS if kind == "effects" else {}))
              for g in (2, 3) for kind in ("null", "effects")]
    found += [Setting(f"sign differs by scenario G={g}", g, base=0.0, model=2.0, flip=True,
                      tags=("stress",)) for g in (4, 8)]
    return found


def mean_of(results: list[dict[str, np.ndarray]], key: str) -> float:
    values = [r[key].ravel() for r in results if key in r]
    return float(np.concatenate(values).mean()) if values else float("nan")


def line(name: str, results: list[dict[str, np.ndarray]], prefix: str, goal: str) -> str:
    cover, false = mean_of(results, f"{prefix}_cov"), mean_of(results, f"{prefix}_claims")
    if np.isnan(false):
        false = mean_of(results, f"{prefix}_over")
    text = "n/a (no interval)" if np.isnan(cover) else f"{cover:.3f}"
    return f"{name}: coverage {text}, false claims {false:.3f} ({goal})"


def stated_mdd(s: Setting, studies: int, rng: np.random.Generator) -> float:
    """The median minimum detectable difference the harness states for the model factor."""
    outcomes, _ = simulate(s, studies, rng)
    value, _, high, _ = new_contrasts(outcomes.mean(-1), 3)
    se = (high - value) / stats.t.ppf(1 - inference.ALPHA / 2, s.scenarios - 1)
    mdd = [inference.minimum_detectable(s.scenarios, float(e) * np.sqrt(s.scenarios))
           for e in se.ravel()]
    return float(np.median(mdd))


def power_at(s: Setting, difference: float, studies: int, rng: np.random.Generator) -> float:
    """Share of studies finding a model effect whose true size is `difference`."""
    low, high = 0.0, 6.0
    for _ in range(40):  # the logit effect that makes the true difference `difference`
        middle = (low + high) / 2
        truth = true_contrasts(true_rates(replace(s, model=middle)), 1)[0]
        low, high = (middle, high) if truth < difference else (low, middle)
    outcomes, _ = simulate(replace(s, model=low), studies, rng)
    _, _, _, p = new_contrasts(outcomes.mean(-1), 3)
    return float((p < inference.ALPHA).mean())


def main() -> None:
    started = time.perf_counter()
    rng = np.random.default_rng(SEED)
    runs = [(s, analyse(s, STUDIES, rng)) for s in settings()]
    main_runs = [r for s, r in runs if "main" in s.tags]
    print(f"stats_calibration: {STUDIES} simulated studies per design, {len(main_runs)} designs "
          f"(3 personas x 2 models x T 0/0.7 x {REPEATS} repeats, 4-16 scenarios)")
    for name, prefix, goal in (
            ("rate, Wilson over scenario means (new)", "rate", "goal 0.93-0.97"),
            ("rate, Wilson over repeats (old)", "old_rate", "replaced"),
            ("rate, cluster bootstrap (old)", "boot_rate", "replaced"),
            ("factor effect, t over scenario differences (new)", "effect", "goal 0.93-0.97, <=0.05"),
            ("best vs rest, adjusted for picking the best (new)", "best", "goal 0.93-0.97, <=0.05"),
            ("best vs rest, Holm over k-1 alone (not used)", "best_holm", "over-claims"),
            ("compare two runs, paired on scenario (new)", "compare", "goal 0.93-0.97, <=0.05"),
            ("compare two runs, McNemar on repeats + bootstrap (old)", "old_compare", "replaced"),
            ("all pairs, McNemar on repeats, Holm over 66 (old)", "old_pairs", "replaced"),
            ("style words, scenario means (new)", "style", "goal 0.93-0.97, <=0.05"),
            ("style words, Kruskal-Wallis over cases (old)", "old_style", "replaced")):
        print(line(name, main_runs, prefix, goal))
    for s, r in runs:
        print(f"  {s.name}: rate {mean_of([r], 'rate_cov'):.3f}, effect "
              f"{mean_of([r], 'effect_cov'):.3f}, effect claims "
              f"{mean_of([r], 'effect_claims'):.3f}, best-vs-rest claims "
              f"{mean_of([r], 'best_claims'):.3f}")
    for g in (4, 8, 16):
        base = Setting(f"mdd G={g}", g, **{**EFFECTS, "model": 0.0})
        mdd = stated_mdd(base, STUDIES, rng)
        print(f"minimum detectable difference G={g}: stated {mdd:.2f}, power at that true "
              f"difference {power_at(base, mdd, STUDIES, rng):.2f} (goal about 0.80)")
    print(f"stats_calibration: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
