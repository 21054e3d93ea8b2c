"""`pip install .` into a fresh, plain virtual environment gives importable treadwise and
experiments: pyproject.toml declares every runtime dependency."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import CACHE_HOME, DEAD_PROXY, PROXY_NAMES, REAL_PROXIES, REPO

# Wheels of the runtime dependencies, kept between runs (outside the repository) so the install
# is offline and quick after the first run; refilled from the package registry when
# pyproject.toml asks for something it does not hold.
WHEELHOUSE = CACHE_HOME / "treadwise-test-wheelhouse"
NOT_SOURCE = shutil.ignore_patterns(".git", "results", "data", "build", "*.egg-info",
                                    "__pycache__", ".venv", "venv", "test-output", ".*_cache",
                                    ".hypothesis", "benchmarks", "docs", "tests")
IMPORTS = ("import treadwise, experiments, treadwise.agent, treadwise.web.gradio_app, "
           "treadwise.tools.math, experiments.cli, experiments.analyse.report; "
           "print(treadwise.__file__)")


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=1500, env=clean_env())


def clean_env() -> dict[str, str]:
    """This process's environment with the machine's own proxies (not the tests' dead one), and
    without what would let the venv see the repo's sources."""
    dropped = {"PYTHONPATH", "PYTHONHOME", *PROXY_NAMES}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **REAL_PROXIES}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_pip_install_dot_in_a_fresh_venv_then_both_packages_import(tmp_path: Path,
                                                                   fresh_venv: Path) -> None:
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info next to it
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    python = fresh_venv
    # No byte-compiling of every installed module: the import below compiles what it uses.
    offline = ("install", "--no-compile", "--no-index", "--find-links", str(WHEELHOUSE),
               str(source))
    done = pip(python, *offline)
    if done.returncode != 0:
        project = tomllib.loads((REPO / "pyproject.toml").read_text())
        needs = [*project["build-system"]["requires"], *project["project"]["dependencies"]]
        filled = pip(python, "wheel", "--wheel-dir", str(WHEELHOUSE), *needs)
        assert filled.returncode == 0, filled.stderr[-3000:]
        done = pip(python, *offline)
    assert done.returncode == 0, done.stderr[-3000:]
    # Run outside the source copy, so the import can only find the installed packages.
    imported = subprocess.run([str(python), "-c", IMPORTS], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env=clean_env())
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert str(fresh_venv.parent.parent) in imported.stdout


def test_the_registry_install_never_goes_through_the_tests_dead_proxy() -> None:
    """In this process (a pytest-xdist worker under the README's command) the environment pip
    gets keeps the machine's own proxies, never the dead one the tests set for everything else."""
    assert DEAD_PROXY in os.environ["HTTPS_PROXY"]  # the guard is on in this process
    assert not [name for name, value in clean_env().items() if DEAD_PROXY in value]


def test_a_worker_started_after_the_guard_still_finds_the_machine_proxies(tmp_path: Path) -> None:
    """A process that inherits the guarded environment (as pytest-xdist's workers do) reads the
    machine's proxies the first process saw, not the dead proxy it inherited."""
    machine = {"HTTPS_PROXY": "http://proxy.example:3128"}
    inherited = {**os.environ, "HTTPS_PROXY": DEAD_PROXY, "HTTP_PROXY": DEAD_PROXY,
                 "TREADWISE_TESTS_MACHINE_PROXIES": json.dumps(machine)}
    probe = "import json, tests.conftest as c; print(json.dumps(c.REAL_PROXIES))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=inherited,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == machine
