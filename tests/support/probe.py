"""pytest run on a probe file in a process of its own, as the tests of the suite's own plugins
(tests/conftest.py, tests/support/*) check what those plugins do to a run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_probe(folder: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`source` written to folder/test_probe.py and run by pytest there with `args`: the
    repository importable (so `-p tests.conftest` and the like load), no cache written, and
    lines long enough that a failure's message is never cut."""
    (folder / "test_probe.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "test_probe.py"],
        cwd=folder, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "400"})
