"""Wrong passwords slow the next sign-in down: per client address, and per user name."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

# Free tries before any wait, then a wait doubling from one second with each failure, up to a
# cap; a key with no failure for FORGET_S starts afresh. An address (the guesser's own) may wait
# up to five minutes; a user name, which anyone can type, at most a minute, and never from a
# browser that signed in as that user before (see SignIn): guessing slows down, nobody is
# locked out of their own account by someone else's failures.
FREE_FAILURES = {"address": 5, "user": 10}
FIRST_WAIT_S = 1.0
MAX_WAIT_S = {"address": 300.0, "user": 60.0}
FORGET_S = 15 * 60.0
MAX_KEYS = 50_000


@dataclass
class _Failures:
    count: int
    last: float


class LoginThrottle:
    """Counts failed sign-ins per address and per user; says how long the next try must wait."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS):
        self.clock = clock
        self.max_keys = max_keys
        self._failures: OrderedDict[tuple[str, str], _Failures] = OrderedDict()
        self._lock = threading.Lock()

    def wait_s(self, user: str, address: str, known_browser: bool = False) -> tuple[float, str]:
        """(seconds the next try must wait, "address" or "user": whose failures say so);
        (0, "") when it may go now. A browser that signed in as `user` before skips the
        user's own wait (an attacker's failures must not lock its owner out)."""
        now = self.clock()
        keys = [("address", address)] + ([] if known_browser else [("user", _name(user))])
        with self._lock:
            wait, whose = max((self._wait(key, now), key[0]) for key in keys)
        return (wait, whose) if wait > 0 else (0.0, "")

    def failed(self, user: str, address: str) -> None:
        now = self.clock()
        with self._lock:
            for key in (("address", address), ("user", _name(user))):
                found = self._failures.get(key)
                if found is None or now - found.last >= FORGET_S:
                    found = self._failures[key] = _Failures(0, now)
                found.count += 1
                found.last = now
                self._failures.move_to_end(key)
            while len(self._failures) > self.max_keys or (
                    self._failures and now - next(iter(self._failures.values())).last >= FORGET_S):
                self._failures.popitem(last=False)

    def _wait(self, key: tuple[str, str], now: float) -> float:
        found = self._failures.get(key)
        if found is None or now - found.last >= FORGET_S:
            return 0.0
        over = found.count - FREE_FAILURES[key[0]]
        if over < 0:
            return 0.0
        wait = min(MAX_WAIT_S[key[0]], FIRST_WAIT_S * 2.0 ** over)
        return max(0.0, found.last + wait - now)


def _name(user: str) -> str:
    # Gradio compares names exactly, but "Bob" and "bob " are one target to a guesser.
    return user.strip().casefold()
