"""Simulated sweeps with a known truth for benchmarks/stats_calibration.py, and how a report's
findings on one of them compare with that truth."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.special import expit

PERSONAS, MODELS, TEMPERATURES, REPEATS = ("p0", "p1", "p2"), ("m0", "m1"), (0.0, 0.7), 3
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()
EFFECTS = {"model": 1.0, "persona": (0.0, 0.5, -0.5), "temperature": -0.5,
           "words": (0.0, 10.0, -5.0)}


@dataclass(frozen=True)
class Design:
    """A sweep of 3 personas x 2 models x T 0 / 0.7 x 3 repeats over `scenarios` scenarios,
    T = 0 repeating its first answer. Success is logistic in the effects plus a scenario's
    difficulty (sd `sigma`); `fails` makes each of a persona's or model's scenarios fail
    outright with that chance (a sparse deterministic effect at a ceiling)."""

    name: str
    scenarios: int
    sigma: float = 1.5
    base: float = 0.5
    model: float = 0.0
    persona: tuple[float, float, float] = (0.0, 0.0, 0.0)
    temperature: float = 0.0
    words: tuple[float, float, float] = (0.0, 0.0, 0.0)
    flip: bool = False  # the model effect's sign differs by scenario (its mean is 0)
    fails: dict[str, float] = field(default_factory=dict)  # "p1" or "m1" -> share failing
    errors: float = 0.0  # chance m1 errors on a case it would have failed (not at random)
    uneven: bool = False  # each cell keeps 1 to 3 of its repeats
    cold_only: bool = False  # T = 0 only: one answer per cell
    compare: bool = False  # also pair its T = 0 half with its T = 0.7 half as two runs

    @property
    def null(self) -> bool:
        return not (self.model or any(self.persona) or self.temperature or self.fails)


def logits(d: Design) -> np.ndarray:
    """[persona, model, temperature] linear predictor without the scenario's difficulty."""
    return (d.base + np.asarray(d.persona)[:, None, None] + d.model * np.arange(2)[:, None]
            + d.temperature * np.arange(2))


def true_rates(d: Design) -> np.ndarray:
    """Each configuration's success rate over the population of scenarios [p, m, t]."""
    if d.flip:
        plain = replace(d, flip=False)
        return (true_rates(plain) + true_rates(replace(plain, model=-d.model))) / 2
    rates = (expit(logits(d)[..., None] + d.sigma * NODES) * WEIGHTS).sum(-1)
    for who, share in d.fails.items():
        index = (PERSONAS.index(who), slice(None)) if who in PERSONAS else (
            slice(None), MODELS.index(who))
        rates[index] *= 1 - share
    return rates


def simulate(d: Design, studies: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Outcomes and style words [study, scenario, persona, model, temperature, repeat] and
    errors (True = the case errored)."""
    shape = (studies, d.scenarios, 3, 2, 2, REPEATS)
    difficulty = rng.normal(0.0, d.sigma, (studies, d.scenarios))
    sign = rng.choice([-1.0, 1.0], difficulty.shape) if d.flip else np.ones(difficulty.shape)
    eta = (logits(d) + difficulty[..., None, None, None]
           + (sign[..., None, None, None] - 1) * d.model * np.arange(2)[:, None])
    outcomes = (rng.random(shape) < expit(eta)[..., None]).astype(float)
    for who, share in d.fails.items():
        failing = rng.random(difficulty.shape) < share  # a property of the scenario
        where = (slice(None), slice(None), PERSONAS.index(who)) if who in PERSONAS else (
            slice(None), slice(None), slice(None), MODELS.index(who))
        outcomes[where] *= ~failing.reshape(failing.shape + (1,) * (outcomes[where].ndim - 2))
    words = (60 + 15 * rng.normal(size=(studies, d.scenarios))[..., None, None, None, None]
             + np.asarray(d.words)[:, None, None, None] + 8 * rng.normal(size=shape))
    for data in (outcomes, words):
        data[..., 0, :] = data[..., 0, :1]  # T = 0: every repeat repeats the first answer
    errored = np.zeros(shape, bool)
    if d.errors:
        errored[:, :, :, 1] = (outcomes[:, :, :, 1] == 0) & (rng.random(shape[:3] + shape[4:])
                                                              < d.errors)
    return outcomes, words, errored


def template(d: Design) -> pd.DataFrame:
    """The rows of one study but their outcomes, in simulate's order."""
    index = np.indices((d.scenarios, 3, 2, 2, REPEATS)).reshape(5, -1)
    persona, model = np.asarray(PERSONAS)[index[1]], np.asarray(MODELS)[index[2]]
    temperature = np.asarray(TEMPERATURES)[index[3]]
    return pd.DataFrame({
        "scenario": np.char.add("s", index[0].astype(str)), "repeat": index[4],
        "persona": persona, "model_name": model, "temperature": temperature,
        "config_hash": [f"{p}/{m}/{t:g}" for p, m, t in zip(persona, model, temperature,
                                                              strict=True)]})


def study_rows(d: Design, base: pd.DataFrame, outcome: np.ndarray, words: np.ndarray,
               errored: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """One study's rows as the report reads them."""
    success = outcome.ravel()
    status = np.where(errored.ravel(), "error", np.where(success == 1, "ok", "failed"))
    rows = base.assign(success=success, status=status, response_words=words.ravel())
    keep = np.ones(len(rows), bool)
    if d.cold_only:
        keep &= rows["temperature"].to_numpy() == 0.0
    if d.uneven:  # each cell keeps its first 1 to 3 repeats
        kept = rng.integers(1, REPEATS + 1, (d.scenarios, 3, 2, 2))
        keep &= rows["repeat"].to_numpy() < np.repeat(kept.ravel(), REPEATS)
    return rows[keep].reset_index(drop=True)


def pair_truth(rates: np.ndarray, axis: int, level: int, reference: int) -> float:
    """Level minus reference of one factor, averaged over the other factors' cells."""
    moved = np.moveaxis(rates, axis, 0)
    return float((moved[level] - moved[reference]).mean())


AXES = {"persona": (0, list(PERSONAS)), "model": (1, list(MODELS)),
        "temperature": (2, list(TEMPERATURES))}


def _checked(table: pd.DataFrame, truths: np.ndarray) -> tuple[np.ndarray, bool]:
    """Each interval's coverage of its truth, and whether any claim is false (the truth is 0
    or has the other sign)."""
    low, high = table["ci_low"].to_numpy(float), table["ci_high"].to_numpy(float)
    shown = ~np.isnan(low)
    covered = (low <= truths + 1e-12) & (truths - 1e-12 <= high)
    claimed = table["significant"].to_numpy(bool)
    wrong = claimed & (np.sign(truths) != np.where(low > 0, 1.0, -1.0))
    return covered[shown], bool(wrong.any())


def judge(d: Design, found, rates: np.ndarray) -> dict[str, np.ndarray]:
    """What one report got right: each interval's coverage and each kind's false claims."""
    if d.cold_only:
        rates = rates[:, :, :1]
    out: dict[str, np.ndarray] = {}
    truth_of = {f"{p}/{m}/{t:g}": rates[i, j, k] for i, p in enumerate(PERSONAS)
                for j, m in enumerate(MODELS) for k, t in enumerate(TEMPERATURES[:rates.shape[2]])}
    table = found.rates
    shown = ~np.isnan(table["ci_low"].to_numpy(float))
    labels = table["label"].to_numpy()[shown]
    truth = np.array([truth_of[label] for label in labels])
    low, high = (table[c].to_numpy(float)[shown] for c in ("ci_low", "ci_high"))
    out["rate_cov"] = (low <= truth + 1e-12) & (truth - 1e-12 <= high)
    out["rate_claims"] = low > truth + 1e-12
    if len(labels):
        value = table["rate"].to_numpy(float)[shown]
        best = min(range(len(labels)), key=lambda n: (-value[n], labels[n]))
        picked, lows, highs = truth[best], table["all_low"].to_numpy(float)[shown], \
            table["all_high"].to_numpy(float)[shown]
        out["winner_cov"] = np.array([lows[best] <= picked + 1e-12 <= highs[best] + 2e-12])
        out["winner_claims"] = np.array([lows[best] > picked + 1e-12])
    claims = []
    effects = found.effects
    if len(effects):
        truths = np.array([pair_truth(rates, AXES[f][0], AXES[f][1].index(a),
                                      AXES[f][1].index(b)) for f, a, b in
                           zip(effects["factor"], effects["level"], effects["reference"],
                               strict=True)])
        out["effect_cov"], wrong = _checked(effects, truths)
        out["effect_claims"] = np.array([wrong])
        claims.append(wrong)
    winner = found.winner
    if len(winner):
        truths = np.array([truth_of[a] - truth_of[b] for a, b in
                           zip(winner["best"], winner["other"], strict=True)])
        covered, wrong = _checked(winner, truths)
        out["best_cov"], out["best_claims"] = np.array([covered.all()]), np.array([wrong])
        claims.append(wrong)
    style = found.style_differences
    if len(style):
        shift = dict(zip(PERSONAS, d.words, strict=True))
        truths = np.array([shift[a] - shift[b] for a, b in
                           zip(style["level"], style["reference"], strict=True)])
        out["style_cov"], wrong = _checked(style, truths)
        out["style_claims"] = np.array([wrong])
        claims.append(wrong)
    out["report_claims"] = np.array([any(claims)])
    return out
