"""Sweep throughput: 1 000 cases at concurrency 32 against a 200 ms loopback model vs. perfect
parallelism, with the harness's per-case overhead beyond the model's own time.

The model server runs in its own process, as a real provider would: it is not the harness's
CPU. The sweep runs once over as many processes as the machine has cores (`workers`) and once
in a single process, whose threads share one core under Python's GIL.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DELAY_S = 0.2
CONCURRENCY = int(os.environ.get("SWEEP_CONCURRENCY", 32))
CASES = int(os.environ.get("SWEEP_CASES", 1000))  # two model calls each: tool call, answer
GOAL = 1.1
MODEL = "openai:bench-model"
MESSAGE = "What are your opening hours?"
CALLS_PER_CASE = 2
WORKERS = max(1, min(4, os.cpu_count() or 1))

SERVER = """
import sys, time
sys.path.insert(0, {repo!r})
from tests.support.loopback import OpenAIServer, tool_then_answer
answer = tool_then_answer("get_business_info", {{"topic": "opening hours"}})
def brain(request):
    reply = answer(request)
    reply.delay_s = {delay}
    return reply
with OpenAIServer(brain) as server:
    server.httpd.request_queue_size = 256
    print(server.url, flush=True)
    sys.stdin.read()
"""
GRID = """\
name: bench
personas: [friendly]
models: [{model}]
temperatures: [0.0]
repeats: {cases}
concurrency: {concurrency}
workers: {workers}
timeout_s: 60
keep_cases: none
scenarios: {{file: scenarios.yaml}}
"""
SCENARIOS = """\
scenarios:
  - id: hours
    category: information query
    turns: ["{message}"]
    checks:
      - {{kind: tools_called, tools: [get_business_info]}}
"""


def serve() -> tuple[subprocess.Popen, str]:
    repo = str(Path(__file__).resolve().parent.parent)
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(repo=repo, delay=DELAY_S)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return server, server.stdout.readline().strip()


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def harness_cpu() -> float:
    """CPU seconds of this process and its finished children (the sweep's worker processes)."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def time_sweep(folder: Path, workers: int) -> tuple[float, int]:
    """Seconds for the whole sweep (plan, cases, rows; no report) and its rows, all passed."""
    from experiments.run.runner import run_sweep
    from experiments.store.results_file import read_rows

    grid = folder / f"grid-{workers}.yaml"
    grid.write_text(GRID.format(model=MODEL, cases=CASES, concurrency=CONCURRENCY,
                                workers=workers))
    (folder / "scenarios.yaml").write_text(SCENARIOS.format(message=MESSAGE))
    started = time.perf_counter()
    run_dir = run_sweep(grid, out_dir=folder / "results", report=False,
                        progress=lambda p: None, echo=lambda line: None)
    elapsed = time.perf_counter() - started
    rows = read_rows(run_dir / "results.csv")
    failed = [r for r in rows if r["status"] != "ok"]
    assert len(rows) == CASES and not failed, failed[:1]
    return elapsed, len(rows)


def cpu_line(harness_s: float, server_s: float, ideal: float) -> str:
    """Where the machine's cores went: no sweep can beat its CPU demand spread on all cores."""
    cores = os.cpu_count() or 1
    floor = (harness_s + server_s) / cores
    return (f"    CPU per case: harness (agent, graph, client, checks, rows) "
            f"{harness_s / CASES * 1000:.1f} ms, loopback model server "
            f"{server_s / CASES * 1000:.1f} ms; spread over {cores} cores that alone takes "
            f"{floor:.2f} s = {floor / ideal:.2f} x ideal")


def report(label: str, elapsed: float, ideal: float, workers: int) -> list[str]:
    # Each case holds one of CONCURRENCY slots for elapsed * CONCURRENCY / CASES seconds on
    # average; what it spends beyond its model calls' own time is the harness's (and the
    # agent's) overhead.
    slot_ms = elapsed * CONCURRENCY / CASES * 1000
    overhead_ms = slot_ms - CALLS_PER_CASE * DELAY_S * 1000
    return [f"  {label}: {CASES} cases, {CASES * CALLS_PER_CASE} model calls of "
            f"{DELAY_S * 1000:.0f} ms at concurrency {CONCURRENCY} over {workers} "
            f"process{'es' if workers > 1 else ''}: wall {elapsed:.2f} s, ideal {ideal:.2f} s "
            f"(ratio {elapsed / ideal:.2f})",
            f"    per-case overhead beyond the model's own {CALLS_PER_CASE * DELAY_S * 1000:.0f}"
            f" ms: {overhead_ms:.1f} ms"]


def main() -> None:
    # One-off import costs of a process are not what this measures: warm them first.
    import httpcore  # noqa: F401
    import langchain_openai  # noqa: F401

    import experiments.run.runner  # noqa: F401
    import treadwise.tools.math  # noqa: F401

    server, url = serve()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            os.environ.update({"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "bench",
                               "TREADWISE_DATA_DIR": str(folder / "data"),
                               "NO_PROXY": "127.0.0.1,localhost",
                               "no_proxy": "127.0.0.1,localhost"})
            os.environ.pop("TREADWISE_RATE_LIMIT_RPS", None)
            ideal = CASES * CALLS_PER_CASE * DELAY_S / CONCURRENCY
            cpu = []
            for workers in (WORKERS, 1):
                before = harness_cpu(), process_cpu(server.pid)
                cpu.append((time_sweep(folder, workers)[0],
                            harness_cpu() - before[0], process_cpu(server.pid) - before[1]))
            (many, many_cpu, many_server), (one, one_cpu, one_server) = cpu
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    print(f"sweep_concurrency: ratio {many / ideal:.2f} (goal <= {GOAL})")
    for line in (report(f"workers: {WORKERS}", many, ideal, WORKERS)
                 + [cpu_line(many_cpu, many_server, ideal)]
                 + report("workers: 1", one, ideal, 1) + [cpu_line(one_cpu, one_server, ideal)]):
        print(line)
    print(f"  machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
