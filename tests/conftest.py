"""Test setup: no test reaches the network, and every test gets its own data dir."""

from __future__ import annotations

import gc
import json
import os
import socket
import sys
import tempfile
from collections import Counter
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
CLEARED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY",
           "TREADWISE_GEMINI_BASE_URL", "TREADWISE_MODEL", "TREADWISE_AUTH",
           "TREADWISE_MCP_CONFIG", "TREADWISE_PERSONAS_DIR", "ANTHROPIC_API_KEY",
           "TAVILY_API_KEY", "TREADWISE_TAVILY_BASE_URL")

# pytest rewrites the asserts of every test module it imports and keeps the result as bytecode,
# unless PYTHONDONTWRITEBYTECODE is set (as on this project's machines): then every worker redid
# it on every run, about 4 s of CPU a process. The cache goes in __pycache__ (ignored by git).
if sys.dont_write_bytecode:
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
for _name in CLEARED:
    os.environ.pop(_name, None)
PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
DEAD_PROXY = "http://127.0.0.1:9"
# The machine's own proxy settings, for the one test that installs from the package registry.
# pytest-xdist workers inherit the environment this module has already changed (the dead proxy
# below), so the first process to import it leaves the originals in MACHINE_PROXIES for them.
MACHINE_PROXIES = "TREADWISE_TESTS_MACHINE_PROXIES"
if MACHINE_PROXIES not in os.environ:
    os.environ[MACHINE_PROXIES] = json.dumps(
        {name: os.environ[name] for name in PROXY_NAMES if name in os.environ})
REAL_PROXIES: dict[str, str] = json.loads(os.environ[MACHINE_PROXIES])
# Child processes (CLI tests, the app) inherit a dead proxy, so a forgotten real call fails fast.
os.environ.update({"HTTP_PROXY": DEAD_PROXY, "HTTPS_PROXY": DEAD_PROXY,
                   "NO_PROXY": "127.0.0.1,localhost,::1", "GRADIO_ANALYTICS_ENABLED": "False",
                   "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"})
for _name in ("http_proxy", "https_proxy", "no_proxy"):
    os.environ[_name] = os.environ[_name.upper()]


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check(address: object) -> None:
    if isinstance(address, tuple) and address and str(address[0]) not in LOOPBACK:
        raise ConnectionRefusedError(f"tests may not reach the network (tried {address[0]})")


def _connect(self: socket.socket, address: object) -> None:
    _check(address)
    return _real_connect(self, address)


def _connect_ex(self: socket.socket, address: object) -> int:
    _check(address)
    return _real_connect_ex(self, address)


socket.socket.connect = _connect  # type: ignore[method-assign]
socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]

REPO = Path(__file__).resolve().parent.parent
# The system's temporary folder, before the tests point tempfile at pytest's (system_temp below).
SYSTEM_TEMP = tempfile.gettempdir()

# Caches kept between runs live outside the repository, under the user's cache folder; each
# test that fills one passes with it empty (sh .ci/fresh runs the suite with none at all).
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
# Hypothesis keeps its examples and caches in .hypothesis/ under the working directory, the
# repository: tests write only outside it.
set_hypothesis_home_dir(str(CACHE_HOME / "treadwise-hypothesis"))

# The local model's read system blocks (treadwise/models/llama_states.py) are kept between runs
# in the tests' own folder under the cache folder, never your own ~/.cache/treadwise: every
# process of this run and of the next ones (xdist workers, CLI children, apps) loads a block
# one of them read, in milliseconds, as the app does between starts. A state is used only for
# the exact tokens, model file, context size, threads and llama.cpp version that made it, and a
# loaded block replies as a read one (tests/models/test_llama_states.py). A run on an empty cache
# (sh .ci/fresh, a new machine) reads every block once; TREADWISE_TESTS_RUN_STATES names
# another folder (an empty one: a cold run here).
RUN_STATES = "TREADWISE_TESTS_RUN_STATES"
os.environ.setdefault(RUN_STATES, str(CACHE_HOME / "treadwise-test-llama-states"))
os.environ["TREADWISE_LOCAL_STATE_DIR"] = os.environ[RUN_STATES]

# Before any test module imports Gradio, as the app does: its components then load without
# writing type stubs, about 2 s less CPU in each worker (treadwise/web/gradio_stubs.py).
import treadwise.web  # noqa: E402,F401


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test writes under its own TREADWISE_DATA_DIR, never the working directory."""
    path = tmp_path / "data"
    monkeypatch.setenv("TREADWISE_DATA_DIR", str(path))
    return path


@pytest.fixture(scope="session", autouse=True)
def system_temp(tmp_path_factory: pytest.TempPathFactory) -> Generator[Path, None, None]:
    """What a test process puts in the system's temporary folder (tempfile) goes in pytest's
    own, which pytest prunes (the last three runs kept): gradio_client leaves an empty folder
    in the system's temp for every file it downloads, a hundred a run that no one removed."""
    folder = tmp_path_factory.mktemp("system-temp", numbered=False)
    before, tempfile.tempdir = tempfile.tempdir, str(folder)
    yield folder
    tempfile.tempdir = before


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium for the browser tests: missing is a failure saying how to install it,
    never a silent skip."""
    from tests.support.chromium import require_chromium

    try:
        path = require_chromium()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    return path


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where browser tests save their screenshots: pytest's temporary folder, not the repo."""
    return tmp_path_factory.mktemp("screenshots", numbered=False)


@pytest.fixture
def retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds each provider retry asked to wait, recorded instead of slept."""
    from treadwise.models import retries

    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(retries, "sleep", waits.append)
    monkeypatch.setattr(retries, "async_sleep", record)
    return waits


@pytest.fixture(scope="session")
def postgres_cluster():
    """One throw-away PostgreSQL cluster for the whole session, started on first use.

    No PostgreSQL here is a failure saying how to install it, never a silent skip.
    """
    from tests.support.postgres_cluster import start_cluster

    try:
        cluster = start_cluster(temp=SYSTEM_TEMP)  # where `nobody` can reach it
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def local_model() -> str:
    """The bundled SmolLM2 through llama.cpp (loaded once per process by the engine's cache):
    the spec to resolve. Missing is a failure naming what to install, never a silent skip."""
    from treadwise.models.local import model_path

    try:
        import llama_cpp  # noqa: F401

        model_path("smollm2")
    except Exception as exc:  # noqa: BLE001 - any missing piece is the same install hint
        pytest.fail(f"the local model is not installed ({exc}): "
                    "python -m pip install -r requirements-local.txt", pytrace=False)
    return "local:smollm2"


@pytest.fixture(scope="session")
def dask_cluster():
    """Dask on loopback: the launcher of scheduler and worker processes (tests/support)."""
    from tests.support.dask_cluster import LoopbackCluster

    return LoopbackCluster


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new, plain virtual environment for install tests (the python inside it). It holds no
    pip of its own: bootstrapping one (ensurepip) cost 6.5 core-s, and a first run of a fresh
    pip compiles its modules again; the tests run this interpreter's pip into it instead
    (`pip --python`, tests/test_packaging.py), which installs exactly as a pip inside would."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("fresh-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")],
                   check=True, timeout=300)
    return folder / "venv" / "bin" / "python"


@pytest.fixture
def database_url(postgres_cluster):
    """A fresh, empty database on the session's cluster; this process's pools closed after."""
    url = postgres_cluster.database()
    yield url
    from treadwise.storage.postgres import close_pools

    close_pools()


# The fixtures that start a service, and the marker a test using one (directly or through
# another fixture) carries. `-m quick` is every test with none of them and not marked slow or
# thorough (a test whose every branch in the product the quick tests run too, which
# benchmarks/quick_coverage.py checks).
SERVICE_FIXTURES = {"postgres_cluster": "postgres", "local_model": "local_model",
                    "dask_cluster": "cluster", "chromium": "browser", "fresh_venv": "install"}
SERVICE_MARKERS = frozenset(SERVICE_FIXTURES.values())
NOT_QUICK = frozenset({"slow", "thorough"})
# Both stores, the PostgreSQL one marked: a test asking for `database_url` only for that
# parameter (request.getfixturevalue) is then left out of `-m quick` (see the guard below).
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
# The service markers of the test running now, for the guard below.
_RUNNING: set[str] = set()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    _RUNNING.update({mark.name for mark in item.iter_markers()} & SERVICE_MARKERS)
    try:
        return (yield)
    finally:
        _RUNNING.clear()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers per core for `--numprocesses=auto` (pyproject caps it at 4): a good part of
    the suite waits (on the app servers, Chromium, PostgreSQL, llama.cpp's load, subprocesses),
    and a second worker per core runs while the first waits. Measured on 2 cores, the whole
    suite: 601 s with 4 workers against 851 s with 2 (DEVELOPING.md)."""
    return 2 * (os.cpu_count() or 1)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collection leaves each process half a million long-lived objects (the imported
    libraries, the collected tests): frozen, the garbage collector stops walking them on every
    full collection of the run and in the five pytest makes at its end. Objects the tests make
    are collected as before. Measured on 2 cores, the quick run: 172 -> 157 core-seconds."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The same once the tests are done: one full collection, then what survives is frozen.
    After this hook pytest collects five times more (to report exceptions raised in
    finalizers, which this collection reports too) and the interpreter once more as it exits,
    each walking everything the run left alive; frozen, they walk almost nothing."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers from the fixtures each test uses (before `-m` selects by them)."""
    for item in items:
        for name in getattr(item, "fixturenames", ()):
            if name in SERVICE_FIXTURES:
                item.add_marker(SERVICE_FIXTURES[name])
        marked = {mark.name for mark in item.iter_markers()}
        if not marked & (SERVICE_MARKERS | NOT_QUICK):
            item.add_marker("quick")


class FileOrder:
    """The selected tests' files in the order workers get them: files with a slow test first,
    then the files with the most tests, each file's tests kept together and in order.

    The suite is spread over pytest-xdist workers a file at a time (pyproject's addopts); a long
    file started first runs beside the short ones instead of ending the run alone. Ordered after
    `-m` has selected: in the quick run, in collection order, its longest files (the offline
    conversations, the math tools) came last and each ended the run on one worker.
    """

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        slow = {item.path for item in items
                if {mark.name for mark in item.iter_markers()} & (SERVICE_MARKERS | {"slow"})}
        size = Counter(item.path for item in items)
        items.sort(key=lambda item: (item.path not in slow, -size[item.path]))


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(FileOrder(), "treadwise-file-order")


@pytest.fixture(scope="session", autouse=True)
def services_only_through_their_fixtures():
    """A test that starts PostgreSQL, the local model, Dask or Chromium, or asks for one's
    fixture at run time, without carrying its marker (so inside `-m quick`) fails instead of
    slowing the quick run (tests/support/service_guard.py)."""
    from tests.support import service_guard

    with service_guard.guarding(SERVICE_FIXTURES, lambda: set(_RUNNING)):
        yield
