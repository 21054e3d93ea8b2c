"""Live experiments in the app: each visitor answered by one arm on every turn, ratings stored
against it without a word of the conversation, and only admins create, stop or read one."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from experiments.live.definition import parse_experiment
from experiments.live.store import DB_NAME, SqliteLiveStore
from tests.support.webapp import chat_text, loopback_client, serve_in_process
from treadwise.settings import Settings

MARKER = "Zebra-7781 quokka"  # typed by a visitor: must never reach the experiment tables
DEFINITION = """name: tone
arms:
  - {name: warm, persona: friendly}
  - {name: exact, persona: technical}
"""


def start(data_dir: Path) -> None:
    experiment = parse_experiment(DEFINITION)
    SqliteLiveStore(data_dir).create(experiment.name, experiment.model_dump())


def send(client: Client, message: str, persona: str = "cautious") -> list[dict]:
    chatbot, *_ = client.predict(message, persona, "offline", "", 0.0, api_name="/send")
    return chatbot


def _public(data_dir: Path) -> Settings:
    env = {"TREADWISE_PUBLIC": "1", "TREADWISE_ADMINS": "boss",
           "TREADWISE_AUTH": "boss:pw-9931,guest:pw-1177,ann:pw-2288,cy:pw-3399"}
    return dataclasses.replace(Settings.from_env(env), data_dir=data_dir)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One public page for the module; its tests run in order (the last stops the experiment)."""
    data_dir = tmp_path_factory.mktemp("live") / "data"
    start(data_dir)
    with serve_in_process(_public(data_dir)) as url:
        yield url, data_dir


def guest(url: str, user: str = "guest") -> Client:
    password = {"guest": "pw-1177", "ann": "pw-2288", "cy": "pw-3399"}[user]
    return loopback_client(url, auth=(user, password), download_files=False)


def test_a_visitor_keeps_one_arm_and_their_ratings_carry_no_text(app) -> None:
    url, data_dir = app
    client = guest(url)
    first = send(client, f"Hello, I am {MARKER}. What are your opening hours?")
    second = send(client, f"Which tires for an SUV, {MARKER}?", persona="friendly")
    last = len(second) - 1
    client.predict(last, "up", api_name="/rate")
    client.predict(len(first) - 1, "down", api_name="/rate")
    client.predict(len(first) - 1, "none", api_name="/rate")  # undone
    assert "score 4 is saved" in client.predict("4", api_name="/score")
    client.predict("2", api_name="/score")  # a second score replaces the first
    assert "from 1 to 5" in client.predict("nine", api_name="/score")
    # A signed-in user is one visitor, whichever session they use: two other users.
    others = [guest(url, user) for user in ("ann", "cy")]
    for other in others:
        send(other, "Hi")
    store = SqliteLiveStore(data_dir)
    events = store.events("tone")
    mine = {e["visitor"] for e in events if e["kind"] == "rating"}
    assert len(mine) == 1
    (visitor,) = mine
    arms = {e["arm"] for e in events if e["visitor"] == visitor}
    assert len(arms) == 1, "one visitor was answered by two arms"
    persona = {"warm": "Friendly", "exact": "Technical"}[arms.pop()]
    assert chat_text(second).count(persona) >= 2, "the arm's persona did not answer both turns"
    assert "Cautious" not in chat_text(second), "the picker's persona answered"
    ratings = [(e["kind"], e["value"]) for e in events if e["visitor"] == visitor]
    assert ratings.count(("turn", 1.0)) == 2 and ("rating", 1.0) in ratings
    assert ("rating", -1.0) not in ratings, "the undone rating is still stored"
    assert [r for r in ratings if r[0] == "score"] == [("score", 2.0)]
    assert len(store.assignments("tone")) == 3
    # No message text anywhere: not in a column, not in the file's bytes (pages and WAL).
    answer = chat_text(second).split("\n")[0][:40]
    with sqlite3.connect(data_dir / DB_NAME) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE "
                                                 "type = 'table'")]
        assert {"live_events", "live_picks"} <= set(tables)
        for table in tables:
            for row in db.execute(f"SELECT * FROM {table}"):
                assert not any(MARKER.split()[0] in str(v) for v in row)
    raw = b"".join(p.read_bytes() for p in data_dir.glob(f"{DB_NAME}*"))
    assert MARKER.split()[0].encode() not in raw and answer.encode() not in raw


def test_only_an_admin_creates_stops_or_reads_a_live_experiment(app) -> None:
    url, data_dir = app
    visitor = guest(url)
    for api_name, args in {"/live_create": (DEFINITION.replace("tone", "mine"),),
                           "/live_stop": ("tone",), "/live_report": ("tone",)}.items():
        with pytest.raises(AppError, match="signed-in admin"):
            visitor.predict(*args, api_name=api_name)
    assert SqliteLiveStore(data_dir).running()["name"] == "tone"
    boss = loopback_client(url, auth=("boss", "pw-9931"), download_files=False)
    report, csv = boss.predict("tone", api_name="/live_report")
    assert "Live experiment tone" in report and str(csv).count(".csv") >= 1
    status = boss.predict("tone", api_name="/live_stop")
    assert "is stopped" in status
    status, _ = boss.predict("name: x\narms: []\n", api_name="/live_create")
    assert status.startswith("Not started:") and "\n" not in status
    assert SqliteLiveStore(data_dir).running() is None
