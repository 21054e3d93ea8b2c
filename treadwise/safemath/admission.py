"""Who runs next in the math pool: fair shares per session, a lane kept free for quick jobs."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from dataclasses import dataclass

from treadwise.safemath.math_errors import MathBusyError, MathWorkerError

# Cheap operations: they may use the slots slow jobs must leave free, so a 2+2 never waits
# behind a crowd of equation solves.
QUICK_OPERATIONS = frozenset({"add", "subtract", "multiply", "divide", "power", "square",
                              "square_root", "calculate"})
DEFAULT_QUEUE_S = 30.0


@dataclass(eq=False)
class Ticket:
    """One job's place: waiting until granted, then holding a slot until it leaves."""

    session: str
    quick: bool
    seq: int
    granted: bool = False


class Admission:
    """Grants job slots: at most `slots` at once, `per_session` per session, and `quick_reserve`
    of them only to quick jobs. Waiting jobs are served quick ones first, then the session with
    the fewest running jobs, then in order of arrival; a job that waits longer than `queue_s`,
    or would make its session's queue longer than `max_waiting_per_session`, is refused as busy.
    """

    def __init__(self, slots: int, *, per_session: int = 2, quick_reserve: int = 2,
                 queue_s: float = DEFAULT_QUEUE_S, max_waiting_per_session: int = 8,
                 max_waiting: int = 256, quick_operations: frozenset[str] = QUICK_OPERATIONS):
        if slots < 1 or per_session < 1 or queue_s < 0:
            raise ValueError("need slots >= 1, per_session >= 1 and queue_s >= 0")
        self.slots = slots
        self.per_session = per_session
        self.quick_reserve = max(0, min(quick_reserve, slots - 1))
        self.queue_s = queue_s
        self.max_waiting_per_session = max_waiting_per_session
        self.max_waiting = max_waiting
        self.quick_operations = quick_operations
        self._cond = threading.Condition()
        self._waiting: list[Ticket] = []
        self._running: Counter[str] = Counter()
        self._running_slow = 0
        self._seq = itertools.count()
        self._closed = False

    def enter(self, op: str, session: str | None) -> Ticket:
        """Wait for a slot for one job of `op`; MathBusyError when the wait would be too long."""
        with self._cond:
            seq = next(self._seq)
            # Callers that name no session (internal code, tests) are each their own session.
            ticket = Ticket(session or f"anonymous-{seq}", op in self.quick_operations, seq)
            self._refuse_if_full(ticket.session)
            self._waiting.append(ticket)
            self._grant()
            deadline = time.monotonic() + self.queue_s
            while not ticket.granted:
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    self._waiting.remove(ticket)
                    if self._closed:
                        raise MathWorkerError("the math engine has been shut down")
                    raise MathBusyError(
                        f"the math engine is busy: this calculation waited {self.queue_s:g} s "
                        f"for a free worker ({self.running()} running, {len(self._waiting)} "
                        "waiting); try again in a minute"
                    )
                self._cond.wait(remaining)
            return ticket

    def leave(self, ticket: Ticket) -> None:
        """Give the ticket's slot back and let the next waiting job in."""
        with self._cond:
            if not ticket.granted:
                return
            ticket.granted = False
            self._running[ticket.session] -= 1
            if not self._running[ticket.session]:
                del self._running[ticket.session]
            if not ticket.quick:
                self._running_slow -= 1
            self._grant()

    def running(self, session: str | None = None) -> int:
        """Jobs holding a slot, in all or in one session."""
        with self._cond:
            return self._running[session] if session else sum(self._running.values())

    def close(self) -> None:
        """Refuse every waiting and future job."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _refuse_if_full(self, session: str) -> None:
        if self._closed:
            raise MathWorkerError("the math engine has been shut down")
        mine = sum(1 for ticket in self._waiting if ticket.session == session)
        if mine >= self.max_waiting_per_session:
            raise MathBusyError(
                f"too many calculations at once in this conversation ({self._running[session]} "
                f"running, {mine} waiting); wait for those answers before asking for more"
            )
        if len(self._waiting) >= self.max_waiting:
            raise MathBusyError(
                f"the math engine is busy ({len(self._waiting)} calculations are waiting); "
                "try again in a minute"
            )

    def _grant(self) -> None:
        """Hand free slots to waiting tickets, best claim first (the lock is held)."""
        total = sum(self._running.values())
        order = sorted(self._waiting, key=lambda t: (not t.quick, self._running[t.session], t.seq))
        granted = False
        for ticket in order:
            if total >= self.slots:
                break
            if self._running[ticket.session] >= self.per_session:
                continue
            if not ticket.quick and self._running_slow >= self.slots - self.quick_reserve:
                continue
            self._waiting.remove(ticket)
            ticket.granted = granted = True
            self._running[ticket.session] += 1
            self._running_slow += not ticket.quick
            total += 1
        if granted:
            self._cond.notify_all()
