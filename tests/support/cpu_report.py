"""An opt-in pytest plugin: the tests and files that used the most CPU, in core-seconds.

    python -m pytest -p tests.support.cpu_report

`--durations` gives wall-clock seconds, and with four workers on two cores a test's wall time is
mostly other tests' work (the packaging test has read over 120 s there while using about 40
core-seconds). What a test costs the run is its CPU, so that is what to cut first.

Counted for each test, setup and teardown included: the CPU of the process running it and of
the child processes it waited for (an app started and stopped, a CLI run, pip). Not counted:
processes the test did not wait for, such as Chromium under Playwright's driver, a PostgreSQL
server or the math sandbox's long-lived workers. A fixture shared by a module or a session is
charged to the first test that uses it. The report works with and without pytest-xdist.
"""

from __future__ import annotations

import resource
from collections import defaultdict
from collections.abc import Generator

import pytest

TOP = 10
_spent: dict[str, float] = defaultdict(float)
_LAST = pytest.StashKey[float]()  # the CPU counted when the test's last phase was reported


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    # The report of each phase is made as the phase ends: the CPU since the last report is
    # this phase's. pytest-xdist sends the report's own attributes to the controller.
    report = yield
    now = _cpu()
    report.cpu_seconds = now - item.stash.get(_LAST, now)  # type: ignore[attr-defined]
    item.stash[_LAST] = now
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_LAST] = _cpu()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _spent[report.nodeid] += getattr(report, "cpu_seconds", 0.0)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _spent or hasattr(terminalreporter.config, "workerinput"):
        return
    files: dict[str, float] = defaultdict(float)
    for nodeid, seconds in _spent.items():
        files[nodeid.split("::")[0]] += seconds
    write = terminalreporter.write_line
    terminalreporter.section("most CPU (core-seconds: the test's process and the children it "
                             "waited for)")
    write(f"{sum(_spent.values()):.1f} core-seconds in {len(_spent)} tests")
    for title, spent in (("tests", _spent), ("files", files)):
        write(f"{TOP} {title}:")
        for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:TOP]:
            write(f"{seconds:8.1f}  {name}")
