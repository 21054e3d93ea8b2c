"""Where a test run's CPU goes by kind of process, and how busy the machine was meanwhile.

    python benchmarks/suite_processes.py                  # the README's whole suite
    python benchmarks/suite_processes.py -- -m browser    # any pytest arguments after --

tests/support/cpu_report.py counts a test's own process and the children it waited for, so
Chromium, PostgreSQL, the math sandbox's workers and whatever else nobody waits for are not in
it; with both cores busy from the first test to the last, they are as much the suite's time as
the tests are. Here pytest runs under a child subreaper (a server that daemonizes stays in this
tree), so the total is exact: every process of the run, reaped. The split by kind comes from
sampling each process a few times a second; a process that lives less than a sample's gap is
in the total only, as "not seen by a sample".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
PR_SET_CHILD_SUBREAPER = 36
SAMPLE_S = 0.25
LEFT_S = 10.0


# (what the command line holds, the kind), first match wins; then Python by its arguments.
# execnet starts pytest-xdist's workers with a one-line bootstrap reading stdin.
_BY_TEXT = (("sys.stdin.readline()))", "pytest worker"),
            ("template_main", "math sandbox (template and workers)"),
            ("distributed", "Dask"), ("dask", "Dask"), (" -m pip", "pip"))
_PYTHON = ((" -m pytest", "pytest (the run's controller, or a run a test starts)"),
           ("app.py", "python app.py"), (" -m treadwise", "treadwise CLI"),
           (" -m experiments", "experiments CLI"))


def kind(cmdline: Sequence[str]) -> str:
    """What a process of a test run is, from its (non-empty) command line."""
    program = Path(cmdline[0]).name
    text = " ".join(cmdline)
    if program.startswith("chromium") or program == "chrome":
        found = [arg.split("=", 1)[1] for arg in cmdline if arg.startswith("--type=")]
        return f"Chromium {found[0] if found else 'browser'}"
    if program == "node" and "playwright" in text:
        return "Playwright driver"
    if program.startswith("postgres") or text.startswith("postgres:") \
            or program in ("initdb", "pg_ctl"):
        return "PostgreSQL"
    words = _BY_TEXT + _PYTHON if program.startswith("python") else _BY_TEXT
    found = [name for word, name in words if word in text]
    if found:
        return found[0]
    return "other Python" if program.startswith("python") else f"other ({program})"


@dataclass
class Spent:
    """Core-seconds of one run of a command and its whole process tree."""

    wall_s: float = 0.0  # until the command ended
    total: float = 0.0  # every process of the tree, what it left behind included
    machine: float = 0.0  # every process of the machine, this tree's or not, over wall_s
    by_kind: dict[str, float] = field(default_factory=dict)
    returncode: int = 0

    @property
    def unseen(self) -> float:
        return max(0.0, self.total - sum(self.by_kind.values()))


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _machine_busy() -> float:
    """Core-seconds the whole machine has spent busy since boot (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _reap_orphans(main: int) -> None:
    """Collect the processes that were reparented here and have ended (not the main child,
    whose exit status its Popen reads)."""
    for child in psutil.Process().children():
        try:
            if child.pid != main and child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            pass  # gone already


def _has_ended(pid: int) -> bool:
    """Whether the child has ended, leaving it unreaped (its /proc entry still readable)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def measure(command: Sequence[str], cwd: Path = REPO) -> Spent:
    """Run `command` to its end and account for the CPU of everything it started."""
    _become_subreaper()
    me = psutil.Process()
    last: dict[tuple[int, float], tuple[str, float]] = {}
    start_busy, start_cpu, started = _machine_busy(), _children_cpu(), time.monotonic()
    process = subprocess.Popen(list(command), cwd=cwd)
    while True:
        # Asked before the look below and without reaping the command, so that look still
        # reads its final CPU (a process reaped between two looks kept only what the earlier
        # one saw: up to SAMPLE_S of its work went to `unseen`).
        ended = _has_ended(process.pid)
        for child in me.children(recursive=True):
            try:
                with child.oneshot():
                    key, cpu = (child.pid, child.create_time()), child.cpu_times()
                    name = last[key][0] if key in last else kind([child.name()])
                    # An ended process not yet reaped has no command line (psutil says it
                    # is a zombie): it keeps the kind it had, or the kind its program's name
                    # gives, and its CPU is final.
                    with contextlib.suppress(psutil.ZombieProcess):
                        if cmdline := child.cmdline():
                            name = kind(cmdline)
            except psutil.Error:
                continue  # ended and reaped between the listing and the read
            last[key] = (name, cpu.user + cpu.system)
        _reap_orphans(process.pid)
        if ended:
            break
        time.sleep(SAMPLE_S)
    process.wait()
    wall_s, machine = time.monotonic() - started, _machine_busy() - start_busy
    # Whatever the run left behind gets a moment to end, then is stopped: its CPU is in the
    # total too.
    _, left = psutil.wait_procs(me.children(recursive=True), timeout=LEFT_S)
    for child in left:
        child.kill()
    psutil.wait_procs(left, timeout=10)
    _reap_orphans(process.pid)
    spent = Spent(wall_s=wall_s, total=_children_cpu() - start_cpu, machine=machine,
                  returncode=process.returncode)
    by_kind: dict[str, float] = defaultdict(float)
    for name, seconds in last.values():
        by_kind[name] += seconds
    spent.by_kind = dict(by_kind)
    return spent


def report(spent: Spent) -> str:
    cores = os.cpu_count() or 1
    lines = [f"wall {spent.wall_s:.1f} s; this run's processes {spent.total:.1f} core-s; "
             f"the machine busy {spent.machine / spent.wall_s:.2f} of {cores} cores on average "
             f"({spent.machine:.1f} core-s)", ""]
    rows = sorted(spent.by_kind.items(), key=lambda row: -row[1])
    rows.append(("not seen by a sample (short-lived processes)", spent.unseen))
    lines += [f"{seconds:9.1f}  {name}" for name, seconds in rows if seconds >= 0.05]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    extra = list(argv[argv.index("--") + 1:]) if "--" in argv else []
    spent = measure([sys.executable, "-m", "pytest", *extra])
    print(report(spent))
    return spent.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
