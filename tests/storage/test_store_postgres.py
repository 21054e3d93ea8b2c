"""The PostgreSQL store on a real server: same behaviour as SQLite, exactly-once across processes,
migrations safe when processes start together, the export, and a dead database."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from langchain_core.tools import ToolException

from tests.support.forks import small_forks
from tests.support.postgres_cluster import PASSWORD
from tests.support.webapp import free_port
from treadwise.agent import Agent
from treadwise.errors import redact
from treadwise.settings import Settings
from treadwise.storage import open_store
from treadwise.storage.leads import InvalidLead, StoreUnavailable
from treadwise.storage.memory import open_checkpointer
from treadwise.storage.migrations import PRODUCT, migrate
from treadwise.storage.plots import SharedPlots
from treadwise.storage.postgres import PostgresStore, close_pools, connection_kwargs
from treadwise.tools import ToolContext
from treadwise.tools.business import business_tools

FORK = small_forks(__name__)
REPO = Path(__file__).resolve().parents[2]


def _record_interest(data_dir: Path, url: str):
    context = ToolContext(data_dir=data_dir, database_url=url)
    return {tool.name: tool for tool in business_tools(context)}["record_customer_interest"]


def _query(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def test_a_lead_is_stored_once_with_its_fields(database_url: str) -> None:
    fixed = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    store = PostgresStore.connect(database_url, clock=lambda: fixed)
    first = store.add_lead("  ana@example.com ", "Ana Silva", "Fleet pricing for 12 vans.")
    again = store.add_lead("ANA@Example.com", "Ana S.", "fleet   pricing for 12 vans")
    other = store.add_lead("ana@example.com", "Ana", "Smart Tread for my SUV")
    assert first.stored and again.duplicate and again.id == first.id and other.stored
    assert store.leads()[0] == {"id": first.id, "created_at": "2026-11-02T09:30:00+00:00",
                                "email": "ana@example.com", "name": "Ana Silva",
                                "message": "Fleet pricing for 12 vans."}
    assert store.lead_count() == 2
    ref = store.add_feedback("Do you sell rims?\nAnd hubcaps?")
    assert store.feedback() == [{"id": ref, "created_at": "2026-11-02T09:30:00+00:00",
                                 "question": "Do you sell rims?\nAnd hubcaps?"}]


@pytest.mark.parametrize(("email", "name", "message", "why"), [
    ("x@y.com\r\nBcc: z@w.com", "Eve", "hi", "line breaks"),
    ("Eve <eve@example.com>", "Eve", "hi", "one plain e-mail"),
    ("eve@example.com", "Eve\x00", "hi", "control characters"),
    ("eve@example.com", "Eve", "m" * 2001, "limit is 2000"),
])
def test_invalid_leads_store_nothing_and_say_why(database_url, email, name, message, why):
    store = open_store(Path("unused"), database_url)
    with pytest.raises(InvalidLead, match=why):
        store.add_lead(email, name, message)
    assert store.lead_count() == 0


def _writer(data_dir: Path, url: str, worker: int, count: int, barrier) -> None:
    record = _record_interest(data_dir, url)
    barrier.wait()
    for n in range(count):
        record.invoke({"email": f"w{worker}.{n}@example.com", "name": f"Worker {worker}",
                       "message": f"Interested in Smart Tread, request {worker}-{n}"})


def _run_all(target, args_for, workers: int) -> None:
    barrier = FORK.Barrier(workers)
    processes = [FORK.Process(target=target, args=(*args_for(w), barrier))
                 for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0] * workers


def test_eight_processes_x_200_leads_are_exactly_1600(database_url: str, tmp_path) -> None:
    _run_all(_writer, lambda w: (tmp_path / f"p{w}", database_url, w, 200), workers=8)
    assert _query(database_url, "SELECT count(*), count(DISTINCT email) FROM leads") == [
        (1600, 1600)]
    # Nothing went to SQLite on the side.
    assert not list(tmp_path.rglob("leads.db"))


def _same_leads(data_dir: Path, url: str, answers, barrier) -> None:
    record = _record_interest(data_dir, url)
    barrier.wait()
    for n in range(40):
        answers.put(record.invoke({"email": f"same{n}@example.com", "name": "Sam",
                                   "message": f"Fleet quote number {n}"}))


def test_the_same_leads_from_eight_processes_at_once_are_stored_once(database_url, tmp_path):
    answers = FORK.Queue()
    _run_all(_same_leads, lambda w: (tmp_path / f"p{w}", database_url, answers), workers=8)
    replies = [answers.get(timeout=10) for _ in range(8 * 40)]
    assert _query(database_url, "SELECT count(*) FROM leads") == [(40,)]
    # Each request was stored once, and no process was told another one stored it first.
    assert all(reply.startswith("Saved") for reply in replies)


def _migrator(url: str, answers, barrier) -> None:
    with psycopg.connect(url, **connection_kwargs()) as conn:
        barrier.wait()
        answers.put(migrate(conn))


def test_processes_starting_together_migrate_the_schema_once(database_url: str) -> None:
    answers = FORK.Queue()
    _run_all(_migrator, lambda w: (database_url, answers), workers=4)
    applied = sorted((answers.get(timeout=10) for _ in range(4)), key=len)
    names = PRODUCT.names()
    assert applied == [[], [], [], names]
    assert sorted(_query(database_url, "SELECT name FROM treadwise_migrations")) == [
        (name,) for name in names]
    versions = _query(database_url, "SELECT v, count(*) FROM checkpoint_migrations GROUP BY v")
    assert versions and all(count == 1 for _, count in versions)


def test_the_export_command_reads_postgresql(database_url: str, tmp_path: Path) -> None:
    PostgresStore.connect(database_url).add_lead("ana@fleetco.com", "Ana", "=HYPERLINK(x)")
    data_dir = tmp_path / "sqlite-data"
    open_store(data_dir).add_lead("only-in-sqlite@example.com", "", "not exported")
    env = {**os.environ, "TREADWISE_DATABASE_URL": database_url,
           "TREADWISE_DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "treadwise", "leads", "export", "--format",
                           "jsonl"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(row["email"], row["message"]) for row in rows] == [
        ("ana@fleetco.com", "=HYPERLINK(x)")]
    assert "exported 1 leads" in done.stderr


@pytest.mark.timeout(60)
def test_a_dead_database_is_a_clear_error_not_a_hang(tmp_path, caplog) -> None:
    dead = f"postgresql://treadwise:{PASSWORD}@127.0.0.1:{free_port()}/nothing"
    caplog.set_level(logging.INFO)
    record = _record_interest(tmp_path, dead)
    with pytest.raises(ToolException, match="couldn't save that right now: the database is "
                                            "unreachable"):
        record.invoke({"email": "ana@example.com", "name": "Ana", "message": "fleet"})
    memory = open_checkpointer(tmp_path, dead)
    assert memory.degraded
    # The conversation goes on in this process's RAM.
    agent = Agent(Settings(data_dir=tmp_path, database_url=dead), checkpointer=memory)
    first = agent.run("My name is Ana Silva.", thread_id="t")
    second = agent.run("What are your opening hours on Saturday?", thread_id="t")
    assert first.error is None and second.error is None and second.answer
    assert len([m for m in agent.history("t") if m.type == "human"]) == 2
    assert "using RAM only" in caplog.text
    assert PASSWORD not in caplog.text


def test_a_wrong_password_is_refused_without_showing_it(postgres_cluster, caplog) -> None:
    caplog.set_level(logging.INFO)
    wrong = postgres_cluster.url(password="not-the-password-7731")
    with pytest.raises(StoreUnavailable) as raised:
        open_store(Path("unused"), wrong)
    assert "not-the-password-7731" not in str(raised.value) + caplog.text
    assert "treadwise@127.0.0.1" in caplog.text  # the log says which database it tried


def test_a_plot_drawn_on_one_replica_is_found_by_another(database_url, tmp_path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + os.urandom(64)
    drawn = tmp_path / "a" / "plots" / "area-0123456789ab.png"
    drawn.parent.mkdir(parents=True)
    drawn.write_bytes(png)
    SharedPlots(drawn.parent, database_url).keep(drawn)
    other = SharedPlots(tmp_path / "b" / "plots", database_url)
    found = other.find(str(drawn))
    assert found == tmp_path / "b" / "plots" / drawn.name and found.read_bytes() == png
    assert other.find("/etc/passwd") is None and other.find("area-missing.png") is None


def test_the_database_url_setting_never_shows_its_password() -> None:
    url = "postgresql://tw:pw-4821-secret@db.internal:5432/treadwise"
    settings = Settings.from_env({"TREADWISE_DATABASE_URL": url})
    assert settings.database_url == url and "pw-4821-secret" not in repr(settings)
    assert redact(f"connection to {url} failed") == (
        "connection to postgresql://tw:[redacted]@db.internal:5432/treadwise failed")
    assert "pw-4821" not in redact("host=db password=pw-4821-secret user=tw")
    with pytest.raises(ValueError, match="must be a postgresql:// URL") as raised:
        Settings.from_env({"TREADWISE_DATABASE_URL": "mysql://tw:pw-4821-secret@db/x"})
    assert "pw-4821" not in str(raised.value)


def test_a_read_only_database_is_a_clear_tool_error(database_url: str, tmp_path) -> None:
    PostgresStore.connect(database_url)  # schema in place
    close_pools()
    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    record = _record_interest(tmp_path, database_url)
    with pytest.raises(ToolException, match="couldn't save that right now: the database is "
                                            "read-only"):
        record.invoke({"email": "ana@example.com", "name": "Ana", "message": "fleet"})


def test_without_postgresql_the_tests_fail_saying_how_to_install_it(monkeypatch) -> None:
    import inspect

    from tests.support import postgres_cluster

    monkeypatch.setattr(postgres_cluster.glob, "glob", lambda pattern: [])
    # The launcher itself, past the guard that keeps it to the postgres fixture: it starts
    # nothing here, it only says what to install.
    with pytest.raises(RuntimeError, match=r"Install them with `sh \.ci/install-system`"):
        inspect.unwrap(postgres_cluster.start_cluster)()


def test_a_corrected_address_moves_the_lead_instead_of_adding_one(database_url: str) -> None:
    store = PostgresStore.connect(database_url)
    request = "Fleet quote for 12 vans"
    typo = store.add_lead("ana@exmaple.com", "Ana", request)
    moved = store.replace_lead("ana@exmaple.com", "ana@example.com", "Ana", request)
    assert moved.stored and moved.id == typo.id
    assert [row["email"] for row in store.leads()] == ["ana@example.com"]
    again = store.replace_lead("ana@example.com", "ana@example.com", "Ana", request)
    assert again.duplicate and store.lead_count() == 1
    # Both addresses already on file for the request: one lead is kept.
    store.add_lead("bo@exmaple.com", "Bo", "Smart Tread")
    kept = store.add_lead("bo@example.com", "Bo", "Smart Tread")
    assert store.replace_lead("bo@exmaple.com", "bo@example.com", "Bo", "Smart Tread").id == kept.id
    assert sorted(row["email"] for row in store.leads()) == ["ana@example.com", "bo@example.com"]


def test_retention_deletes_old_conversations_kept_in_postgresql(database_url, tmp_path) -> None:
    from datetime import timedelta

    from treadwise.storage.memory import purge_conversations

    memory = open_checkpointer(tmp_path, database_url)
    assert not memory.degraded
    agent = Agent(Settings(data_dir=tmp_path, database_url=database_url), checkpointer=memory)
    assert agent.run("What are your opening hours on Saturday?", thread_id="old").error is None
    assert purge_conversations(memory, datetime.now(UTC) - timedelta(days=30)) == 0
    assert agent.history("old")
    assert purge_conversations(memory, datetime.now(UTC) + timedelta(days=31)) == 1
    assert agent.history("old") == []


def test_a_row_gone_between_two_statements_is_store_unavailable_not_a_type_error(
        database_url: str) -> None:
    # What another replica deleting the record between our two statements leaves: a one-row
    # statement that returns none. The tool says "try again"; it never subscripts None.
    from psycopg.rows import dict_row

    from treadwise.storage.postgres import _one

    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        assert _one(conn.execute("SELECT 1 AS n"))["n"] == 1
        with pytest.raises(StoreUnavailable, match="changed while it was being saved"):
            _one(conn.execute("SELECT 1 AS n WHERE false"))


def test_a_link_made_on_one_replica_opens_and_is_revoked_on_every_one(database_url,
                                                                      tmp_path) -> None:
    """Two replicas (their own data dirs, one database and one secret): a link made on A opens
    on B for its owner only, and revoking it on B ends it on A."""
    import dataclasses
    import uuid

    from treadwise.web.resume import ThreadLinks

    env = {"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": "ana:pw-ana-1,bob:pw-bob-2",
           "TREADWISE_ADMINS": "ana", "TREADWISE_SECRET_KEY": "shared-by-both-replicas"}
    a, b = (ThreadLinks(dataclasses.replace(Settings.from_env(env), data_dir=tmp_path / name,
                                            database_url=database_url)) for name in "ab")
    thread = uuid.uuid4().hex
    link = a.link(thread, "bob")
    assert b.thread_of(link, "bob") == thread and b.thread_of(link, "ana") == thread
    assert b.thread_of(link, "cy") is None and b.thread_of(link, None) is None
    b.revoke(thread)
    assert a.thread_of(link, "bob") is None and a.link(thread, "bob") is None
    assert not (tmp_path / "a" / "leads.db").exists(), "links went to SQLite, not the database"
