"""A public page's live experiment held against its visitors: ratings, scores and side-by-side
picks are rate-limited like messages, and the arm comes from the server, whatever visitor id a
client sends."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from experiments.live.definition import parse_experiment
from experiments.live.store import SqliteLiveStore
from experiments.web.live_chat import LiveChat
from tests.support.webapp import loopback_client, serve_in_process
from treadwise.settings import Settings
from treadwise.web.access import WRITES_PER_MINUTE
from treadwise.web.session import ChatSession

ARMS = """arms:
  - {name: warm, persona: friendly}
  - {name: exact, persona: technical}
"""
SLOW_DOWN = "Please slow down"


def public_page(data_dir: Path, definition: str) -> Settings:
    experiment = parse_experiment(definition)
    SqliteLiveStore(data_dir).create(experiment.name, experiment.model_dump())
    return dataclasses.replace(Settings.from_env({"TREADWISE_PUBLIC": "1"}), data_dir=data_dir)


@pytest.mark.slow
def test_scores_and_ratings_are_rate_limited(tmp_path: Path):
    data_dir = tmp_path / "data"
    with serve_in_process(public_page(data_dir, f"name: tone\n{ARMS}")) as url:
        client = loopback_client(url, download_files=False)
        chatbot, *_ = client.predict("What are your opening hours?", "friendly", "offline", "",
                                     0.0, api_name="/send")
        limit = int(WRITES_PER_MINUTE)
        scores = [client.predict(str(n % 5 + 1), api_name="/score") for n in range(limit + 2)]
        client.predict(len(chatbot) - 1, "down", api_name="/rate")
    assert all("is saved" in reply for reply in scores[:limit])
    assert all(reply.startswith(SLOW_DOWN) for reply in scores[limit:]), scores[limit:]
    assert "ratings and picks a minute" in scores[-1]
    events = SqliteLiveStore(data_dir).events("tone")
    assert [e["value"] for e in events if e["kind"] == "score"] == [float((limit - 1) % 5 + 1)]
    assert not [e for e in events if e["kind"] == "rating"], "a rating past the limit was kept"


def test_side_by_side_picks_are_rate_limited(tmp_path: Path):
    data_dir = tmp_path / "data"
    with serve_in_process(public_page(data_dir, f"name: duel\nside_by_side: true\n{ARMS}")) \
            as url:
        client = loopback_client(url, download_files=False)
        client.predict("What are your opening hours?", api_name="/side_by_side")
        limit = int(WRITES_PER_MINUTE)
        statuses = [client.predict(("1", "2")[n % 2], api_name="/side_by_side_pick")[-1]
                    for n in range(limit + 1)]
    assert all("you picked answer" in status for status in statuses[:limit])
    assert statuses[limit].startswith(SLOW_DOWN)
    (pick,) = SqliteLiveStore(data_dir).picks("duel")
    assert pick["winner"] == pick["arm_b" if limit % 2 == 0 else "arm_a"], "the refused pick won"


def client_computed_arm(name: str, browser_id: str) -> str:
    """The arm a client could work out for its own browser id before the server's secret
    took part: sha256 of the id, then the experiment's pick over that."""
    visitor = hashlib.sha256(f"treadwise-visitor:{browser_id}".encode()).hexdigest()[:32]
    point = int.from_bytes(hashlib.sha256(f"{name}:{visitor}".encode()).digest()[:8], "big")
    return "warm" if point / 2**64 < 0.5 else "exact"


def test_a_client_cannot_pick_its_arm_by_choosing_its_visitor_id(tmp_path: Path):
    live = LiveChat(dataclasses.replace(Settings.from_env({}), data_dir=tmp_path / "data"))
    experiment = parse_experiment(f"name: tone\n{ARMS}")
    live.store.create(experiment.name, experiment.model_dump())
    chosen = [f"{n:032x}" for n in range(400) if client_computed_arm("tone", f"{n:032x}") ==
              "warm"][:24]
    got = [live.arm(ChatSession(visitor=browser_id))[1].name for browser_id in chosen]
    # Each id the client picked for "warm" lands in either arm (24 all in one: 1 in 8 million).
    assert got.count("warm") < len(chosen) and got.count("exact") < len(chosen), got
