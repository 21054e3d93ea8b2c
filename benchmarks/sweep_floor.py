"""Harness CPU per case vs a bare create_agent + ChatOpenAI loop sending the same requests."""

# Each case is one turn of two model calls (a tool call, then an answer) through the real
# langchain-openai client against a loopback OpenAI server that this parent process runs. The
# sweep (`python -m experiments run --grid ...`) and the bare loop each run in a child process of
# their own; a child's CPU is read from the kernel when it exits (the server's CPU is the
# parent's, not theirs). The marginal CPU per case is (CPU at N=1000 - CPU at N=200) / 800, so
# imports and start-up cancel. The bare loop offers the same tools with the same system prompt
# as the harness's first request (read back from the server), so both send the same requests.
# Run: python benchmarks/sweep_floor.py (SWEEP_FLOOR_QUICK=1 for N=300 minus N=100: a check that
# it runs; 200 cases are too few for start-up noise to cancel, so its ratio is not the figure).

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.loopback import OpenAIServer, Reply  # noqa: E402

QUICK = os.environ.get("SWEEP_FLOOR_QUICK") == "1"
SMALL, LARGE = (100, 300) if QUICK else (200, 1000)
ROUNDS = int(os.environ.get("SWEEP_FLOOR_ROUNDS", 1 if QUICK else 3))
GOAL = 1.3
MODEL = "gpt-4o-mini"
QUESTION = "What are your opening hours on Saturday?"
TOOL, ARGS = "get_business_info", {"topic": "hours"}
ANSWER = "We are open 8:00 to 16:00 on Saturday."
SCENARIOS = """\
scenarios:
  - id: hours
    category: information query
    turns: [{question!r}]
    checks:
      - {{kind: tools_called, tools: [{tool}]}}
      - {{kind: answer_matches, pattern: "16:00"}}
"""
GRID = """\
name: floor
personas: [friendly]
models: ["openai:{model}"]
temperatures: [0.0]
repeats: {repeats}
concurrency: 1
keep_cases: none
scenarios:
  file: {scenarios}
"""


def brain(request: dict[str, Any]) -> Reply:
    """One tool call, then the answer: two calls a case, whoever asks."""
    if request["messages"][-1].get("role") == "tool":
        return Reply(text=ANSWER)
    return Reply(tool_calls=[{"name": TOOL, "args": ARGS}])


def child_cpu(command: list[str], env: dict[str, str]) -> float:
    """Run a child process to the end; its user + system CPU seconds as the kernel counts."""
    process = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{stderr[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def harness(folder: Path, n: int, env: dict[str, str]) -> float:
    scenarios = folder / "scenarios.yaml"
    scenarios.write_text(SCENARIOS.format(question=QUESTION, tool=TOOL))
    grid = folder / f"grid-{n}.yaml"
    grid.write_text(GRID.format(model=MODEL, repeats=n, scenarios=scenarios))
    out = folder / f"results-{n}-{time.monotonic_ns()}"
    cpu = child_cpu([sys.executable, "-m", "experiments", "run", "--grid", str(grid),
                     "--out", str(out), "--no-report"], env)
    from experiments.store.results_file import read_rows

    (run_dir,) = out.iterdir()
    statuses = [row["status"] for row in read_rows(run_dir / "results.csv")]
    if statuses != ["ok"] * n:
        raise SystemExit(f"the sweep of {n} cases did not pass every case: {run_dir}")
    return cpu


def bare(folder: Path, n: int, env: dict[str, str]) -> float:
    return child_cpu([sys.executable, __file__, "--bare", str(n), str(folder / "request.json")],
                     env)


def bare_child(n: int, request_file: Path) -> None:
    """The floor: create_agent + ChatOpenAI, the harness's tools and prompt, n fresh turns."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from treadwise.tools import ToolContext, get_tools

    first = json.loads(request_file.read_text())
    names = [tool["function"]["name"] for tool in first["tools"]]
    context = ToolContext(request_file.parent / "bare-data")
    tools = [t for toolset in ("math", "business") for t in get_tools(toolset, context=context)]
    tools = sorted((t for t in tools if t.name in names), key=lambda t: names.index(t.name))
    model = ChatOpenAI(model=MODEL, temperature=0.0, timeout=30, seed=first.get("seed"))
    agent = create_agent(model, tools, system_prompt=first["messages"][0]["content"])
    for _ in range(n):
        result = agent.invoke({"messages": [HumanMessage(QUESTION)]})
        if result["messages"][-1].content != ANSWER:
            raise SystemExit(f"unexpected answer: {result['messages'][-1].content!r}")


def same_requests(server: OpenAIServer, start: int) -> None:
    """The bare loop's requests must be the harness's, byte for byte apart from call ids."""
    def shape(body: dict[str, Any]) -> str:
        text = json.dumps(body, sort_keys=True)
        for message in body["messages"]:
            for call in message.get("tool_calls") or []:
                text = text.replace(call["id"], "ID")
            if message.get("tool_call_id"):
                text = text.replace(message["tool_call_id"], "ID")
        return text

    ours, theirs = server.requests[0:2], server.requests[start:start + 2]
    if [shape(b) for b in ours] != [shape(b) for b in theirs]:
        print("  note: the bare loop's requests differ from the harness's:",
              [len(shape(b)) for b in ours], "vs", [len(shape(b)) for b in theirs])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(brain) as server:
        folder = Path(tmp)
        env = {**os.environ, "OPENAI_BASE_URL": server.url + "/v1",
               "OPENAI_API_KEY": "sk-loopback-benchmark", "TREADWISE_DATA_DIR": tmp,
               "PYTHONPATH": str(REPO)}
        harness(folder, 1, env)
        (folder / "request.json").write_text(json.dumps(server.requests[0]))
        start = len(server.requests)
        bare(folder, 1, env)
        same_requests(server, start)
        ours, theirs, ratios = [], [], []
        for round_number in range(ROUNDS):
            # Alternate which goes first so drift on a shared machine hits both alike.
            order = (harness, bare) if round_number % 2 == 0 else (bare, harness)
            cpu = {fn: (fn(folder, LARGE, env) - fn(folder, SMALL, env)) / (LARGE - SMALL)
                   for fn in order}
            ours.append(cpu[harness])
            theirs.append(cpu[bare])
            ratios.append(cpu[harness] / cpu[bare])
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"harness {a * 1000:.1f} ms CPU per case, bare create_agent + ChatOpenAI "
          f"{b * 1000:.1f} ms (marginal: N={LARGE} minus N={SMALL}, one process each, "
          f"2 loopback calls a case, median of {ROUNDS} round(s); per-round ratios "
          f"{min(ratios):.2f}-{max(ratios):.2f}; load average {os.getloadavg()[0]:.1f})")
    print(f"sweep_floor: ratio {statistics.median(ratios):.2f} (goal <= {GOAL})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--bare"]:
        bare_child(int(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()
