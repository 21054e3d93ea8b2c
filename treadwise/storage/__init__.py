"""Where TreadWise keeps things: leads and feedback, conversation memory, plots, lead exports.

One setting picks the backend: `TREADWISE_DATABASE_URL` (PostgreSQL, shared by replicas), or
SQLite files under `TREADWISE_DATA_DIR` when it is unset.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treadwise.storage.leads import LeadStore


def open_store(data_dir: Path, database_url: str | None = None) -> LeadStore:
    """The lead and feedback store: PostgreSQL when a URL is given, else SQLite in data_dir.

    A PostgreSQL store that cannot be reached raises StoreUnavailable within a few seconds.
    """
    if database_url:
        from treadwise.storage.postgres import PostgresStore

        return PostgresStore.connect(database_url)
    from treadwise.storage.sqlite import Store

    return Store(data_dir)
