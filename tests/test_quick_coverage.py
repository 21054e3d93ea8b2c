"""benchmarks/quick_coverage.py: a `thorough` test that runs code the quick run does not is
named, and only quick tests whose every branch other quick tests run are proposed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import REPO, SERVICE_MARKERS

_spec = importlib.util.spec_from_file_location("quick_coverage",
                                               REPO / "benchmarks" / "quick_coverage.py")
assert _spec is not None and _spec.loader is not None
quick_coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(quick_coverage)

A, B, C, D = (("treadwise/x.py", line, line + 1) for line in range(4))


def record(cpu: float, thorough: bool = False) -> dict:
    """What the script's plugin records of a test that passed."""
    return {"cpu": cpu, "thorough": thorough, "ok": True}


def test_the_script_leaves_out_the_services_the_suite_marks() -> None:
    assert set(quick_coverage.SERVICES) == SERVICE_MARKERS


def test_a_thorough_test_is_named_with_the_branches_no_quick_test_runs() -> None:
    tests = {"tests/web/test_a.py::test_q": record(1.0),
             "tests/web/test_a.py::test_t": record(2.0, thorough=True),
             "tests/web/test_a.py::test_u": record(2.0, thorough=True)}
    ran = {"": {D}, "tests/web/test_a.py::test_q": {A},
           "tests/web/test_a.py::test_t": {A, B, D}, "tests/web/test_a.py::test_u": {A, D}}
    assert quick_coverage.beyond_quick(tests, ran) == {"tests/web/test_a.py::test_t": [B]}


MODULE = '''"""A module."""
import os


class K:
    X = os.sep

    def f(self):
        return 2


def g():
    return [x for x in range(2)]


try:
    import not_a_module_here
except ImportError:
    not_a_module_here = None
'''
# The arcs coverage.py 7 records as the module is imported (entering and leaving its own code
# object and the class's through their first lines, negated; the except clause's line), then
# those of g (with its list comprehension's) and K.f: read from coverage.py importing it and
# calling both.
ON_IMPORT = [(-1, 1), (1, 2), (2, 5), (-5, 5), (5, 6), (6, 8), (8, -5), (5, 12), (12, 16),
             (16, 17), (17, 18), (18, 19), (19, -1)]
G = [(-12, 13), (13, -12), (-13, 13), (13, 13), (13, -13)]
F = [(-8, 9), (9, -8)]


def test_a_module_imported_under_a_thorough_test_counts_when_quick_tests_use_it(tmp_path) -> None:
    """A module runs its import once per process, under the first test that needs it; a run of
    the quick tests alone imports it for the first quick test that runs any of its code."""
    for name in ("m.py", "n.py"):
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / name).write_text(MODULE, encoding="utf-8")
    m = [("pkg/m.py", *arc) for arc in ON_IMPORT]
    n = [("pkg/n.py", *arc) for arc in ON_IMPORT]
    g, f = [("pkg/m.py", *arc) for arc in G], [("pkg/m.py", *arc) for arc in F]
    assert all(quick_coverage.runs_on_import(arc, tmp_path) for arc in m)
    assert not any(quick_coverage.runs_on_import(arc, tmp_path) for arc in g + f)
    tests = {"tests/web/test_a.py::test_t": record(2.0, thorough=True),
             "tests/web/test_a.py::test_q": record(1.0),
             "tests/web/test_a.py::test_u": record(2.0, thorough=True),
             "tests/web/test_a.py::test_v": record(2.0, thorough=True)}
    ran = {"": {D}, "tests/web/test_a.py::test_t": {*m, *g},
           "tests/web/test_a.py::test_q": set(g),
           "tests/web/test_a.py::test_u": set(n),  # no quick test runs any of n.py
           "tests/web/test_a.py::test_v": set(f)}  # nor K.f
    assert quick_coverage.beyond_quick(tests, ran, tmp_path) == {
        "tests/web/test_a.py::test_u": sorted(n), "tests/web/test_a.py::test_v": sorted(f)}


def test_of_two_quick_tests_running_the_same_branches_one_is_proposed_the_costlier() -> None:
    tests = {"tests/web/test_a.py::test_cheap": record(0.5),
             "tests/web/test_a.py::test_dear": record(3.0),
             "tests/web/test_a.py::test_own": record(5.0)}
    ran = {"": {D}, "tests/web/test_a.py::test_cheap": {A, D},
           "tests/web/test_a.py::test_dear": {A}, "tests/web/test_a.py::test_own": {C}}
    # test_own alone runs C, and once test_dear is gone test_cheap alone runs A.
    assert quick_coverage.proposals(tests, ran, 0.4) == [("tests/web/test_a.py::test_dear", 3.0)]


def test_tables_cheap_tests_the_last_of_a_folder_and_the_sandboxs_are_not_proposed() -> None:
    table = [f"tests/agent/test_b.py::test_table[{n}]" for n in range(3)]
    tests = {**{nodeid: record(1.0) for nodeid in table},
             "tests/agent/test_b.py::test_cheap": record(0.1),
             "tests/profile/test_c.py::test_alone": record(2.0),
             "tests/safemath/test_d.py::test_math": record(2.0),
             "tests/safemath/test_d.py::test_more": record(2.0),
             "tests/agent/test_b.py::test_all": record(0.2)}
    ran = {nodeid: {A} for nodeid in tests}
    assert quick_coverage.proposals(tests, ran, 0.4) == []
    # Two cases of one function go together, their costs added.
    pair = {"tests/agent/test_b.py::test_pair[x]": record(0.3),
            "tests/agent/test_b.py::test_pair[y]": record(0.3)}
    assert quick_coverage.proposals({**tests, **pair}, {**ran, **{n: {A} for n in pair}},
                                    0.4) == [("tests/agent/test_b.py::test_pair", 0.6)]


# Runs one file's two tests under coverage.py in a process of its own (about 8 core-seconds):
# a check of a developer's tool, not of the product.
@pytest.mark.slow
def test_the_script_fails_naming_a_thorough_test_whose_code_the_quick_tests_skip() -> None:
    # tests/web/test_files.py: its quick test publishes a new copy; its thorough one races a
    # download against a second publish, which the quick run does elsewhere, not in this file.
    done = subprocess.run([sys.executable, "benchmarks/quick_coverage.py", "--",
                           "tests/web/test_files.py", "-n", "0"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert ("NOT COVERED BY QUICK: tests/web/test_files.py::"
            "test_a_copy_being_downloaded_is_never_cut_short_by_publishing_it_again alone runs"
            in done.stdout), done.stdout[-3000:]
    assert "1 quick tests ran" in done.stdout and "1 thorough tests" in done.stdout
