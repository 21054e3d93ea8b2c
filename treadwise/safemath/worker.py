"""The worker side of the math pool: a warm template process that forks limited workers."""

from __future__ import annotations

import io
import math
import os
import resource
import signal
import socket
import struct
import sys
import traceback
import warnings
from dataclasses import dataclass
from multiprocessing.connection import Connection

# The template runs with one BLAS thread: forking a process with threads is unsafe, and every
# worker stays small. It is started by exec, not multiprocessing, so nothing re-imports the
# caller's __main__ (an app script or a test runner) in the workers.
TEMPLATE_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "MPLBACKEND": "Agg"}
TEMPLATE_CODE = (
    "import json, sys\n"
    "options = json.loads(sys.argv[1])\n"
    "sys.path[:0] = options.pop('path')\n"
    "from treadwise.safemath.worker import template_main\n"
    "template_main(**options)\n"
)
PID = struct.Struct("!q")
NICENESS = 10


@dataclass(frozen=True)
class Limits:
    """Resource limits each worker sets on itself before it serves jobs."""

    memory_bytes: int = 1 << 30
    file_bytes: int = 32 << 20


def template_main(fd: int, memory_bytes: int, file_bytes: int) -> None:
    """The warm template: import and exercise the engine once, then fork a worker per request."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Ignoring SIGCHLD makes the kernel reap exited workers at once: no zombies.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    warnings.simplefilter("ignore")
    from treadwise.safemath.jobs import drop_missed_alarm

    sys.unraisablehook = drop_missed_alarm  # no traceback in the server's log for a handled ring
    warm_up()
    # Math yields the CPU to the process serving people: a crowd of slow solves must not slow
    # every other turn's replies (the workers forked from here inherit it). Only after the
    # warm-up: niced, its few core-seconds got so small a share of a busy machine that the
    # start outran START_TIMEOUT_S (57.9 s with six busy processes on two cores, against 2.0 s
    # idle) and every math tool failed with "could not start its worker template".
    os.nice(NICENESS)
    limits = Limits(memory_bytes, file_bytes)
    control = socket.socket(fileno=fd)
    try:
        control.sendall(b"R")
        while control.recv(1):
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                _worker_main(control, ours, theirs, limits)
            theirs.close()
            socket.send_fds(control, [PID.pack(pid)], [ours.fileno()])
            ours.close()
    except OSError:
        pass  # the parent went away: so does the template
    # Skip interpreter teardown (slow with sympy loaded); there is nothing to flush.
    os._exit(0)


def _worker_main(control: socket.socket, ours: socket.socket, theirs: socket.socket,
                 limits: Limits) -> None:
    code = 0
    try:
        control.close()
        ours.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        serve(Connection(theirs.detach()), limits)
    except (EOFError, OSError):
        pass  # the parent went away
    except BaseException:  # noqa: BLE001 - a forked child must never return into the parent's code
        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


def serve(conn: Connection, limits: Limits) -> None:
    """Worker loop: limit itself, then answer (op, kwargs, timeout) jobs until told to stop."""
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _limit_cpu(0.0)
    from treadwise.safemath.jobs import run_job

    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        op, kwargs, timeout_s = job
        _limit_cpu(timeout_s)
        reply = run_job(op, kwargs, timeout_s, alarms=True)
        try:
            conn.send(reply)
        except Exception:  # noqa: BLE001 - an unpicklable result is an error reply, not a crash
            conn.send(("error", "the result could not be sent back", True))
        if reply[2]:
            return


def _limit_cpu(timeout_s: float) -> None:
    # RLIMIT_CPU counts the whole life of the process, so each job moves the soft limit to
    # "used so far + this job's budget"; the kernel stops a job that spins past it.
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + timeout_s + 1)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))




def warm_up() -> None:
    """Run each kind of job once so the lazily imported parts of sympy and matplotlib load."""
    from treadwise.safemath.jobs import run_job
    from treadwise.safemath.numeric import compile_numeric
    from treadwise.safemath.parser import parse_variable
    from treadwise.safemath.plotting import AreaPlot, render_area

    jobs = [
        ("calculate", {"expression": "sqrt(8) + 1/3"}),
        ("integrate", {"expression": "x sin(x)"}),
        ("integrate", {"expression": "exp(-x^2)", "lower": "0", "upper": "1"}),
        ("differentiate", {"expression": "x/(x+1)"}),
        ("solve_equation", {"equation": "x^2 - 4 = 0"}),
        ("analyze_function", {"expression": "x^3 - 3x"}),
    ]
    for op, kwargs in jobs:
        run_job(op, kwargs, 10.0)
    x = parse_variable("x")
    figure = AreaPlot(0.0, 1.0, "0", "1", "∫₀¹ x² dx = 1/3", "Area = 1/3", "f(x) = x²")
    render_area(compile_numeric(x**2, x, "numpy"), figure, io.BytesIO())
