"""PostgreSQL schema: a versioned list of migrations, applied on start under an advisory lock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from treadwise.storage.leads import StoreUnavailable

# Applied in order, each once, in its own transaction; the function's name is its version.
# Never edit or reorder a released migration: add a new one.
MIGRATIONS: list = []
migration = MIGRATIONS.append

MIGRATION_LOCK = 0x7472656164776973  # "treadwis": one key for every TreadWise schema change
LOCK_WAIT_S = 120.0
LOCK_POLL_S = 0.05


@migration
def m001_leads_and_feedback(conn: Any) -> None:
    conn.execute("""
        CREATE TABLE leads (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            created_at TIMESTAMPTZ NOT NULL,
            email TEXT NOT NULL,
            email_key TEXT NOT NULL,
            name TEXT NOT NULL,
            message TEXT NOT NULL,
            message_key TEXT NOT NULL,
            CONSTRAINT leads_once UNIQUE (email_key, message_key)
        )""")
    conn.execute("""
        CREATE TABLE feedback (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            created_at TIMESTAMPTZ NOT NULL,
            question TEXT NOT NULL
        )""")


@migration
def m002_plots(conn: Any) -> None:
    # Plots live beside the conversation, so any replica can show a reply another one made.
    conn.execute("""
        CREATE TABLE plots (
            name TEXT PRIMARY KEY,
            png BYTEA NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""")


@migration
def m003_shared_sweeps(conn: Any) -> None:
    # A sweep split across machines (experiments/store/database.py): the run and its files,
    # every case with its claim, one result per case, and the workers that joined. The claims
    # and workers went with the queue they served (m004).
    conn.execute("""
        CREATE TABLE sweep_runs (
            run_id TEXT PRIMARY KEY,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            grid_name TEXT NOT NULL,
            definition JSONB NOT NULL,
            grid_yaml TEXT NOT NULL,
            scenarios_yaml TEXT NOT NULL,
            prices_yaml TEXT NOT NULL,
            meta JSONB NOT NULL,
            status TEXT NOT NULL DEFAULT 'running',
            budget_stop TEXT,
            finished_at TIMESTAMPTZ
        )""")
    conn.execute("""
        CREATE TABLE sweep_cases (
            run_id TEXT NOT NULL REFERENCES sweep_runs ON DELETE CASCADE,
            case_key TEXT NOT NULL,
            position INTEGER NOT NULL,
            model TEXT NOT NULL,
            strategy TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'todo' CHECK (state IN ('todo', 'claimed', 'done')),
            claimed_by TEXT,
            claimed_until TIMESTAMPTZ,
            claims INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, case_key)
        )""")
    conn.execute("CREATE INDEX sweep_cases_open ON sweep_cases (run_id, position)"
                 " WHERE state <> 'done'")
    conn.execute("""
        CREATE TABLE sweep_results (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            run_id TEXT NOT NULL REFERENCES sweep_runs ON DELETE CASCADE,
            case_key TEXT NOT NULL,
            status TEXT NOT NULL,
            model_calls INTEGER NOT NULL,
            cost_usd DOUBLE PRECISION NOT NULL,
            worker TEXT NOT NULL,
            finished_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            row_json TEXT NOT NULL,
            transcript TEXT NOT NULL,
            CONSTRAINT sweep_results_once PRIMARY KEY (run_id, case_key)
        )""")
    conn.execute("""
        CREATE TABLE sweep_workers (
            run_id TEXT NOT NULL REFERENCES sweep_runs ON DELETE CASCADE,
            worker TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            claim_s DOUBLE PRECISION NOT NULL,
            started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            last_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
            finished_at TIMESTAMPTZ,
            status TEXT NOT NULL DEFAULT 'running',
            PRIMARY KEY (run_id, worker)
        )""")


@migration
def m004_consent(conn: Any) -> None:
    # Which conversations (hashed thread ids) gave each lead and question, so a visitor who
    # withdraws consent has theirs deleted; created_at indexed for the retention purge.
    conn.execute("""
        CREATE TABLE lead_requests (
            lead_id BIGINT NOT NULL REFERENCES leads ON DELETE CASCADE,
            thread_key TEXT NOT NULL,
            PRIMARY KEY (lead_id, thread_key)
        )""")
    conn.execute("CREATE INDEX lead_requests_thread ON lead_requests (thread_key)")
    conn.execute("ALTER TABLE feedback ADD COLUMN thread_key TEXT")
    conn.execute("CREATE INDEX feedback_thread ON feedback (thread_key)")
    conn.execute("CREATE INDEX leads_created ON leads (created_at)")
    conn.execute("CREATE INDEX feedback_created ON feedback (created_at)")


@migration
def m005_sweeps_on_dask(conn: Any) -> None:
    # Dask distributes a sweep's cases now and one client keeps its results: the claims, the
    # workers' heartbeats and the grid definition workers compared against are gone.
    conn.execute("DROP TABLE sweep_workers")
    conn.execute("ALTER TABLE sweep_cases DROP COLUMN claimed_by, DROP COLUMN claimed_until,"
                 " DROP COLUMN claims")
    conn.execute("ALTER TABLE sweep_runs DROP COLUMN definition")


@migration
def m006_live_experiments(conn: Any) -> None:
    # Live A/B experiments on real visitors (storage/live_store.py): no column holds text a
    # visitor typed or a model wrote; visitors are hashes, turns random ids.
    conn.execute("""
        CREATE TABLE live_experiments (
            name TEXT PRIMARY KEY,
            definition TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            stopped_at TIMESTAMPTZ
        )""")
    conn.execute("""
        CREATE TABLE live_assignments (
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            visitor TEXT NOT NULL,
            arm TEXT NOT NULL,
            assigned_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (experiment, visitor)
        )""")
    conn.execute("""
        CREATE TABLE live_threads (
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            thread TEXT NOT NULL,
            visitor TEXT NOT NULL,
            PRIMARY KEY (experiment, thread)
        )""")
    conn.execute("""
        CREATE TABLE live_events (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            visitor TEXT NOT NULL,
            arm TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            CONSTRAINT live_events_once UNIQUE (experiment, visitor, turn_id, kind)
        )""")


@migration
def m007_live_picks(conn: Any) -> None:
    # Side-by-side picks (storage/live_store.py): the two arms shown and the winner, no text.
    conn.execute("""
        CREATE TABLE live_picks (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            visitor TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            arm_a TEXT NOT NULL,
            arm_b TEXT NOT NULL,
            winner TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            CONSTRAINT live_picks_once UNIQUE (experiment, visitor, turn_id)
        )""")


@migration
def m008_conversation_links(conn: Any) -> None:
    # Who a conversation's resume link belongs to, and whether "Forget me" revoked it
    # (storage/link_store.py): the thread is a hash, the owner a signed-in user's name or "".
    conn.execute("""
        CREATE TABLE conversation_links (
            thread TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            revoked_at TIMESTAMPTZ
        )""")


@contextmanager
def advisory_lock(conn: Any, key: int, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold a session advisory lock on an autocommit connection.

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


def migrate(conn: Any) -> list[str]:
    """Bring the schema up to date: ours, then LangGraph's checkpoint tables.

    `conn` is an autocommit connection with dict rows. Replicas starting together take turns
    under one advisory lock; returns the names of the migrations applied by this call.
    """
    from langgraph.checkpoint.postgres import PostgresSaver

    with advisory_lock(conn, MIGRATION_LOCK):
        conn.execute("""
            CREATE TABLE IF NOT EXISTS treadwise_migrations (
                name TEXT PRIMARY KEY,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )""")
        done = {row["name"] for row in conn.execute("SELECT name FROM treadwise_migrations")}
        applied = []
        for step in MIGRATIONS:
            if step.__name__ in done:
                continue
            with conn.transaction():
                step(conn)
                conn.execute("INSERT INTO treadwise_migrations (name) VALUES (%s)",
                             (step.__name__,))
            applied.append(step.__name__)
        PostgresSaver(conn).setup()
    return applied
