"""tests/support/cpu_report.py: `python -m pytest -p tests.support.cpu_report` ranks tests and
files by the CPU they used, under pytest-xdist as the README's command runs."""

from __future__ import annotations

import re

import pytest

from tests.support.probe import run_probe

BURN = 0.4  # CPU seconds each probe burns
PROBE = f'''
import subprocess, sys, time
import pytest

BURN = "import time\\nend = time.process_time() + {BURN}\\nwhile time.process_time() < end: pass"


def test_burns_in_process():
    exec(BURN)


def test_burns_in_a_child_it_waits_for():
    subprocess.run([sys.executable, "-c", BURN], check=True)


def test_sleeps():
    time.sleep({BURN})


@pytest.fixture
def costly():
    exec(BURN)
    yield
    exec(BURN)


def test_with_a_fixture_costly_to_set_up_and_tear_down(costly):
    pass
'''


# A pytest run with two workers of its own (about 10 core-seconds): a check of a developer's
# tool, not of the product, so not for the quick run.
@pytest.mark.slow
def test_tests_and_files_are_ranked_by_the_cpu_they_used(tmp_path) -> None:
    done = run_probe(tmp_path, PROBE, "-n", "2", "-p", "tests.support.cpu_report")
    out = done.stdout
    assert "4 passed" in out, out[-3000:]
    ranked = re.findall(r"^\s+(\d+\.\d)  test_probe\.py::(\w+)$", out, re.M)
    names = [name for _, name in ranked]
    assert len(names) == 4 and names[0] == "test_with_a_fixture_costly_to_set_up_and_tear_down"
    assert names[-1] == "test_sleeps", out
    spent = {name: float(seconds) for seconds, name in ranked}
    # Each phase counted once: a fixture's setup and teardown, nothing twice.
    for name, burnt in [("test_with_a_fixture_costly_to_set_up_and_tear_down", 2 * BURN),
                        ("test_burns_in_process", BURN),
                        ("test_burns_in_a_child_it_waits_for", BURN)]:
        assert burnt - 0.05 <= spent[name] <= burnt + 0.3, (name, out)
    assert spent["test_sleeps"] <= 0.2  # waiting is no CPU
    total = re.search(r"^(\d+\.\d) core-seconds in 4 tests$", out, re.M)
    assert total is not None, out
    assert re.search(rf"^\s+{total.group(1)}  test_probe\.py$", out, re.M), out
