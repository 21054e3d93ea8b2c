"""Live experiments' tables: definitions, one arm per visitor, events and picks, and no text.

An event is (experiment, visitor, arm, turn id, kind, value): a visitor is a hash, a turn id a
random hex id, a value a number; a side-by-side pick is (experiment, visitor, turn id, the two
arms, the winner): nothing a visitor typed or a model wrote is ever stored here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from experiments.store.harness_schema import HARNESS, harness_pool
from treadwise.storage.leads import StoreUnavailable

DB_NAME = "live.db"
BUSY_TIMEOUT_S = 30.0
KINDS = ("turn", "error", "lead", "rating", "score")
EVENT_COLUMNS = ("experiment", "visitor", "arm", "turn_id", "kind", "value", "created_at")
# A visitor's feedback score (1 to 5) is one per visitor: its event's turn id is this.
SCORE_TURN = "visitor"
SCORES = range(1, 6)
# A side-by-side pick's winner: one of the two arms, or neither.
TIE, BOTH_BAD = "tie", "both_bad"
PICK_COLUMNS = ("experiment", "visitor", "turn_id", "arm_a", "arm_b", "winner", "created_at")


class LiveStore:
    """The SQL both backends run; subclasses supply a connection and the parameter mark."""

    mark = "?"

    def __init__(self, clock: Callable[[], datetime] | None = None):
        self._clock = clock or (lambda: datetime.now(UTC))
        self._batch: Callable[[str, tuple], list[dict]] | None = None

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        raise NotImplementedError

    def _run(self, sql: str, params: tuple = ()) -> list[dict]:
        if self._batch is not None:
            return self._batch(sql.replace("?", self.mark), params)
        with self._cursor() as run:
            return run(sql.replace("?", self.mark), params)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many calls in one transaction (an import, a simulation); one thread only."""
        with self._cursor() as run:
            self._batch = run
            try:
                yield
            finally:
                self._batch = None

    def _now(self) -> str:
        return self._clock().isoformat(timespec="seconds")

    def create(self, name: str, definition: dict[str, Any]) -> None:
        """Record a new experiment, running at once; one may run at a time."""
        if self.get(name) is not None:
            raise ValueError(f"there is already a live experiment named {name!r}")
        if (running := self.running()) is not None:
            raise ValueError(f"the live experiment {running['name']!r} is running: stop it first")
        self._run("INSERT INTO live_experiments (name, definition, status, created_at) "
                  "VALUES (?, ?, 'running', ?)", (name, json.dumps(definition), self._now()))

    def stop(self, name: str) -> None:
        if self.get(name) is None:
            raise ValueError(f"there is no live experiment named {name!r}")
        self._run("UPDATE live_experiments SET status = 'stopped', stopped_at = ? "
                  "WHERE name = ? AND status = 'running'", (self._now(), name))

    def get(self, name: str) -> dict[str, Any] | None:
        rows = self._run("SELECT * FROM live_experiments WHERE name = ?", (name,))
        return _experiment(rows[0]) if rows else None

    def running(self) -> dict[str, Any] | None:
        rows = self._run("SELECT * FROM live_experiments WHERE status = 'running'")
        return _experiment(rows[0]) if rows else None

    def experiments(self) -> list[dict[str, Any]]:
        return [_experiment(row) for row in
                self._run("SELECT * FROM live_experiments ORDER BY created_at DESC, name")]

    def assign(self, experiment: str, visitor: str, arm: str) -> str:
        """The visitor's arm: `arm` the first time, whatever was recorded then ever after."""
        self._run("INSERT INTO live_assignments (experiment, visitor, arm, assigned_at) "
                  "VALUES (?, ?, ?, ?) ON CONFLICT (experiment, visitor) DO NOTHING",
                  (experiment, visitor, arm, self._now()))
        rows = self._run("SELECT arm FROM live_assignments WHERE experiment = ? AND visitor = ?",
                         (experiment, visitor))
        return rows[0]["arm"]

    def link_thread(self, experiment: str, thread: str, visitor: str) -> str:
        """The visitor a conversation (a thread hash) belongs to: the first one to use it, so
        a conversation reopened from its link elsewhere stays in its arm."""
        self._run("INSERT INTO live_threads (experiment, thread, visitor) VALUES (?, ?, ?) "
                  "ON CONFLICT (experiment, thread) DO NOTHING", (experiment, thread, visitor))
        rows = self._run("SELECT visitor FROM live_threads WHERE experiment = ? AND thread = ?",
                         (experiment, thread))
        return rows[0]["visitor"]

    def record(self, experiment: str, visitor: str, arm: str, turn_id: str, kind: str,
               value: float = 1.0) -> None:
        """One event; a second of the same kind for the same turn replaces the first (a
        visitor who changes a rating from up to down has one rating, the last)."""
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        self._run("INSERT INTO live_events (experiment, visitor, arm, turn_id, kind, value, "
                  "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (experiment, visitor, "
                  "turn_id, kind) DO UPDATE SET value = excluded.value, "
                  "created_at = excluded.created_at",
                  (experiment, visitor, arm, turn_id, kind, float(value), self._now()))

    def score(self, experiment: str, visitor: str, arm: str, value: int) -> None:
        """The visitor's feedback score, 1 to 5; a second one replaces the first."""
        if value not in SCORES:
            raise ValueError(f"a feedback score is 1 to 5, not {value!r}")
        self.record(experiment, visitor, arm, SCORE_TURN, "score", value)

    def pick(self, experiment: str, visitor: str, turn_id: str, arms: tuple[str, str],
             winner: str) -> None:
        """A side-by-side pick: arms (shown first, shown second) and the winner (one of
        them, TIE or BOTH_BAD); picking again for the same turn replaces the pick."""
        if arms[0] == arms[1] or winner not in (*arms, TIE, BOTH_BAD):
            raise ValueError(f"a pick between {arms[0]} and {arms[1]} cannot be won by "
                             f"{winner!r}")
        self._run("INSERT INTO live_picks (experiment, visitor, turn_id, arm_a, arm_b, winner, "
                  "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (experiment, visitor, "
                  "turn_id) DO UPDATE SET arm_a = excluded.arm_a, arm_b = excluded.arm_b, "
                  "winner = excluded.winner, created_at = excluded.created_at",
                  (experiment, visitor, turn_id, *arms, winner, self._now()))

    def picks(self, experiment: str) -> list[dict[str, Any]]:
        columns = ", ".join(PICK_COLUMNS)
        return self._run(f"SELECT {columns} FROM live_picks WHERE experiment = ? ORDER BY id",
                         (experiment,))

    def unrate(self, experiment: str, visitor: str, turn_id: str) -> None:
        self._run("DELETE FROM live_events WHERE experiment = ? AND visitor = ? AND turn_id = ? "
                  "AND kind = 'rating'", (experiment, visitor, turn_id))

    def events(self, experiment: str) -> list[dict[str, Any]]:
        columns = ", ".join(EVENT_COLUMNS)
        return self._run(f"SELECT {columns} FROM live_events WHERE experiment = ? ORDER BY id",
                         (experiment,))

    def assignments(self, experiment: str) -> list[dict[str, Any]]:
        return self._run("SELECT visitor, arm FROM live_assignments WHERE experiment = ?",
                         (experiment,))


def _experiment(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "definition": json.loads(row["definition"])}


class SqliteLiveStore(LiveStore):
    """Live experiments in `data_dir/live.db`; every call opens, commits and closes."""

    def __init__(self, data_dir: Path, clock: Callable[[], datetime] | None = None):
        super().__init__(clock)
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / DB_NAME
        self._ready = False

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # WAL with NORMAL sync: a power cut may lose the last ratings, never corrupt the file;
        # a rating is not worth a disk flush per click (leads.db keeps FULL).
        db.execute("PRAGMA synchronous = NORMAL")
        return db

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        from treadwise.storage.sqlite import retry_locked

        try:
            if not self._ready:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                retry_locked(self._create)
                self._ready = True
            with closing(self._open()) as db:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield lambda sql, params: [dict(row) for row in db.execute(sql, params)]
                except BaseException:
                    db.rollback()
                    raise
                db.execute("COMMIT")
        except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as exc:
            raise StoreUnavailable(f"the live experiment store is unavailable ({exc})") from exc

    def _create(self) -> None:
        with closing(self._open()) as db:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            HARNESS.migrate_sqlite(db)


class PostgresLiveStore(LiveStore):
    """Live experiments in PostgreSQL, shared by every replica."""

    mark = "%s"

    def __init__(self, pool: Any, clock: Callable[[], datetime] | None = None):
        super().__init__(clock)
        self.pool = pool

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        import psycopg

        from treadwise.storage.postgres import unavailable

        def run(sql: str, params: tuple) -> list[dict]:
            cursor = conn.execute(sql, params)
            return list(cursor.fetchall()) if cursor.description else []

        try:
            with self.pool.connection() as conn, conn.transaction():
                yield run
        except psycopg.Error as exc:
            raise unavailable(exc) from exc


def open_live_store(data_dir: Path, database_url: str | None = None) -> LiveStore:
    """PostgreSQL when a URL is given (the schema migrated on first use), else SQLite."""
    if database_url:
        return PostgresLiveStore(harness_pool(database_url))
    return SqliteLiveStore(data_dir)
