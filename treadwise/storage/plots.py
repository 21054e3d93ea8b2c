"""Plots any replica can show: with a database, each PNG is also kept there by its file name."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from treadwise.storage.leads import StoreUnavailable

# What the math tools name their plots; anything else is not fetched (no path tricks).
PLOT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.png")
log = logging.getLogger(__name__)


class SharedPlots:
    """The plots folder of this process, backed by the database when one is configured.

    A tool's artifact is a path on the replica that drew it; another replica showing the same
    conversation finds the file by name in the database and writes it into its own folder.
    """

    def __init__(self, folder: Path, database_url: str | None = None):
        self.folder = folder
        self.database_url = database_url

    @staticmethod
    def _store(database_url: str) -> Any:
        # PostgresStore, imported only when a database is set.
        from treadwise.storage.postgres import PostgresStore

        return PostgresStore.connect(database_url)

    def keep(self, path: str | Path) -> None:
        """Copy a plot just drawn into the database; a failure only costs other replicas it."""
        path = Path(path)
        if not self.database_url or not PLOT_NAME_RE.fullmatch(path.name):
            return
        try:
            self._store(self.database_url).save_plot(path.name, path.read_bytes())
        except (StoreUnavailable, OSError) as exc:
            log.warning("plot %s kept on this replica only: %s", path.name, exc)

    def find(self, artifact: str | Path) -> Path | None:
        """The local file for a plot artifact, fetched from the database when it is missing."""
        name = Path(artifact).name
        if not PLOT_NAME_RE.fullmatch(name):
            return None
        local = self.folder / name
        if local.is_file() or not self.database_url:
            return local if local.is_file() else None
        try:
            png = self._store(self.database_url).load_plot(name)
        except StoreUnavailable as exc:
            log.warning("cannot fetch plot %s: %s", name, exc)
            return None
        if png is None:
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = local.with_name(f".{name}.{os.getpid()}.part")
        partial.write_bytes(png)
        partial.replace(local)  # atomic: a page rendering at the same time never reads half
        return local
