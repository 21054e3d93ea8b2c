"""Schema changes as migrations, one chain per package, applied to SQLite and PostgreSQL alike.

A chain is a list of functions, each applied once, in order, its name the version; the chain
records what it applied in a table of its own (`<chain>_migrations`). A migration writes its
statements once for both databases with the column types `Schema` names (a function may also
skip a database: the plots table is PostgreSQL's alone, one machine keeps its plots as files).
Never edit or reorder a released migration: add a new one.

This module holds the product's chain (leads, feedback, plots, which conversation asked for
what); the experiment harness keeps its own (experiments/store/harness_schema.py).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from treadwise.storage.leads import StoreUnavailable

MIGRATION_LOCK = 0x7472656164776973  # "treadwis": one key for every TreadWise schema change
LOCK_WAIT_S = 120.0
LOCK_POLL_S = 0.05


class Schema:
    """One database a chain migrates: its statements and the names of its column types."""

    postgres = False
    mark = "?"
    serial = "INTEGER PRIMARY KEY"  # an id the database assigns
    timestamp = "TEXT"  # ISO 8601 text in SQLite
    now = "CURRENT_TIMESTAMP"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: tuple = ()) -> list[Any]:
        cursor = self.conn.execute(sql.replace("?", self.mark), params)
        return list(cursor.fetchall()) if cursor.description else []

    def tables(self) -> set[str]:
        return {row[0] for row in self.execute("SELECT name FROM sqlite_master"
                                               " WHERE type = 'table'")}

    def columns(self, table: str) -> set[str]:
        return {row[1] for row in self.execute(f"PRAGMA table_info({table})")}

    def step(self) -> AbstractContextManager[Any]:
        """One migration's transaction (SQLite's chain runs inside one already)."""
        return nullcontext()


class PostgresSchema(Schema):
    postgres = True
    mark = "%s"
    serial = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
    timestamp = "TIMESTAMPTZ"
    now = "now()"

    def execute(self, sql: str, params: tuple = ()) -> list[Any]:
        # Rows as tuples whatever the connection's row factory (the pool's gives dicts).
        rows = super().execute(sql, params)
        return [tuple(row.values()) if isinstance(row, dict) else row for row in rows]

    def tables(self) -> set[str]:
        return {row[0] for row in self.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema()")}

    def columns(self, table: str) -> set[str]:
        return {row[0] for row in self.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ?", (table,))}

    def step(self) -> AbstractContextManager[Any]:
        return self.conn.transaction()


Migration = Callable[[Schema], None]


class Chain:
    """One package's migrations and its version record.

    `carried_over(db)` names the migrations a database made before the chain kept its record
    already holds (read from its tables, or from the record they were kept in then): they are
    recorded, not run again.
    """

    def __init__(self, name: str, carried_over: Callable[[Schema], set[str]] | None = None):
        self.name = name
        self.record = f"{name}_migrations"
        self.steps: list[Migration] = []
        self.carried_over = carried_over

    def migration(self, step: Migration) -> Migration:
        self.steps.append(step)
        return step

    def names(self) -> list[str]:
        return [step.__name__ for step in self.steps]

    def apply(self, db: Schema) -> list[str]:
        """Bring `db` up to date; the names of the migrations applied by this call. The
        caller keeps other processes out (SQLite's write lock, PostgreSQL's advisory lock)."""
        db.execute(f"CREATE TABLE IF NOT EXISTS {self.record} (name TEXT PRIMARY KEY,"
                   f" applied_at {db.timestamp} NOT NULL DEFAULT {db.now})")
        done = {row[0] for row in db.execute(f"SELECT name FROM {self.record}")}
        if not done and self.carried_over is not None:
            with db.step():
                done = self.carried_over(db) & set(self.names())
                for name in sorted(done):
                    db.execute(f"INSERT INTO {self.record} (name) VALUES (?)", (name,))
        applied = []
        for step in self.steps:
            if step.__name__ in done:
                continue
            with db.step():
                step(db)
                db.execute(f"INSERT INTO {self.record} (name) VALUES (?)", (step.__name__,))
            applied.append(step.__name__)
        return applied

    def migrate_sqlite(self, conn: sqlite3.Connection) -> list[str]:
        """Apply the chain to an SQLite file in one write transaction (an autocommit
        connection): a second process opening the file waits, then finds it done."""
        if self._up_to_date(conn):  # the usual case: no write lock taken to find out
            return []
        conn.execute("BEGIN IMMEDIATE")
        try:
            applied = self.apply(Schema(conn))
        except BaseException:
            conn.rollback()
            raise
        conn.execute("COMMIT")
        return applied

    def _up_to_date(self, conn: sqlite3.Connection) -> bool:
        try:
            done = {row[0] for row in conn.execute(f"SELECT name FROM {self.record}")}
        except sqlite3.OperationalError:  # no record yet
            return False
        return done >= set(self.names())

    def migrate_postgres(self, conn: Any) -> list[str]:
        """Apply the chain on an autocommit connection; replicas take turns under one lock."""
        with advisory_lock(conn, MIGRATION_LOCK):
            return self.apply(PostgresSchema(conn))


@contextmanager
def advisory_lock(conn: Any, key: int, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold a session advisory lock on an autocommit connection with dict rows.

    It polls with pg_try_advisory_lock instead of waiting in pg_advisory_lock: a waiting
    statement keeps a snapshot open, and the CREATE INDEX CONCURRENTLY in LangGraph's own
    migrations would wait for that snapshot while its waiter waits for the lock (a deadlock).
    """
    deadline = time.monotonic() + wait_s
    while not conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (key,)).fetchone()["got"]:
        if time.monotonic() > deadline:
            raise StoreUnavailable(f"the database schema is locked by another process (waited "
                                   f"{wait_s:g} s)")
        time.sleep(LOCK_POLL_S)
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def _product_carried_over(db: Schema) -> set[str]:
    """An SQLite file from before the chain: its tables say which steps it has (PostgreSQL
    kept this chain's record, under the same name, from the start)."""
    tables = db.tables()
    done = {"m001_leads_and_feedback", "m002_plots"} if "leads" in tables else set()
    if "lead_requests" in tables and "thread_key" in db.columns("feedback"):
        done.add("m004_consent")
    return done


PRODUCT = Chain("treadwise", _product_carried_over)
# The names are the versions databases recorded when one chain held every table: m003 and
# m005-m007 (sweeps, live experiments) went to the harness's chain with those tables.
migration = PRODUCT.migration


@migration
def m001_leads_and_feedback(db: Schema) -> None:
    db.execute(f"""
        CREATE TABLE leads (
            id {db.serial},
            created_at {db.timestamp} NOT NULL,
            email TEXT NOT NULL,
            email_key TEXT NOT NULL,
            name TEXT NOT NULL,
            message TEXT NOT NULL,
            message_key TEXT NOT NULL,
            CONSTRAINT leads_once UNIQUE (email_key, message_key)
        )""")
    db.execute(f"""
        CREATE TABLE feedback (
            id {db.serial},
            created_at {db.timestamp} NOT NULL,
            question TEXT NOT NULL
        )""")


@migration
def m002_plots(db: Schema) -> None:
    # Plots live beside the conversation, so any replica can show a reply another one made;
    # one machine (SQLite) keeps them as files.
    if db.postgres:
        db.execute("""
            CREATE TABLE plots (
                name TEXT PRIMARY KEY,
                png BYTEA NOT NULL,
                created_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )""")


@migration
def m004_consent(db: Schema) -> None:
    # Which conversations (hashed thread ids) gave each lead and question, so a visitor who
    # withdraws consent has theirs deleted; created_at indexed for the retention purge.
    db.execute("""
        CREATE TABLE lead_requests (
            lead_id BIGINT NOT NULL REFERENCES leads ON DELETE CASCADE,
            thread_key TEXT NOT NULL,
            PRIMARY KEY (lead_id, thread_key)
        )""")
    db.execute("CREATE INDEX lead_requests_thread ON lead_requests (thread_key)")
    db.execute("ALTER TABLE feedback ADD COLUMN thread_key TEXT")
    db.execute("CREATE INDEX feedback_thread ON feedback (thread_key)")
    db.execute("CREATE INDEX leads_created ON leads (created_at)")
    db.execute("CREATE INDEX feedback_created ON feedback (created_at)")


@migration
def m008_indexes_everywhere(db: Schema) -> None:
    # SQLite files made before this chain lack some of m004's indexes (PostgreSQL has them).
    for name, table, column in (("lead_requests_thread", "lead_requests", "thread_key"),
                                ("feedback_thread", "feedback", "thread_key"),
                                ("leads_created", "leads", "created_at"),
                                ("feedback_created", "feedback", "created_at")):
        db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({column})")


@migration
def m009_conversation_links(db: Schema) -> None:
    # Who a conversation's resume link belongs to, and whether an erasure ("Forget me")
    # revoked it (storage/link_store.py): the thread is a hash, the owner a signed-in user's
    # name or "" without a login.
    db.execute(f"""
        CREATE TABLE conversation_links (
            thread TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            created_at {db.timestamp} NOT NULL,
            revoked_at {db.timestamp}
        )""")


def migrate(conn: Any) -> list[str]:
    """Bring a PostgreSQL database up to date: the product's chain, then LangGraph's
    checkpoint tables, under one advisory lock (`conn` is an autocommit connection); returns
    the names of the migrations applied by this call."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with advisory_lock(conn, MIGRATION_LOCK):
        applied = PRODUCT.apply(PostgresSchema(conn))
        PostgresSaver(conn).setup()
    return applied
