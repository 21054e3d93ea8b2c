"""The math engine's template starting while normal-priority processes keep every core busy:
warmed up at the app's priority and niced after (as shipped), against niced first (the order
before), in the same run. The pool gives a start 60 s (treadwise/safemath/pool.py)."""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOGS = 3 * (os.cpu_count() or 1)
LIMIT_S = 180.0
START = ("from treadwise.safemath import worker\n{before}"
         "worker.template_main({fd}, 1 << 30, 32 << 20)\n")
ORDERS = {
    "as shipped (warm-up, then nice)": "",
    "niced first (before)": "import os\nos.nice(worker.NICENESS)\nworker.NICENESS = 0\n",
}


def hog() -> None:
    while True:
        pass


def start_s(before: str) -> float:
    """Seconds until a template says it is ready."""
    ours, theirs = socket.socketpair()
    code = START.format(before=before, fd=theirs.fileno())
    began = time.perf_counter()
    template = subprocess.Popen([sys.executable, "-c", code], pass_fds=[theirs.fileno()],
                                cwd=REPO)
    theirs.close()
    try:
        ours.settimeout(LIMIT_S)
        if ours.recv(1) != b"R":
            raise RuntimeError("the template exited")
        return time.perf_counter() - began
    finally:
        ours.close()
        template.wait(30)


def main() -> None:
    idle = {name: start_s(before) for name, before in ORDERS.items()}
    hogs = [multiprocessing.Process(target=hog, daemon=True) for _ in range(HOGS)]
    for process in hogs:
        process.start()
    try:
        busy = {name: start_s(before) for name, before in ORDERS.items()}
    finally:
        for process in hogs:
            process.kill()
    for name in ORDERS:
        print(f"{name}: {idle[name]:.1f} s idle, {busy[name]:.1f} s with {HOGS} busy processes")
    shipped, before = (busy[name] for name in ORDERS)
    print(f"start on a busy machine: ratio {shipped / before:.2f} against niced first "
          "(lower is better)")


if __name__ == "__main__":
    main()
