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
