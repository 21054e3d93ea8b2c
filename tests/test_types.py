"""mypy on treadwise/ and experiments/ (config in pyproject.toml): no type errors."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import CACHE_HOME, REPO

# mypy's cache lives outside the repository and is kept between runs (a cold run takes minutes).
CACHE = CACHE_HOME / "treadwise-mypy"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_mypy_finds_no_type_errors() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(CACHE)], cwd=REPO,
                          capture_output=True, text=True, timeout=880)
    assert "error: " not in done.stderr, done.stderr[-3000:]  # mypy itself failed
    errors = [line for line in done.stdout.splitlines() if re.search(r":\d+: error: ", line)]
    assert errors == [], "\n".join(errors)
    assert done.returncode == 0, done.stdout[-3000:]
