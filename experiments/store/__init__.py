"""Where runs are kept: one typed case record and one run store, a folder or a database."""

from experiments.store.catalog import database_run, list_runs, open_run, shared_run
from experiments.store.folder import holds_rows
from experiments.store.record import COLUMNS, CaseRecord, CaseRow
from experiments.store.run_store import NoResults, RunInfo, RunStore, RunWriter
from experiments.store.transcripts_file import TranscriptError

__all__ = ["COLUMNS", "CaseRecord", "CaseRow", "NoResults", "RunInfo", "RunStore", "RunWriter",
           "TranscriptError", "database_run", "holds_rows", "list_runs", "open_run",
           "shared_run"]
