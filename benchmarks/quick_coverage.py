"""What the quick run covers: the branches of treadwise/ and experiments/ each test runs, and
which tests the quick run could leave out without leaving out a branch.

    python benchmarks/quick_coverage.py                 # about 4 minutes on 2 cores
    python benchmarks/quick_coverage.py --at-least 0.5  # propose only tests of 0.5 core-s or more

It runs every test that uses no service and is not `slow` (the quick run and the `thorough`
tests) once under coverage.py with branch measurement, each test's branches recorded apart (in
its own process, the app threads it starts and the Python processes it runs). Then:

1. every `thorough` test must run no branch that the quick run's tests (or the imports every run
   makes) do not also run: one that does is named with the branches only it reaches, and the
   script exits 1, so a `thorough` mark never hides code from the inner loop. A module's import
   runs once per process, under the first test that needs it: a `thorough` test that happens to
   import a module the quick tests use is not named for the import's branches;
2. the quick tests of `--at-least` core-seconds or more whose every branch other quick tests
   also run are proposed as `thorough`, most expensive first, each proposal counted as gone
   before the next is judged.

Not proposed: the last quick test of a folder of tests, tests of one function over more than two
cases (a table of phrasings or inputs checks data that branch coverage cannot tell apart), the
math sandbox's tests and the math tools' (their branches run in forked workers that a test's
record does not follow), and the tests of the test tools themselves (tests/support, the
selection, the packaging), whose subject is outside the measured folders. The core-seconds are
measured under coverage, about 1.6 times a plain run's. Needs coverage.py 7.10 or later
(requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MEASURED = ("treadwise", "experiments")
# tests/conftest.py's SERVICE_MARKERS (not imported: it patches the process's sockets and
# environment); tests/test_quick_coverage.py checks the two agree.
SERVICES = ("postgres", "local_model", "cluster", "browser", "install")
NOT_PROPOSED = ("tests/safemath/", "tests/tools/test_math_tools.py", "tests/test_layout.py",
                "tests/test_loopback_client.py", "tests/test_packaging.py",
                "tests/test_selection.py", "tests/test_cpu_report.py")
TEST_VARIABLE = "QUICK_COVERAGE_TEST"
Branch = tuple[str, int, int]  # (file, from line, to line); a negative line: entry or exit
# Python processes the tests start record their branches under the test that started them.
SITECUSTOMIZE = f'''import os
if os.environ.get("{TEST_VARIABLE}"):
    try:
        import coverage
        running = coverage.Coverage.current()
        if running is not None:
            running.switch_context(os.environ["{TEST_VARIABLE}"])
    except Exception:
        pass
'''
PLUGIN = f'''"""Each test's branches under its own context; its CPU (from tests.support.cpu_report,
loaded beside this) and marks to $QUICK_COVERAGE_OUT."""
import json
import os

import coverage
import pytest

_tests = {{}}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    os.environ["{TEST_VARIABLE}"] = item.nodeid
    running = coverage.Coverage.current()
    if running is not None:
        running.switch_context(item.nodeid)


def pytest_runtest_logreport(report):
    test = _tests.setdefault(report.nodeid, {{"cpu": 0.0, "thorough": False, "ok": True}})
    test["cpu"] += getattr(report, "cpu_seconds", 0.0)
    test["thorough"] = test["thorough"] or "thorough" in report.keywords
    test["ok"] = test["ok"] and not report.failed


def pytest_terminal_summary(terminalreporter):
    if not hasattr(terminalreporter.config, "workerinput"):
        with open(os.environ["QUICK_COVERAGE_OUT"], "w", encoding="utf-8") as out:
            json.dump(_tests, out)
'''


def measure(folder: Path, extra: list[str]) -> dict[str, dict]:
    """Run the tests under coverage; each test's CPU and marks (the branches go to data/)."""
    (folder / "site").mkdir()
    (folder / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    (folder / "site" / "quick_coverage_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "data").mkdir()
    (folder / "coverage.rc").write_text(
        "[run]\nbranch = true\nparallel = true\n"
        f"source = {', '.join(str(REPO / name) for name in MEASURED)}\n"
        f"data_file = {folder / 'data' / '.coverage'}\n"
        "patch = subprocess, fork, _exit\n", encoding="utf-8")
    env = {**os.environ, "QUICK_COVERAGE_OUT": str(folder / "tests.json"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(folder / "site"),
                                                       os.environ.get("PYTHONPATH")]))}
    selection = " and ".join(f"not {marker}" for marker in (*SERVICES, "slow"))
    command = [sys.executable, "-m", "coverage", "run", f"--rcfile={folder / 'coverage.rc'}",
               "-m", "pytest", "-m", selection, "-p", "tests.support.cpu_report",
               "-p", "quick_coverage_plugin",
               "-p", "no:cacheprovider", "-q", *extra]
    print("$", " ".join(command[2:]), flush=True)
    done = subprocess.run(command, cwd=REPO, env=env)
    if done.returncode not in (0, 1):
        sys.exit(f"pytest stopped with exit code {done.returncode}")
    tests: dict[str, dict] = json.loads((folder / "tests.json").read_text(encoding="utf-8"))
    failed = [nodeid for nodeid, test in tests.items() if not test["ok"]]
    if failed:
        print(f"{len(failed)} tests failed under coverage; their branches are left out:",
              *failed[:10], sep="\n  ")
    return {nodeid: test for nodeid, test in tests.items() if test["ok"]}


def branches(folder: Path) -> dict[str, set[Branch]]:
    """The branches (file, from line, to line) each test ran; "" holds what ran outside any
    test (the imports of collection, long-lived helpers)."""
    ran: dict[str, set[Branch]] = defaultdict(set)
    for path in (folder / "data").glob(".coverage*"):
        with sqlite3.connect(path) as db:
            try:
                contexts = dict(db.execute("select id, context from context"))
            except sqlite3.DatabaseError:  # a process killed while writing (tests kill some)
                continue
            files = dict(db.execute("select id, path from file"))
            for file_id, context_id, start, end in db.execute(
                    "select file_id, context_id, fromno, tono from arc"):
                ran[contexts[context_id]].add(
                    (str(Path(files[file_id]).relative_to(REPO)), start, end))
    return ran


def function(nodeid: str) -> str:
    return nodeid.split("[")[0]


def folder_of(nodeid: str) -> str:
    return nodeid.split("::")[0].rpartition("/")[0]


@functools.cache
def import_time(path: Path) -> tuple[frozenset[int], frozenset[int]]:
    """The lines a module runs as it is imported (its statements and its classes' bodies, not
    its functions'), and the first lines of the code objects they run in (the module's, 1, and
    each class's and module-level comprehension's): coverage.py's arcs enter and leave a code
    object through its first line, negated. Nothing for a file that is not there."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return frozenset(), frozenset()
    lines: set[int] = set()
    starts = {1}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = [child.lineno, *(d.lineno for d in child.decorator_list)]
                lines.update(first)  # the def or class statement runs; a def's body does not
                if isinstance(child, ast.ClassDef):
                    starts.update(first)
                    visit(child)
                continue
            if isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                starts.add(child.lineno)
            if isinstance(child, (ast.stmt, ast.ExceptHandler)):
                lines.add(child.lineno)
            visit(child)

    visit(tree)
    return frozenset(lines), frozenset(starts)


def runs_on_import(branch: Branch, root: Path = REPO) -> bool:
    lines, starts = import_time(root / branch[0])
    return all(-end in starts if end < 0 else end in lines for end in branch[1:])


def quick_branches(tests: dict[str, dict], ran: dict[str, set[Branch]],
                   root: Path = REPO) -> set[Branch]:
    """The branches the quick tests run, and the imports every run makes. A module runs its
    import once per process, under the test that first needs it: when that test is `thorough`,
    its import still counts as the quick run's if a quick test runs any of its code (which a
    run of the quick tests alone imports for it)."""
    covered = set(ran.get("", set())).union(*(ran.get(nodeid, set())
                                              for nodeid, test in tests.items()
                                              if not test["thorough"]))
    used = {path for path, _, _ in covered}
    return covered | {branch for branches in ran.values() for branch in branches
                      if branch[0] in used and runs_on_import(branch, root)}


def beyond_quick(tests: dict[str, dict], ran: dict[str, set[Branch]],
                 root: Path = REPO) -> dict[str, list[Branch]]:
    """Each `thorough` test that runs a branch no quick test runs (nor the imports every run
    makes, nor those of the modules quick tests use), with those branches."""
    covered = quick_branches(tests, ran, root)
    only = {nodeid: sorted(ran.get(nodeid, set()) - covered)
            for nodeid, test in tests.items() if test["thorough"]}
    return {nodeid: branches for nodeid, branches in only.items() if branches}


def proposals(tests: dict[str, dict], ran: dict[str, set[Branch]],
              at_least: float) -> list[tuple[str, float]]:
    """The quick test functions (a mark covers all of a function's cases) of `at_least`
    core-seconds or more whose every branch other quick tests also run, most expensive first,
    each counted as gone before the next is judged; with their core-seconds."""
    everywhere = ran.get("", set())
    cases: dict[str, list[str]] = defaultdict(list)
    for nodeid, test in tests.items():
        if not test["thorough"]:
            cases[function(nodeid)].append(nodeid)
    times = Counter[Branch]()
    for ids in cases.values():
        for nodeid in ids:
            times.update(ran.get(nodeid, set()) - everywhere)
    cost = {name: sum(tests[nodeid]["cpu"] for nodeid in ids) for name, ids in cases.items()}
    candidates = sorted((name for name, ids in cases.items()
                         if cost[name] >= at_least and len(ids) <= 2
                         and all(ran.get(nodeid) for nodeid in ids)
                         and not name.startswith(NOT_PROPOSED)), key=lambda name: -cost[name])
    # Each folder of tests keeps a quick test (tests/test_selection.py).
    left = Counter(folder_of(name) for name in cases)
    proposed = []
    for name in candidates:
        mine = Counter[Branch]()
        for nodeid in cases[name]:
            mine.update(ran[nodeid] - everywhere)
        if left[folder_of(name)] > 1 and all(times[b] > count for b, count in mine.items()):
            times.subtract(mine)
            left[folder_of(name)] -= 1
            proposed.append((name, cost[name]))
    return proposed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at-least", type=float, default=0.4,
                        help="propose quick tests of at least this many core-seconds (0.4)")
    parser.add_argument("pytest", nargs="*", help="after --: added to the pytest command")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quick-coverage-") as name:
        folder = Path(name)
        tests = measure(folder, args.pytest)
        ran = branches(folder)

    quick = [nodeid for nodeid, test in tests.items() if not test["thorough"]]
    print(f"\n{len(quick)} quick tests ran {len(quick_branches(tests, ran))} branches of "
          f"{', '.join(MEASURED)} "
          f"in {sum(tests[n]['cpu'] for n in quick):.1f} core-s; "
          f"{len(tests) - len(quick)} thorough tests "
          f"{sum(t['cpu'] for t in tests.values() if t['thorough']):.1f} core-s (under coverage)")
    beyond = beyond_quick(tests, ran)
    for nodeid, only in beyond.items():
        shown = ", ".join(f"{path}:{start}->{end}" for path, start, end in only[:5])
        print(f"NOT COVERED BY QUICK: {nodeid} alone runs {len(only)} branches: {shown}")
    proposed = proposals(tests, ran, args.at_least)
    print(f"\n{len(proposed)} quick tests of {args.at_least} core-s or more run no branch that "
          f"the other quick tests do not ({sum(cost for _, cost in proposed):.1f} core-s): "
          "candidates for `thorough`")
    for name, cost in proposed:
        print(f"  {cost:6.2f}  {name}")
    sys.exit(1 if beyond else 0)


if __name__ == "__main__":
    main()
