"""Sweep progress: the Progress record callers receive and a plain-text bar for stderr."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TextIO

BAR_WIDTH = 24


@dataclass(frozen=True)
class Progress:
    """Cases finished so far (including those of an earlier, resumed attempt)."""

    done: int
    total: int
    succeeded: int
    failed: int
    label: str = ""

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.done if self.done else None

    def line(self, elapsed_s: float | None = None) -> str:
        filled = round(BAR_WIDTH * self.done / self.total) if self.total else BAR_WIDTH
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        rate = f"{self.success_rate:.1%}" if self.success_rate is not None else "-"
        text = (f"[{bar}] {self.done}/{self.total} ok {self.succeeded} failed {self.failed} "
                f"success {rate}")
        if elapsed_s is not None:
            text += f" {elapsed_s:.0f}s"
        return f"{text} {self.label}".rstrip()


class ProgressBar:
    """Redraws one line on a terminal; elsewhere prints a line every tenth of the sweep."""

    def __init__(self, stream: TextIO | None = None, *, min_interval_s: float = 0.2):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.min_interval_s = min_interval_s
        self.started = time.perf_counter()
        self._last_draw = 0.0
        self._last_step = -1
        self._open_line = False

    def __call__(self, progress: Progress) -> None:
        now = time.perf_counter()
        finished = progress.done >= progress.total
        line = progress.line(now - self.started)
        if self.tty:
            if finished or now - self._last_draw >= self.min_interval_s:
                self.stream.write("\r" + line + ("\n" if finished else ""))
                self.stream.flush()
                self._last_draw = now
                self._open_line = not finished
            return
        step = progress.done * 10 // max(progress.total, 1)
        if step != self._last_step or finished:
            self._last_step = step
            self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        """End a terminal line left open by a sweep that stopped early."""
        if self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False
