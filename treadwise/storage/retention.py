"""Retention: leads, questions and conversations older than the configured days are deleted."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treadwise.settings import Settings
    from treadwise.storage.leads import Erased, LeadStore
    from treadwise.storage.memory import ResilientSaver

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Purged:
    """What one retention run deleted."""

    erased: Erased
    conversations: int

    def describe(self) -> str:
        return f"{self.erased.describe()}; {self.conversations} conversation(s)"


def purge(days: float, store: LeadStore, memory: ResilientSaver | None = None,
          now: datetime | None = None) -> Purged:
    """Delete what is older than `days` days: leads and questions from `store`, and the
    conversations in `memory` whose newest message is older."""
    from treadwise.storage.memory import purge_conversations

    cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
    erased = store.purge_before(cutoff)
    conversations = purge_conversations(memory, cutoff) if memory is not None else 0
    return Purged(erased, conversations)


def apply_retention(settings: Settings, memory: ResilientSaver | None = None) -> Purged | None:
    """The retention setting applied once (None when it keeps everything); a store that
    cannot be reached is logged, never raised, so a conversation can still start."""
    from treadwise.storage import open_store
    from treadwise.storage.leads import StoreUnavailable
    from treadwise.storage.memory import ResilientSaver

    if settings.retention_days <= 0:
        return None
    if not isinstance(memory, ResilientSaver):
        memory = None  # a checkpointer of the caller's own: theirs to keep or clear
    errors: tuple[type[BaseException], ...] = (
        StoreUnavailable, OSError, *(memory.errors if memory is not None else ()))
    try:
        done = purge(settings.retention_days, open_store(settings.data_dir,
                                                         settings.database_url), memory)
    except errors as exc:
        log.warning("retention not applied: %s", exc)
        return None
    log.info("retention (%g days) deleted %s", settings.retention_days, done.describe())
    return done
