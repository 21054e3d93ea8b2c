"""`pip install .` into a fresh, plain virtual environment gives the chat app alone (pyproject's
core dependencies are the product's); `pip install .[experiments]` adds the harness."""

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
                                    ".hypothesis", "benchmarks", "docs")
# The app built and its built-ins found from the installed metadata alone (no pyproject.toml
# beside the package), without the harness's packages; prints the page's tab ids.
APP = """
import importlib.util, sys, treadwise
from treadwise.agent.strategies import strategy_names
from treadwise.settings import Settings
from treadwise.tools import TOOLSETS
from treadwise.web.gradio_app import create_app
assert strategy_names() == ["react", "plan-verify", "self-consistency", "think-write"]
assert {"math", "business"} <= set(TOOLSETS.names())
page = str(create_app(Settings.from_env()).get_config_file())
print(treadwise.__file__)
print("tabs:", [t for t in ("chat-tab", "experiments-tab") if t in page])
print("absent:", [m for m in ("seaborn", "scipy", "statsmodels", "dask")
                  if importlib.util.find_spec(m) is None])
import pathlib, treadwise.testing
# The source copy holds tests/ (launchers, loopback servers): none of it is installed, and the
# product's testing package is the public double alone.
shipped = pathlib.Path(treadwise.testing.__file__).parent
print("testing:", sorted(p.name for p in shipped.glob("*.py")))
print("tests importable:", importlib.util.find_spec("tests") is not None)
from treadwise.testing import ScriptedModel
# The app's process loaded Gradio without its stub writer (treadwise/web/gradio_stubs.py).
import gradio.component_meta
print("stubs:", gradio.component_meta.create_or_modify_pyi.__name__)
"""
HARNESS = ("import experiments.cli, experiments.analyse.report, experiments.live.report; "
           "from experiments.define.checks import CHECKS; from experiments.analyse.charts "
           "import registered; assert registered(); print('harness ok')")


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pip run for the venv of `python`: this interpreter's pip, which `--python` starts again
    under the venv's interpreter (pip 22.3+), so it installs into the venv as its own would."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python),
                           "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=1500, env=clean_env())


def clean_env() -> dict[str, str]:
    """This process's environment with the machine's own proxies (not the tests' dead one), and
    without what would let the venv see the repo's sources."""
    dropped = {"PYTHONPATH", "PYTHONHOME", *PROXY_NAMES}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **REAL_PROXIES}


def install(python: Path, target: str, extras: tuple[str, ...] = ()) -> None:
    """`pip install target` from the wheelhouse, filling it from the registry first when it
    lacks something pyproject.toml asks for (an empty cache, a new dependency)."""
    # No byte-compiling of every installed module: the imports compile what they use.
    offline = ("install", "--no-compile", "--no-index", "--find-links", str(WHEELHOUSE),
               target)
    done = pip(python, *offline)
    if done.returncode != 0:
        project = tomllib.loads((REPO / "pyproject.toml").read_text())
        needs = [*project["build-system"]["requires"], *project["project"]["dependencies"],
                 *(need for extra in extras
                   for need in project["project"]["optional-dependencies"][extra])]
        filled = pip(python, "wheel", "--wheel-dir", str(WHEELHOUSE), *needs)
        assert filled.returncode == 0, filled.stderr[-3000:]
        done = pip(python, *offline)
    assert done.returncode == 0, done.stderr[-3000:]


def run(python: Path, code: str, cwd: Path) -> str:
    """Run `code` in the venv, outside the source copy (only installed packages import)."""
    done = subprocess.run([str(python), "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**clean_env(), "TREADWISE_DATA_DIR": str(cwd / "d")})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_pip_install_dot_runs_the_chat_app_alone_and_the_extra_adds_the_harness(
        tmp_path: Path, fresh_venv: Path) -> None:
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info next to it
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    python = fresh_venv
    install(python, str(source))
    alone = run(python, APP, tmp_path)
    assert str(fresh_venv.parent.parent) in alone
    assert "tabs: ['chat-tab']" in alone
    assert "absent: ['seaborn', 'scipy', 'statsmodels', 'dask']" in alone
    assert "testing: ['__init__.py', 'fakes.py']" in alone
    assert "tests importable: False" in alone
    assert "stubs: no_stub" in alone
    site = fresh_venv.parent.parent / "lib"
    launchers = [path for name in ("postgres_cluster.py", "dask_cluster.py", "loopback.py",
                                   "chromium.py", "webapp.py") for path in site.rglob(name)]
    assert launchers == [], launchers

    install(python, f"{source}[experiments]", extras=("experiments",))
    # One process for both checks: each start imports Gradio and the rest afresh.
    both = run(python, f"{HARNESS}\n{APP}", tmp_path)
    assert "harness ok" in both
    assert "tabs: ['chat-tab', 'experiments-tab']" in both


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
