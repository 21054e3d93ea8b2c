"""Sweep progress: the record callers receive after every case, and tqdm's bar for a terminal."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass(frozen=True)
class Progress:
    """Cases finished so far (including those of an earlier, resumed attempt)."""

    done: int
    total: int
    succeeded: int
    failed: int
    label: str = ""
    errors: int = 0

    @property
    def success_rate(self) -> float | None:
        """Passed among the cases that ran to a verdict; errored cases say nothing."""
        judged = self.succeeded + self.failed
        return self.succeeded / judged if judged else None

    def summary(self) -> str:
        rate = f"{self.success_rate:.1%}" if self.success_rate is not None else "-"
        return (f"ok {self.succeeded} failed {self.failed} errors {self.errors} "
                f"success {rate}")


class TerminalBar:
    """tqdm's bar on stderr: a redrawn line on a terminal, a line every tenth elsewhere."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self._bar: Any = None

    def __call__(self, progress: Progress) -> None:
        from tqdm import tqdm

        if self._bar is None:
            tty = bool(getattr(self.stream, "isatty", lambda: False)())
            self._bar = tqdm(total=progress.total, initial=progress.done, file=self.stream,
                             unit="case", dynamic_ncols=True, mininterval=0.2 if tty else 0,
                             miniters=1 if tty else max(1, progress.total // 10),
                             ascii=not tty)
        self._bar.set_postfix_str(progress.summary(), refresh=False)
        self._bar.update(progress.done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
