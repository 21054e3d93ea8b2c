"""Side-by-side live experiments and feedback scores: the YAML, the picks and scores on SQLite and
PostgreSQL, the Bradley-Terry ranking (its intervals' coverage, by simulation) and a pick made
through the real app stored against the arms the visitor saw."""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from experiments.live.definition import LiveError, parse_experiment
from experiments.live.ranking import fit, rank
from experiments.live.report import analyse, report
from experiments.live.store import (
    LiveStore,
    PostgresLiveStore,
    SqliteLiveStore,
    open_live_store,
)
from tests.conftest import BACKENDS
from tests.support.webapp import chat_text, loopback_client, serve_in_process
from treadwise.settings import Settings

DUEL = """name: duel
side_by_side: true
arms:
  - {name: warm, persona: friendly}
  - {name: exact, persona: technical}
"""
MARKER = "Okapi-5521"  # typed by the visitor: must never reach the experiment tables
PERSONAS = {"warm": "Friendly Advisor", "exact": "Technical Expert"}


@pytest.mark.parametrize("text, why", [
    ("name: x\nside_by_side: true\narms: [{name: a, persona: friendly}, "
     "{name: b, persona: friendly}]\n", "arms a and b are the same assistant"),
    ("name: x\nside_by_side: often\narms: [{name: a, persona: friendly}, "
     "{name: b, persona: technical}]\n", "side_by_side: Input should be a valid boolean"),
])
def test_a_bad_side_by_side_file_is_one_clear_line(text: str, why: str) -> None:
    with pytest.raises(LiveError) as raised:
        parse_experiment(text, "exp.yaml")
    assert why in str(raised.value) and "\n" not in str(raised.value)


def test_pairs_are_two_different_arms_in_either_order() -> None:
    experiment = parse_experiment("name: x\nside_by_side: true\narms: [{name: a, persona: "
                                  "friendly}, {name: b, persona: technical}, {name: c, persona: "
                                  "cautious}]\n")
    rng = random.Random(5)
    pairs = Counter(tuple(arm.name for arm in experiment.pair(rng)) for _ in range(3000))
    assert all(first != second for first, second in pairs)
    assert len(pairs) == 6 and min(pairs.values()) > 400  # every ordered pair, about evenly


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> LiveStore:
    if request.param == "sqlite":
        return SqliteLiveStore(tmp_path / "live")
    from experiments.store.harness_schema import harness_pool

    return PostgresLiveStore(harness_pool(request.getfixturevalue("database_url")))


def test_picks_and_scores_are_one_per_turn_and_visitor_the_last_kept(store: LiveStore) -> None:
    experiment = parse_experiment(DUEL)
    store.create(experiment.name, experiment.model_dump())
    store.pick("duel", "v1", "t1", ("warm", "exact"), "warm")
    store.pick("duel", "v1", "t1", ("warm", "exact"), "tie")  # changed their mind
    store.pick("duel", "v1", "t2", ("exact", "warm"), "both_bad")
    with pytest.raises(ValueError, match="cannot be won by 'other'"):
        store.pick("duel", "v1", "t3", ("warm", "exact"), "other")
    assert [(p["turn_id"], p["arm_a"], p["arm_b"], p["winner"]) for p in store.picks("duel")] \
        == [("t1", "warm", "exact", "tie"), ("t2", "exact", "warm", "both_bad")]
    store.score("duel", "v1", "warm", 2)
    store.score("duel", "v1", "warm", 5)
    with pytest.raises(ValueError, match="1 to 5"):
        store.score("duel", "v1", "warm", 6)
    assert [(e["kind"], e["value"]) for e in store.events("duel")] == [("score", 5.0)]
    for n in range(30):  # exact is picked over warm two times in three
        store.pick("duel", f"w{n}", "t", ("warm", "exact"), "exact" if n % 3 else "warm")
    text = report(store, "duel").text()
    assert "| 1 | exact |" in text and "| 2 | warm |" in text
    assert "| warm vs exact | 10 | 20 | 1 | 1 |" in text


def test_scores_are_reported_per_arm_one_per_visitor() -> None:
    experiment = parse_experiment(DUEL.replace("side_by_side: true\n", ""))
    events = [{"visitor": f"v{n}", "arm": "warm" if n % 2 else "exact", "kind": "score",
               "value": 2 if n % 2 else 5} for n in range(40)]
    warm, exact = analyse(experiment, events, []).arms
    assert (warm.score.n, warm.score.estimate) == (20, 2.0) and exact.score.estimate == 5.0
    assert 1.0 <= warm.score.low < 2.0 < warm.score.high < 5.0 and exact.score.high == 5.0
    assert "| 20 | 2.00 [" in analyse(experiment, events, []).text()


def test_one_pick_shows_no_strength_and_says_not_enough_picks_yet() -> None:
    """One visitor, one pick: no strength, no interval (a bootstrap of one visitor has zero
    width), and a sentence the page shows instead."""
    experiment = parse_experiment(DUEL)
    pick = {"visitor": "v1", "arm_a": "warm", "arm_b": "exact", "winner": "exact"}
    result = analyse(experiment, [], [], picks=[pick])
    text = result.text()
    assert not any(sign in text for sign in ("+3.", "-3.", "3.4%")), text
    assert "Not enough picks yet: every pair of arms needs decisive picks from 10 visitors" in text
    assert "(fewest so far: warm vs exact, 1)" in text
    assert "| warm vs exact | 0 | 1 | 0 | 0 |" in text
    assert result.ranking.strengths == [] and result.ranking.status.startswith(
        "not enough picks yet")


def test_the_page_shows_strengths_from_the_statistics_own_minimum_of_pickers() -> None:
    """The Experiments page hides the ranking below the live report's MIN_PICKERS (the
    ranking's own minimum), and shows it once that many visitors have picked."""
    from experiments.live import ranking
    from experiments.live import report as live
    from experiments.web.live_tab import shown_report

    assert live.MIN_PICKERS == ranking.MIN_PAIR_VISITORS
    experiment = parse_experiment(DUEL)

    def page(visitors: int) -> str:
        picks = [{"visitor": f"v{n}", "arm_a": "warm", "arm_b": "exact",
                  "winner": "exact" if n % 3 else "warm"} for n in range(visitors)]
        return shown_report(analyse(experiment, [], [], picks=picks))

    early = page(live.MIN_PICKERS - 1)
    assert "not enough picks yet" in early.lower() and "P(picked over" not in early
    assert "P(picked over warm)" in page(live.MIN_PICKERS)


@pytest.mark.slow
def test_equal_arms_are_rarely_told_apart_however_many() -> None:
    """Three equal arms, 40 visitors each comparing one pair one to three times: some arm is
    named picked over another in at most 5% of studies (all pairs share the 5%)."""
    arms, rng, named = ["a", "b", "c"], random.Random(4), 0
    for study in range(120):
        picks = []
        for visitor in range(40):
            x, y = rng.sample(arms, 2)
            winner = x if rng.random() < 0.5 else y
            picks += [{"visitor": f"v{visitor}", "arm_a": x, "arm_b": y,
                       "winner": winner if rng.random() < 0.7 else rng.choice([x, y])}
                      for _ in range(rng.randint(1, 3))]
        named += any(s.above for s in rank(picks, arms, samples=400, seed=study).strengths)
    assert named / 120 <= 0.05


@pytest.mark.thorough
def test_the_fit_recovers_known_strengths_from_many_picks() -> None:
    truth = np.array([0.0, 0.8, -0.5])
    rng = np.random.default_rng(1)
    wins = np.zeros((3, 3))
    for _ in range(30000):
        i, j = rng.choice(3, 2, replace=False)
        p = 1 / (1 + math.exp(truth[j] - truth[i]))
        if rng.random() < p:
            wins[i, j] += 1
        else:
            wins[j, i] += 1
    assert np.allclose(fit(wins), truth, atol=0.06)
    assert fit(np.array([[0, 3], [0, 0]]))[1] < -3  # never picked: weak, and still finite


TRUTH = {"a": 0.0, "b": 0.6, "c": -0.4}


def simulated_study(rng: random.Random, visitors: int = 150, picks: int = 6) -> list[dict]:
    """Visitors comparing one random pair several times: each repeats their first decisive
    pick with probability 0.7 (one taste, not six opinions), else picks afresh; either way a
    pick goes to i with Bradley-Terry's probability. One pick in ten is a tie."""
    found = []
    for visitor in range(visitors):
        x, y = rng.sample(list(TRUTH), 2)
        p, first = 1 / (1 + math.exp(TRUTH[y] - TRUTH[x])), None
        for _ in range(picks):
            if rng.random() < 0.1:
                winner = "tie"
            elif first is not None and rng.random() < 0.7:
                winner = first
            else:
                winner = first = x if rng.random() < p else y
            found.append({"visitor": f"v{visitor}", "arm_a": x, "arm_b": y, "winner": winner})
    return found


def _coverage(studies: int, seed: int, per_pick: bool = False) -> dict[str, float]:
    rng, covered = random.Random(seed), Counter()
    for study in range(studies):
        picks = simulated_study(rng)
        if per_pick:  # the mistake: every pick its own visitor
            picks = [{**pick, "visitor": str(n)} for n, pick in enumerate(picks)]
        for strength in rank(picks, list(TRUTH), samples=300, seed=study).strengths:
            covered[strength.arm] += strength.low <= TRUTH[strength.arm] <= strength.high
    return {arm: covered[arm] / studies for arm in ("b", "c")}


def test_the_visitor_bootstrap_covers_known_strengths_for_every_pair_at_once() -> None:
    coverage = _coverage(200, seed=11)
    print(f"visitor bootstrap: coverage {coverage} (each at 1 - 0.05/3, all pairs 0.95)")
    assert all(0.95 <= rate for rate in coverage.values()), coverage
    # Resampling picks instead of visitors ignores that a visitor's picks agree: it misses.
    naive = _coverage(80, seed=12, per_pick=True)
    print(f"pick bootstrap: coverage {naive}")
    assert all(rate < 0.85 for rate in naive.values()), naive


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pick_in_the_app_is_stored_against_the_arms_shown(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    data_dir, database_url = tmp_path / "data", None
    if backend == "postgres":
        database_url = request.getfixturevalue("database_url")
    store = open_live_store(data_dir, database_url)
    experiment = parse_experiment(DUEL)
    store.create(experiment.name, experiment.model_dump())
    settings = dataclasses.replace(Settings.from_env({}), data_dir=data_dir,
                                   database_url=database_url)
    with serve_in_process(settings) as url:
        client = loopback_client(url, download_files=False)
        first, second, _, status = client.predict(f"{MARKER}: what are your opening hours?",
                                                  api_name="/side_by_side")
        shown = chat_text(first) + chat_text(second)
        assert "Pick one" in status
        assert "hidden until you pick" in shown
        assert not any(name in shown for name in PERSONAS.values()), "an arm was named"
        first, second, status = client.predict("2", api_name="/side_by_side_pick")
        named = [next(arm for arm, name in PERSONAS.items() if name in chat_text(side))
                 for side in (first, second)]
        assert sorted(named) == ["exact", "warm"] and "you picked answer 2" in status
        (pick,) = store.picks("duel")
        assert (pick["arm_a"], pick["arm_b"], pick["winner"]) == (*named, named[1])
        client.predict("both_bad", api_name="/side_by_side_pick")
        (pick,) = store.picks("duel")
        assert pick["winner"] == "both_bad"
        _, _, status = client.predict("3", api_name="/side_by_side_pick")
        assert "Pick 1, 2, tie or both_bad" in status
        turns = {(e["arm"], e["kind"]) for e in store.events("duel")}
        assert turns == {("warm", "turn"), ("exact", "turn")}, "each arm's answer is a turn"
        text, _ = client.predict("duel", api_name="/live_report")
        # One visitor's one pick: no strength or interval, the counts and what is missing.
        assert "Not enough picks yet" in text and "| warm vs exact | 0 | 0 | 0 | 1 |" in text
        assert "P(picked over" not in text and "[" not in text
    # No message text in the experiment's tables: not the visitor's words, not an answer's.
    stored = str([store.picks("duel"), store.events("duel"), store.experiments()])
    assert MARKER not in stored and "opening hours" not in stored.lower()
    if backend == "sqlite":  # nor anywhere in the file's bytes (pages and WAL)
        raw = b"".join(p.read_bytes() for p in data_dir.glob("live.db*"))
        assert MARKER.encode() not in raw and b"opening hours" not in raw.lower()
