"""Live experiments: the YAML, sticky arms, the stores on SQLite and PostgreSQL, the CLI and the
anytime-valid analysis (its false claims under peeking, against a naive interval's)."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.live.definition import EXAMPLE, LiveError, parse_experiment
from experiments.live.report import analyse, events_csv, report
from experiments.live.sequential import difference_interval, halfwidth, rate_interval
from experiments.live.store import LiveStore, PostgresLiveStore, SqliteLiveStore
from tests.conftest import BACKENDS

TWO_ARMS = {"name": "ab", "arms": [{"name": "a", "persona": "friendly"},
                                   {"name": "b", "persona": "technical"}]}


def test_the_example_parses_with_its_defaults() -> None:
    experiment = parse_experiment(EXAMPLE)
    assert [arm.persona for arm in experiment.arms] == ["friendly", "technical"]
    assert experiment.arms[0].model == "offline" and experiment.alpha == 0.05


@pytest.mark.parametrize("text, why", [
    ("name: [x\n", "not valid YAML at line 2"),
    ("- a\n- b\n", "must hold a mapping"),
    ("name: x\narms: [{name: a, persona: friendly}]\n", "at least 2"),
    ("name: x\narms: [{name: a, persona: friendly}, {name: b, persona: pirate}]\n",
     "arm b: no persona 'pirate'"),
    ("name: x\narms: [{name: a, persona: friendly}, {name: a, persona: technical}]\n",
     "two arms have the same name"),
    ("name: x\narms: [{name: a, persona: friendly}, {name: b, persona: friendly, "
     "strategy: guess}]\n", "no strategy 'guess'"),
    ("name: x\narms: [{name: a, persona: friendly}, {name: b, persona: friendly, "
     "model: 'nope:'}]\n", "arm b:"),
    ("name: x\nsplit: 5\narms: [{name: a, persona: friendly}, {name: b, persona: friendly}]\n",
     "split"),
    ("name: x\narms: [{name: a, persona: friendly, weight: 0}, {name: b, persona: friendly}]\n",
     "weight"),
])
def test_a_bad_file_is_one_clear_line(text: str, why: str) -> None:
    with pytest.raises(LiveError) as raised:
        parse_experiment(text, "exp.yaml")
    message = str(raised.value)
    assert why in message and "\n" not in message and message.startswith("exp.yaml")


def test_arms_are_sticky_and_follow_the_weights() -> None:
    experiment = parse_experiment("name: w\narms: [{name: a, persona: friendly, weight: 3}, "
                                  "{name: b, persona: technical}]\n")
    picks = Counter(experiment.pick(f"visitor-{n}").name for n in range(4000))
    assert 0.72 < picks["a"] / 4000 < 0.78
    assert all(experiment.pick(f"visitor-{n}") == experiment.pick(f"visitor-{n}")
               for n in range(50))


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> LiveStore:
    if request.param == "sqlite":
        return SqliteLiveStore(tmp_path / "live")
    from experiments.store.harness_schema import harness_pool

    return PostgresLiveStore(harness_pool(request.getfixturevalue("database_url")))


def test_the_store_keeps_one_arm_per_visitor_and_one_rating_per_reply(store: LiveStore):
    store.create("ab", TWO_ARMS)
    with pytest.raises(ValueError, match="is running: stop it first"):
        store.create("cd", {**TWO_ARMS, "name": "cd"})
    assert store.assign("ab", "v1", "a") == "a"
    assert store.assign("ab", "v1", "b") == "a", "a second assignment replaced the first"
    store.record("ab", "v1", "a", "t1", "turn")
    store.record("ab", "v1", "a", "t1", "rating", 1)
    store.record("ab", "v1", "a", "t1", "rating", -1)  # changed their mind
    store.record("ab", "v1", "a", "t2", "rating", 1)
    store.unrate("ab", "v1", "t2")  # and took the second back
    events = store.events("ab")
    assert [(e["turn_id"], e["kind"], e["value"]) for e in events] == [
        ("t1", "turn", 1.0), ("t1", "rating", -1.0)]
    store.stop("ab")
    assert store.running() is None and store.get("ab")["status"] == "stopped"
    store.create("cd", {**TWO_ARMS, "name": "cd"})
    assert store.running()["name"] == "cd"
    lines = events_csv(store, "ab").splitlines()
    assert lines[0] == "experiment,visitor,arm,turn_id,kind,value,created_at" and len(lines) == 3


@pytest.mark.thorough
def test_the_report_counts_visitors_not_ratings(store: LiveStore) -> None:
    """One enthusiast rating 60 replies up must not outvote 25 visitors rating once each."""
    store.create("ab", TWO_ARMS)
    for n in range(25):
        for arm, value in (("a", 1 if n % 2 else -1), ("b", 1 if n % 2 else -1)):
            store.assign("ab", f"{arm}{n}", arm)
            store.record("ab", f"{arm}{n}", arm, f"t{arm}{n}", "rating", value)
    store.assign("ab", "fan", "b")
    for turn in range(60):
        store.record("ab", "fan", "b", f"fan{turn}", "rating", 1)
    result = report(store, "ab")
    b = result.arms[1]
    assert (b.raters, b.ups) == (26, 72)
    assert b.rate.estimate == pytest.approx(13 / 26)  # per visitor; per rating it would be 0.85
    assert result.better is None and "better arm: none yet" in result.text()


def _peeked_claims(p: tuple[float, float], experiments: int, interval, seed: int) -> float:
    """Share of simulated experiments in which a look every 50 visitors claimed a difference."""
    rng, claims = random.Random(seed), 0
    for _ in range(experiments):
        values: tuple[list[float], list[float]] = ([], [])
        for visitor in range(1, 1001):
            arm = rng.randrange(2)
            ratings = rng.randint(1, 3)
            values[arm].append(sum(rng.random() < p[arm] for _ in range(ratings)) / ratings)
            if visitor % 50 == 0 and interval(values[0], values[1]).excludes_zero():
                claims += 1
                break
    return claims / experiments


def naive(control: list[float], arm: list[float]):
    """The fixed-sample 95% interval, wrongly read after every 50 visitors."""
    from experiments.live.sequential import Interval, Moments

    (mc, vc), (ma, va) = Moments.of(control).mean_variance(), Moments.of(arm).mean_variance()
    half = 1.96 * math.sqrt(vc + va)
    return Interval(ma - mc, ma - mc - half, ma - mc + half, len(control) + len(arm))


def test_peeking_at_the_confidence_sequence_keeps_false_claims_below_alpha() -> None:
    sequence = lambda c, a: difference_interval(c, a, 0.05)  # noqa: E731
    assert _peeked_claims((0.5, 0.5), 150, sequence, seed=7) <= 0.05
    # The same peeking with a fixed-sample interval claims far too often: the test can tell.
    assert _peeked_claims((0.5, 0.5), 150, naive, seed=7) > 0.10
    assert _peeked_claims((0.5, 0.65), 40, sequence, seed=8) >= 0.8


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.03, 0.05])
def test_an_arms_rate_holds_at_every_look_even_at_low_rates(rate: float) -> None:
    """Visitors rating up a few percent of their one to three replies, the report read every
    20 visitors up to 200: the arm's interval misses the true rate at some look in at most 5%
    of experiments (the plug-in normal interval it replaced missed in 8-12%)."""
    rng, misses, experiments = random.Random(1), 0, 150
    for _ in range(experiments):
        values: list[float] = []
        for visitor in range(1, 201):
            ratings = rng.randint(1, 3)
            values.append(sum(rng.random() < rate for _ in range(ratings)) / ratings)
            if visitor % 20 == 0:
                found = rate_interval(values, 0.05)
                if not found.low <= rate <= found.high:
                    misses += 1
                    break
    assert misses / experiments <= 0.04


def test_one_visitor_is_not_certainty() -> None:
    first = rate_interval([1.0], 0.05)
    assert (first.low, first.high) == (0.0, 1.0)
    ten = rate_interval([0.0] * 10, 0.05)
    assert ten.low == 0.0 and 0.2 < ten.high < 0.6


def test_intervals_narrow_with_visitors_and_stay_within_rates() -> None:
    assert halfwidth(0.25 / 1000, 0.05) < halfwidth(0.25 / 100, 0.05)
    low_rate = rate_interval([1.0] * 5, 0.05)
    assert low_rate.high == 1.0 and low_rate.low < 0.8  # five fans are not certainty
    assert difference_interval([1.0] * 5, [0.0] * 5, 0.05).low == -1.0  # too few to say


def test_the_report_calls_the_better_arm_from_clear_data() -> None:
    experiment = parse_experiment(EXAMPLE)
    rng = random.Random(3)
    events, assignments = [], []
    for n in range(600):
        arm = ("friendly", "technical")[n % 2]
        assignments.append({"visitor": f"v{n}", "arm": arm})
        up = rng.random() < (0.45 if arm == "friendly" else 0.7)
        events.append({"visitor": f"v{n}", "arm": arm, "kind": "rating",
                       "value": 1 if up else -1})
    result = analyse(experiment, events, assignments)
    assert result.better == "technical" and "better arm technical" in result.text()


def test_the_cli_creates_reports_exports_and_stops(tmp_path: Path, capsys) -> None:
    definition = tmp_path / "exp.yaml"
    definition.write_text(EXAMPLE, encoding="utf-8")
    assert main(["live", "create", str(definition)]) == 0
    assert main(["live", "create", str(definition)]) == 2
    assert "already a live experiment" in capsys.readouterr().err
    assert main(["live", "report", "warm-vs-technical"]) == 0
    out = capsys.readouterr().out
    assert "| friendly |" in out and "Stopping rule" in out
    assert main(["live", "export", "warm-vs-technical", "--out", str(tmp_path / "e.csv")]) == 0
    assert (tmp_path / "e.csv").read_text().startswith("experiment,visitor,arm")
    assert main(["live", "stop", "warm-vs-technical"]) == 0
    assert main(["live", "report", "nothing-here"]) == 2
    assert "no live experiment named 'nothing-here'" in capsys.readouterr().err


def test_a_conversation_reopened_in_another_browser_stays_in_its_arm(tmp_path: Path) -> None:
    import dataclasses

    from experiments.web.live_chat import LiveChat
    from treadwise.settings import Settings
    from treadwise.web.session import ChatSession

    live = LiveChat(dataclasses.replace(Settings.from_env({}), data_dir=tmp_path / "data"))
    experiment = parse_experiment(EXAMPLE)
    live.store.create(experiment.name, experiment.model_dump())
    first = ChatSession(visitor="browser-one-0000000000")
    arm = live.arm(first)[1].name
    # Another browser whose own arm differs, opening the first browser's conversation link.
    other = next(ChatSession(visitor=f"browser-{n:016d}") for n in range(100)
                 if experiment.pick(live.visitor(ChatSession(visitor=f"browser-{n:016d}"))).name
                 != arm)
    other.thread_id = first.thread_id
    assert live.arm(other)[1].name == arm
    other.thread_id = "a-new-conversation"
    assert live.arm(other)[1].name != arm
