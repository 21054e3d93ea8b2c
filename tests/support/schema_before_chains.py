"""The schema as the code made it before each package kept its own migration chain, frozen
here so tests can make databases "at today's last migration" and open them with newer code:
SQLite's DDL, run on every open of leads.db and live.db, and PostgreSQL's one chain m001-m007
with its record `treadwise_migrations`."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

LEADS_SQLITE = """
CREATE TABLE IF NOT EXISTS leads (
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL,
    name TEXT NOT NULL,
    message TEXT NOT NULL,
    message_key TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS leads_once ON leads (email_key, message_key);
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    question TEXT NOT NULL,
    thread_key TEXT
);
CREATE TABLE IF NOT EXISTS lead_requests (
    lead_id INTEGER NOT NULL,
    thread_key TEXT NOT NULL,
    PRIMARY KEY (lead_id, thread_key)
);
CREATE INDEX IF NOT EXISTS lead_requests_thread ON lead_requests (thread_key);
"""
LIVE_SQLITE = """
CREATE TABLE IF NOT EXISTS live_experiments (
    name TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    stopped_at TEXT
);
CREATE TABLE IF NOT EXISTS live_assignments (
    experiment TEXT NOT NULL,
    visitor TEXT NOT NULL,
    arm TEXT NOT NULL,
    assigned_at TEXT NOT NULL,
    PRIMARY KEY (experiment, visitor)
);
CREATE TABLE IF NOT EXISTS live_threads (
    experiment TEXT NOT NULL,
    thread TEXT NOT NULL,
    visitor TEXT NOT NULL,
    PRIMARY KEY (experiment, thread)
);
CREATE TABLE IF NOT EXISTS live_events (
    id INTEGER PRIMARY KEY,
    experiment TEXT NOT NULL,
    visitor TEXT NOT NULL,
    arm TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    value REAL NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (experiment, visitor, turn_id, kind)
);
CREATE TABLE IF NOT EXISTS live_picks (
    id INTEGER PRIMARY KEY,
    experiment TEXT NOT NULL,
    visitor TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    arm_a TEXT NOT NULL,
    arm_b TEXT NOT NULL,
    winner TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (experiment, visitor, turn_id)
);
"""
# name -> its statements, in the order the one chain applied them.
POSTGRES_CHAIN: list[tuple[str, list[str]]] = [
    ("m001_leads_and_feedback", [
        """CREATE TABLE leads (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL,
    name TEXT NOT NULL,
    message TEXT NOT NULL,
    message_key TEXT NOT NULL,
    CONSTRAINT leads_once UNIQUE (email_key, message_key)
)""",
        """CREATE TABLE feedback (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    question TEXT NOT NULL
)""",
    ]),
    ("m002_plots", [
        """CREATE TABLE plots (
    name TEXT PRIMARY KEY,
    png BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
)""",
    ]),
    ("m003_shared_sweeps", [
        """CREATE TABLE sweep_runs (
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
)""",
        """CREATE TABLE sweep_cases (
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
)""",
        """CREATE INDEX sweep_cases_open ON sweep_cases (run_id, position) WHERE state <> 'done'""",
        """CREATE TABLE sweep_results (
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
)""",
        """CREATE TABLE sweep_workers (
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
)""",
    ]),
    ("m004_consent", [
        """CREATE TABLE lead_requests (
    lead_id BIGINT NOT NULL REFERENCES leads ON DELETE CASCADE,
    thread_key TEXT NOT NULL,
    PRIMARY KEY (lead_id, thread_key)
)""",
        """CREATE INDEX lead_requests_thread ON lead_requests (thread_key)""",
        """ALTER TABLE feedback ADD COLUMN thread_key TEXT""",
        """CREATE INDEX feedback_thread ON feedback (thread_key)""",
        """CREATE INDEX leads_created ON leads (created_at)""",
        """CREATE INDEX feedback_created ON feedback (created_at)""",
    ]),
    ("m005_sweeps_on_dask", [
        """DROP TABLE sweep_workers""",
        """ALTER TABLE sweep_cases DROP COLUMN claimed_by, DROP COLUMN claimed_until,
           DROP COLUMN claims""",
        """ALTER TABLE sweep_runs DROP COLUMN definition""",
    ]),
    ("m006_live_experiments", [
        """CREATE TABLE live_experiments (
    name TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    stopped_at TIMESTAMPTZ
)""",
        """CREATE TABLE live_assignments (
    experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
    visitor TEXT NOT NULL,
    arm TEXT NOT NULL,
    assigned_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (experiment, visitor)
)""",
        """CREATE TABLE live_threads (
    experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
    thread TEXT NOT NULL,
    visitor TEXT NOT NULL,
    PRIMARY KEY (experiment, thread)
)""",
        """CREATE TABLE live_events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
    visitor TEXT NOT NULL,
    arm TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT live_events_once UNIQUE (experiment, visitor, turn_id, kind)
)""",
    ]),
    ("m007_live_picks", [
        """CREATE TABLE live_picks (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
    visitor TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    arm_a TEXT NOT NULL,
    arm_b TEXT NOT NULL,
    winner TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT live_picks_once UNIQUE (experiment, visitor, turn_id)
)""",
    ]),
]


def make_sqlite(data_dir: Path) -> None:
    """leads.db and live.db as the code before the chains left them on first open."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, script in (("leads.db", LEADS_SQLITE), ("live.db", LIVE_SQLITE)):
        with sqlite3.connect(data_dir / name) as db:
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(script)
        db.close()


def make_postgres(conn: Any) -> None:
    """Every table of the one chain, and its record, on an autocommit connection."""
    conn.execute("CREATE TABLE treadwise_migrations (name TEXT PRIMARY KEY,"
                 " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
    for name, statements in POSTGRES_CHAIN:
        with conn.transaction():
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO treadwise_migrations (name) VALUES (%s)", (name,))
