"""Schema migrations, one chain per package on SQLite and PostgreSQL alike: databases made by the
code before the chains open with every row kept and nothing applied twice, and a fresh database
has the same tables and columns on both."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from experiments.live.store import SqliteLiveStore, open_live_store
from experiments.store.harness_schema import HARNESS
from tests.support.schema_before_chains import make_postgres, make_sqlite
from treadwise.storage.leads import validate_lead
from treadwise.storage.migrations import PRODUCT
from treadwise.storage.postgres import PostgresStore, connection_kwargs
from treadwise.storage.sqlite import Store

KEYS = validate_lead("ana@example.com", "Ana", "Fleet quote").keys  # as the code stores them


def sqlite_columns(path: Path) -> dict[str, list[str]]:
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in tables}


def sqlite_indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'"
                                         " AND name NOT LIKE 'sqlite_autoindex%'")}


def pg_rows(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def pg_columns(url: str) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in pg_rows(url, "SELECT table_name, column_name, data_type FROM "
                                       "information_schema.columns WHERE table_schema = "
                                       "'public' ORDER BY table_name, ordinal_position"):
        found.setdefault(table, []).append((column, kind))
    return found


def test_a_sqlite_data_dir_from_before_the_chains_keeps_its_rows(tmp_path: Path) -> None:
    old = tmp_path / "old"
    make_sqlite(old)
    with sqlite3.connect(old / "leads.db") as db:
        db.execute("INSERT INTO leads (created_at, email, email_key, name, message, message_key)"
                   " VALUES ('2026-01-02T03:04:05+00:00', 'ana@example.com', ?, 'Ana',"
                   " 'Fleet quote', ?)", KEYS)
        db.execute("INSERT INTO lead_requests VALUES (1, 'thread-hash')")
    db.close()
    with sqlite3.connect(old / "live.db") as db:
        db.execute("INSERT INTO live_experiments (name, definition, status, created_at) VALUES "
                   "('tone', '{\"name\": \"tone\"}', 'running', '2026-01-02T03:04:05+00:00')")
    db.close()

    store = Store(old)
    assert [row["email"] for row in store.leads()] == ["ana@example.com"]
    assert store.add_lead("ana@example.com", "Ana", "Fleet quote").duplicate
    assert store.add_lead("bo@example.com", "Bo", "Smart Tread").stored
    live = SqliteLiveStore(old)
    assert live.running()["name"] == "tone"
    live.pick("tone", "v1", "t1", ("a", "b"), "a")
    assert len(live.picks("tone")) == 1

    fresh = tmp_path / "fresh"
    Store(fresh).lead_count()
    SqliteLiveStore(fresh).running()
    for name in ("leads.db", "live.db"):
        assert sqlite_columns(old / name) == sqlite_columns(fresh / name), name
    assert sqlite_indexes(old / "leads.db") - {"leads_once"} == sqlite_indexes(fresh / "leads.db")
    with sqlite3.connect(old / "leads.db") as db:
        assert sorted(r[0] for r in db.execute("SELECT name FROM treadwise_migrations")) \
            == sorted(PRODUCT.names())
    with sqlite3.connect(old / "live.db") as db:
        assert sorted(r[0] for r in db.execute("SELECT name FROM experiments_migrations")) \
            == sorted(HARNESS.names())


def test_a_postgresql_database_from_before_the_chains_keeps_its_rows(
        database_url: str, postgres_cluster) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        make_postgres(conn)
        conn.execute("INSERT INTO leads (created_at, email, email_key, name, message,"
                     " message_key) VALUES (now(), 'ana@example.com', %s, 'Ana', 'Fleet quote',"
                     " %s)", KEYS)
        conn.execute("INSERT INTO live_experiments (name, definition, status, created_at)"
                     " VALUES ('tone', '{\"name\": \"tone\"}', 'running', now())")

    store = PostgresStore.connect(database_url)
    assert [row["email"] for row in store.leads()] == ["ana@example.com"]
    assert store.add_lead("ana@example.com", "Ana", "Fleet quote").duplicate
    assert store.add_lead("bo@example.com", "Bo", "Smart Tread").stored
    live = open_live_store(Path("unused"), database_url)
    assert live.running()["name"] == "tone"
    live.record("tone", "v1", "a", "t1", "turn")
    assert sorted(pg_rows(database_url, "SELECT name FROM treadwise_migrations")) == sorted(
        (name,) for name in PRODUCT.names())
    assert sorted(pg_rows(database_url, "SELECT name FROM experiments_migrations")) == sorted(
        (name,) for name in HARNESS.names())

    fresh = postgres_cluster.database()
    PostgresStore.connect(fresh).lead_count()
    open_live_store(Path("unused"), fresh).running()
    assert pg_columns(database_url) == pg_columns(fresh)
    indexes = "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
    assert pg_rows(database_url, indexes) == pg_rows(fresh, indexes)


def test_the_same_tables_and_columns_on_sqlite_and_postgresql(
        tmp_path: Path, database_url: str) -> None:
    Store(tmp_path).lead_count()
    SqliteLiveStore(tmp_path).running()
    open_live_store(tmp_path, database_url).running()
    on_pg = {table: [column for column, _ in columns]
             for table, columns in pg_columns(database_url).items()}
    for name in ("leads.db", "live.db"):
        for table, columns in sqlite_columns(tmp_path / name).items():
            assert on_pg.get(table) == columns, table


def test_a_chain_applies_each_migration_once(tmp_path: Path, database_url: str) -> None:
    with sqlite3.connect(tmp_path / "x.db", isolation_level=None) as db:
        assert PRODUCT.migrate_sqlite(db) == PRODUCT.names()
        assert PRODUCT.migrate_sqlite(db) == []
    db.close()
    with psycopg.connect(database_url, **connection_kwargs()) as conn:
        assert HARNESS.migrate_postgres(conn) == HARNESS.names()
        assert HARNESS.migrate_postgres(conn) == []
    with pytest.raises(psycopg.errors.UndefinedTable):
        pg_rows(database_url, "SELECT * FROM leads")  # the harness's chain made none of these
