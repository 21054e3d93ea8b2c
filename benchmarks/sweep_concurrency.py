"""Sweep throughput: a threaded sweep against a 200 ms loopback model vs. perfect parallelism."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.loopback import OpenAIServer, Reply, tool_then_answer

DELAY_S = 0.2
CONCURRENCY = 8
CASES = 100  # two model calls each (tool call, then answer): 200 calls
GOAL = 1.25
MODEL = "openai:bench-model"
MESSAGE = "What are your opening hours?"

GRID = """\
name: bench
personas: [friendly]
models: [{model}]
temperatures: [0.0]
repeats: {cases}
concurrency: {concurrency}
timeout_s: 30
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


def slow_brain() -> Any:
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})

    def brain(request: dict[str, Any]) -> Reply:
        reply = answer(request)
        reply.delay_s = DELAY_S
        return reply

    return brain


def time_sweep(folder: Path) -> tuple[float, float, int]:
    """Seconds for the whole sweep (plan, cases, rows; no report), for its cases, and rows."""
    from experiments.results import read_rows
    from experiments.runner import run_sweep
    from experiments.runs import read_meta

    (folder / "grid.yaml").write_text(GRID.format(model=MODEL, cases=CASES,
                                                  concurrency=CONCURRENCY))
    (folder / "scenarios.yaml").write_text(SCENARIOS.format(message=MESSAGE))
    started = time.perf_counter()
    run_dir = run_sweep(folder / "grid.yaml", out_dir=folder / "results", report=False,
                        progress=lambda p: None, echo=lambda line: None)
    elapsed = time.perf_counter() - started
    rows = read_rows(run_dir / "results.csv")
    assert len(rows) == CASES and all(r["success"] == "True" for r in rows)
    return elapsed, float(read_meta(run_dir)["duration_s"]), len(rows)


def time_bare_agents(folder: Path) -> float:
    """The same turns on pre-built agents in plain threads: the floor without the harness."""
    from langgraph.checkpoint.memory import InMemorySaver

    from treadwise.agent import Agent
    from treadwise.settings import Settings
    from treadwise.tools import ToolContext, get_tools

    settings = Settings(data_dir=folder / "bare")
    tools = get_tools("math", "business", context=ToolContext(settings.data_dir))
    agents = [Agent(settings, tools=tools, checkpointer=InMemorySaver())
              for _ in range(CONCURRENCY)]
    for agent in agents:
        agent.model(MODEL, 0.0)
    turns = iter(range(CASES))
    lock = threading.Lock()

    def work(agent: Agent) -> None:
        while True:
            with lock:
                turn = next(turns, None)
            if turn is None:
                return
            agent.run(MESSAGE, thread_id=f"bare-{turn}", model=MODEL)

    threads = [threading.Thread(target=work, args=(a,)) for a in agents]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def main() -> None:
    # One-off import costs of a process are not what this measures: warm them first.
    import httpcore  # noqa: F401
    import langchain_openai  # noqa: F401

    import treadwise.tools.math  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(slow_brain()) as server:
        # The test server writes headers and body separately; without TCP_NODELAY, Nagle's
        # algorithm and delayed ACKs add ~40 ms to every answer, which no real server does.
        server.httpd.RequestHandlerClass.disable_nagle_algorithm = True
        folder = Path(tmp)
        os.environ.update({"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "bench",
                           "TREADWISE_DATA_DIR": str(folder / "data"),
                           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        os.environ.pop("TREADWISE_RATE_LIMIT_RPS", None)
        # The reference runs first: it also pays the process's first-turn warm-up (lazy
        # imports and caches of langgraph, langchain and the SDK), which is not concurrency.
        bare_s = time_bare_agents(folder)
        before = len(server.requests)
        elapsed, cases_s, rows = time_sweep(folder)
        calls = len(server.requests) - before
    ideal = calls * DELAY_S / CONCURRENCY
    print(f"sweep_concurrency: ratio {elapsed / ideal:.2f} (goal <= {GOAL})")
    print(f"  {rows} cases, {calls} model calls of {DELAY_S * 1000:.0f} ms at concurrency "
          f"{CONCURRENCY}: whole sweep {elapsed:.2f} s (cases alone {cases_s:.2f} s), "
          f"ideal {ideal:.2f} s")
    print(f"  reference (run first, warms the process): the same {CASES} turns on "
          f"{CONCURRENCY} pre-built agents without the harness: {bare_s:.2f} s "
          f"(ratio {bare_s / ideal:.2f})")


if __name__ == "__main__":
    main()
