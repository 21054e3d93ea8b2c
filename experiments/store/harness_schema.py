"""The harness's tables as one migration chain: sweeps kept in PostgreSQL, live experiments.

The same chain runs on PostgreSQL (beside the product's tables) and on the SQLite file of live
experiments (`live.db`); the sweep tables are PostgreSQL's alone, as a sweep on one machine
keeps its run in a folder. The names are the versions databases recorded when one chain held
every table (treadwise/storage/migrations.py); such a database's harness steps move from that
record to this chain's own.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from treadwise.storage.migrations import Chain, Schema


def _carried_over(db: Schema) -> set[str]:
    if db.postgres:
        if "treadwise_migrations" not in db.tables():
            return set()
        return {row[0] for row in db.execute(
            "DELETE FROM treadwise_migrations WHERE name = ANY(?) RETURNING name",
            (HARNESS.names(),))}
    tables = db.tables()
    return {name for name, table in (("m006_live_experiments", "live_experiments"),
                                     ("m007_live_picks", "live_picks")) if table in tables}


HARNESS = Chain("experiments", _carried_over)
migration = HARNESS.migration
_migrated: set[tuple[int, str]] = set()
_migrated_lock = threading.Lock()


def harness_pool(url: str) -> Any:
    """This process's pool on the database (the product's tables migrated when it opened),
    with the harness's tables migrated too, once per process."""
    from treadwise.storage.postgres import shared_pool

    pool = shared_pool(url)
    with _migrated_lock:
        if (os.getpid(), url) not in _migrated:
            with pool.connection() as conn:
                HARNESS.migrate_postgres(conn)
            _migrated.add((os.getpid(), url))
    return pool


@migration
def m003_shared_sweeps(db: Schema) -> None:
    # A sweep split across machines (experiments/store/database.py): the run and its files,
    # every case with its claim, one result per case, and the workers that joined. The claims
    # and workers went with the queue they served (m005).
    if not db.postgres:
        return
    db.execute("""
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
    db.execute("""
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
    db.execute("CREATE INDEX sweep_cases_open ON sweep_cases (run_id, position)"
               " WHERE state <> 'done'")
    db.execute("""
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
    db.execute("""
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
def m005_sweeps_on_dask(db: Schema) -> None:
    # Dask distributes a sweep's cases now and one client keeps its results: the claims, the
    # workers' heartbeats and the grid definition workers compared against are gone.
    if not db.postgres:
        return
    db.execute("DROP TABLE sweep_workers")
    db.execute("ALTER TABLE sweep_cases DROP COLUMN claimed_by, DROP COLUMN claimed_until,"
               " DROP COLUMN claims")
    db.execute("ALTER TABLE sweep_runs DROP COLUMN definition")


@migration
def m006_live_experiments(db: Schema) -> None:
    # Live A/B experiments on real visitors (experiments/live/store.py): no column holds text
    # a visitor typed or a model wrote; visitors are hashes, turns random ids.
    db.execute(f"""
        CREATE TABLE live_experiments (
            name TEXT PRIMARY KEY,
            definition TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at {db.timestamp} NOT NULL,
            stopped_at {db.timestamp}
        )""")
    db.execute(f"""
        CREATE TABLE live_assignments (
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            visitor TEXT NOT NULL,
            arm TEXT NOT NULL,
            assigned_at {db.timestamp} NOT NULL,
            PRIMARY KEY (experiment, visitor)
        )""")
    db.execute("""
        CREATE TABLE live_threads (
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            thread TEXT NOT NULL,
            visitor TEXT NOT NULL,
            PRIMARY KEY (experiment, thread)
        )""")
    db.execute(f"""
        CREATE TABLE live_events (
            id {db.serial},
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            visitor TEXT NOT NULL,
            arm TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            created_at {db.timestamp} NOT NULL,
            CONSTRAINT live_events_once UNIQUE (experiment, visitor, turn_id, kind)
        )""")


@migration
def m007_live_picks(db: Schema) -> None:
    # Side-by-side picks: the two arms shown and the winner, no text.
    db.execute(f"""
        CREATE TABLE live_picks (
            id {db.serial},
            experiment TEXT NOT NULL REFERENCES live_experiments ON DELETE CASCADE,
            visitor TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            arm_a TEXT NOT NULL,
            arm_b TEXT NOT NULL,
            winner TEXT NOT NULL,
            created_at {db.timestamp} NOT NULL,
            CONSTRAINT live_picks_once UNIQUE (experiment, visitor, turn_id)
        )""")
