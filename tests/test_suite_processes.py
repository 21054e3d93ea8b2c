"""benchmarks/suite_processes.py: each process of a test run is named for what it is, and the
total holds the CPU of processes nobody waited for (an orphan that daemonized)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from tests.conftest import REPO

SCRIPT = REPO / "benchmarks" / "suite_processes.py"
_spec = importlib.util.spec_from_file_location("suite_processes", SCRIPT)
assert _spec is not None and _spec.loader is not None
suite_processes = importlib.util.module_from_spec(_spec)
sys.modules["suite_processes"] = suite_processes  # its dataclass looks its module up there
_spec.loader.exec_module(suite_processes)


def kind(*cmdline: str) -> str:
    return suite_processes.kind(cmdline)


def test_each_kind_of_process_a_run_starts_is_named() -> None:
    python = sys.executable
    assert kind("/usr/lib/chromium/chromium", "--type=renderer", "--no-sandbox") == \
        "Chromium renderer"
    assert kind("/usr/lib/chromium/chromium", "--headless", "--no-sandbox") == "Chromium browser"
    assert kind("postgres: checkpointer ") == "PostgreSQL"
    assert kind("/usr/lib/postgresql/15/bin/postgres", "-D", "/tmp/x") == "PostgreSQL"
    assert kind(python, "-u", "-c", "import sys;exec(eval(sys.stdin.readline()))") == \
        "pytest worker"
    assert kind(python, "-c", "from treadwise.safemath.worker import template_main") == \
        "math sandbox (template and workers)"
    assert kind(python, "/repo/app.py") == "python app.py"
    assert kind(python, "-m", "treadwise", "chat", "hi") == "treadwise CLI"
    assert kind(python, "-m", "pip", "install", ".") == "pip"
    assert kind("/bin/sh", "-c", "true") == "other (sh)"
    assert kind(python, "-c", "print(1)") == "other Python"


# measure() makes its process a subreaper for good, so it runs in a process of its own. The
# command burns CPU, and starts a process that forks and ends at once, leaving its child to
# burn CPU too (as a daemonizing server does) after the command has ended: nobody but the
# subreaper waits for that one.
BURN = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
ORPHAN = f"import os\nif os.fork() == 0:\n    exec({BURN!r})\nos._exit(0)\n"
MEASURE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from suite_processes import measure
spent = measure([sys.executable, "-c", sys.argv[2]])
print(json.dumps({"total": spent.total, "by_kind": spent.by_kind, "code": spent.returncode}))
"""


def test_the_total_holds_an_orphan_that_outlived_its_parent() -> None:
    command = f"import subprocess, sys\n{BURN}subprocess.run([sys.executable, '-c', {ORPHAN!r}])"
    done = subprocess.run([sys.executable, "-c", MEASURE, str(SCRIPT.parent), command],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    spent = json.loads(done.stdout.strip().splitlines()[-1])
    assert spent["code"] == 0
    # The command's own 0.4 s and the orphan's 0.4 s: without the subreaper the orphan goes
    # to init and the total holds the first alone.
    assert spent["total"] >= 0.75, spent
    assert spent["by_kind"].get("other Python", 0) >= 0.3, spent


def test_the_cpu_a_command_spends_after_the_last_look_still_counts_for_its_kind() -> None:
    # Looks 2 s apart: the command's 0.4 s falls between the first and the next. It is read
    # once it has ended and before it is reaped, so its kind still gets all of it (the run's
    # quick test above once saw 0.25 of it when a busy machine delayed the looks).
    measure = MEASURE.replace("from suite_processes import measure",
                              "import suite_processes\nsuite_processes.SAMPLE_S = 2.0\n"
                              "from suite_processes import measure")
    done = subprocess.run([sys.executable, "-c", measure, str(SCRIPT.parent), BURN],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    spent = json.loads(done.stdout.strip().splitlines()[-1])
    assert spent["by_kind"].get("other Python", 0) >= 0.35, spent
