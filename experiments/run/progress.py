"""Sweep progress: what callers get after every case, tqdm's bar, and the tally feeding both."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from experiments.run.budget import Budget
from experiments.store.record import CaseRow


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
    """tqdm's bar on stderr: redrawn in place on a terminal; elsewhere (a log file, CI) the
    same line printed at every tenth of the sweep, so the log stays readable."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar: Any = None
        self._started = time.monotonic()
        self._step = -1

    def __call__(self, progress: Progress) -> None:
        from tqdm import tqdm

        if not self.tty:
            step = progress.done * 10 // max(progress.total, 1)
            if step != self._step:
                self._step = step
                line = tqdm.format_meter(progress.done, progress.total,
                                         time.monotonic() - self._started, unit="case",
                                         ascii=True, postfix=progress.summary())
                self.stream.write(line + "\n")
                self.stream.flush()
            return
        if self._bar is None:
            self._bar = tqdm(total=progress.total, initial=progress.done, file=self.stream,
                             unit="case", dynamic_ncols=True, mininterval=0.2)
        self._bar.set_postfix_str(progress.summary(), refresh=False)
        self._bar.update(progress.done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@dataclass
class Tally:
    """Counts finished cases by status for the progress callback and the budget."""

    budget: Budget
    progress: Callable[[Progress], None]
    total: int = 0
    counts: Counter = field(default_factory=Counter)

    def start(self, plan: Any) -> None:
        """Count what an earlier attempt finished (retried errors count once, when redone)."""
        todo = {c.key for c in plan.todo}
        kept = {k: s for k, s in plan.finished.items() if k not in todo}
        self.counts.update(kept.values())
        self.total = len(kept) + len(plan.todo)
        self.report("starting")

    def add(self, row: CaseRow) -> None:
        self.budget.add(row)
        self.counts[row.status] += 1
        self.report(f"{row.scenario} ({row.persona}, T={row.temperature:g})")

    def report(self, label: str) -> None:
        counts = self.counts
        self.progress(Progress(sum(counts.values()), self.total, counts["ok"], counts["failed"],
                               label, counts["error"]))
