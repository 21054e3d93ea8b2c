"""`python -m pytest -m quick` selects no test that uses a service, and every test that uses a
service fixture carries its marker, put there by the fixture; what conftest.py does to the run
itself (freezing what it leaves alive) hides nothing pytest reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import NOT_QUICK, REPO, SERVICE_FIXTURES, SERVICE_MARKERS
from tests.support.probe import run_probe

# One collection of the whole suite (about 10 s): not for the quick run itself.
pytestmark = pytest.mark.slow
Selection = dict[str, dict[str, list[str]]]


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every test of the suite, collected with `-m quick` as the quick command does: pytest's
    own marker selection decides which are selected, the rest are reported deselected."""
    target = tmp_path_factory.mktemp("selection") / "selection.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p",
         "tests.support.selection_report", "-p", "no:cacheprovider", "-m", "quick"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "TREADWISE_SELECTION_REPORT": str(target)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(target.read_text())


@pytest.fixture(scope="module")
def everything(collected: dict[str, dict]) -> Selection:
    return collected


@pytest.fixture(scope="module")
def quick(collected: dict[str, dict]) -> Selection:
    return {nodeid: item for nodeid, item in collected.items() if item["selected"]}


def test_every_test_using_a_service_fixture_carries_its_marker_and_quick_selects_none(
        everything: Selection, quick: Selection) -> None:
    for nodeid, item in everything.items():
        for fixture, marker in SERVICE_FIXTURES.items():
            if fixture in item["fixtures"]:
                assert marker in item["markers"], f"{nodeid} uses {fixture} but is not {marker}"
    for nodeid, item in quick.items():
        assert not set(item["fixtures"]) & set(SERVICE_FIXTURES), nodeid
        assert not set(item["markers"]) & (SERVICE_MARKERS | NOT_QUICK), nodeid
    # Not vacuous: each service has tests, and they are all left out of the quick run.
    for marker in SERVICE_MARKERS | NOT_QUICK:
        users = [n for n, item in everything.items() if marker in item["markers"]]
        assert users and not set(users) & set(quick), marker
    assert set(quick) < set(everything)


def test_the_quick_run_still_covers_every_folder_of_tests(quick: Selection) -> None:
    """Each package's tests (tests/agent, tests/models, ... tests/experiments/run) keep some
    tests in the quick run, so the inner loop exercises every module's logic."""
    folders = {path.parent for path in (REPO / "tests").rglob("test_*.py")
               if "support" not in path.parts}
    covered = {(REPO / nodeid.split("::")[0]).parent for nodeid in quick}
    assert folders <= covered, sorted(str(f.relative_to(REPO)) for f in folders - covered)


PROBE = '''
import pytest


@pytest.fixture
def built_on_dask(dask_cluster):
    return dask_cluster


def test_unmarked_asks_at_run_time(request):
    request.getfixturevalue("dask_cluster")


def test_unmarked_asks_for_a_fixture_built_on_one(request):
    request.getfixturevalue("built_on_dask")


def test_unmarked_starts_one_by_hand(tmp_path):
    from tests.support.dask_cluster import LoopbackCluster

    LoopbackCluster(tmp_path).start({"w": {}})


@pytest.mark.parametrize("kind", [pytest.param("dask", marks=pytest.mark.cluster)])
def test_a_marked_parameter_may_ask(kind, request):
    assert request.getfixturevalue("built_on_dask") is not None
'''


def test_a_service_reached_around_the_fixtures_fails_unless_the_test_is_marked(
        tmp_path) -> None:
    """Markers follow the fixtures a test names; asking for one at run time or starting a
    service by hand is checked as the test runs (tests/support/service_guard.py)."""
    done = run_probe(tmp_path, PROBE, "-n", "0", "-p", "tests.conftest", "-W",
                     "ignore::pytest.PytestUnknownMarkWarning", "-rA")
    out = done.stdout
    assert "3 failed, 1 passed" in out, out[-3000:]
    assert "PASSED test_probe.py::test_a_marked_parameter_may_ask[dask]" in out, out[-3000:]
    for name, said in [("test_unmarked_asks_at_run_time", "asks for `dask_cluster`"),
                       ("test_unmarked_asks_for_a_fixture_built_on_one",
                        "asks for `built_on_dask`"),
                       ("test_unmarked_starts_one_by_hand", "starts cluster")]:
        line = next(line for line in out.splitlines() if f"FAILED test_probe.py::{name}" in line)
        assert said in line and "is not marked `cluster`" in line, line
    assert "scheduler" not in out  # refused before any process started


LEFT_FOR_THE_END = '''
import gc


class Loud:
    def __del__(self):
        raise RuntimeError("raised in a finalizer")


def test_leaves_a_cycle():
    gc.disable()  # only the collections at the end of the run can find it
    loud = Loud()
    loud.me = loud
'''


def test_a_finalizer_that_raises_at_the_end_is_still_reported(tmp_path) -> None:
    """conftest.py freezes what the run leaves alive before pytest's closing collections: the
    garbage among it is collected first, so an exception raised as it goes is still reported."""
    done = run_probe(tmp_path, LEFT_FOR_THE_END, "-n", "0", "-p", "tests.conftest", "-W",
                     "ignore::pytest.PytestUnknownMarkWarning")
    assert "1 passed" in done.stdout, done.stdout[-3000:]
    # Reported after the summary, as pytest's last act: on stderr.
    assert "PytestUnraisableExceptionWarning" in done.stderr, done.stderr[-3000:]
    assert "RuntimeError: raised in a finalizer" in done.stderr
