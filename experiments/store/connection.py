"""The runs' PostgreSQL: this process's pool on it, its errors as one line, run names."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any

RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
NO_CLIENT = ("the PostgreSQL client is not installed: python -m pip install -r "
             "requirements-postgres.txt")


class SharedRunError(ValueError):
    """A database run cannot be used: no database, a bad name, no such run."""


def database_url() -> str:
    from treadwise.settings import Settings

    url = Settings.from_env().database_url
    if not url:
        raise SharedRunError(
            "runs in the database need TREADWISE_DATABASE_URL=postgresql://user:password@host/db")
    return url


def connect(url: str) -> Any:
    """This process's pool on the database, the schema migrated."""
    try:
        from treadwise.storage.postgres import describe
    except ImportError:
        raise SharedRunError(NO_CLIENT) from None
    from experiments.store.harness_schema import harness_pool
    from treadwise.storage.leads import StoreUnavailable

    try:
        return harness_pool(url)
    except StoreUnavailable as exc:
        raise SharedRunError(f"cannot use the database {describe(url)}: {exc}") from None


@contextmanager
def database_errors() -> Any:
    """psycopg's errors as one line (a SharedRunError), never a traceback."""
    try:
        from psycopg import Error
        from psycopg_pool import PoolTimeout
    except ImportError:
        raise SharedRunError(NO_CLIENT) from None

    try:
        yield
    except (Error, PoolTimeout) as exc:
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise SharedRunError(f"the runs' database failed: {type(exc).__name__}"
                             + (f": {detail}" if detail else "")) from None


def check_name(run_id: str) -> str:
    if not RUN_NAME.fullmatch(run_id):
        raise SharedRunError(f"{run_id!r} cannot name a run: use 1-80 letters, digits, "
                             "'.', '_' or '-', starting with a letter or digit")
    return run_id
