"""Per-turn overhead of our graph vs langchain's create_agent on the same scripted model."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from treadwise.agent.graph import Kit
from treadwise.agent.prompts import build_system_prompt
from treadwise.agent.state import TurnContext
from treadwise.agent.strategies.react import build
from treadwise.personas import get_persona
from treadwise.testing.fakes import ScriptedModel

TURNS = 100
ROUNDS = 11


@tool
def lookup(term: str) -> str:
    """Look a term up in the glossary."""
    return f"{term} means a thing"


def one_tool_then_answer(messages, kwargs) -> AIMessage:
    if messages[-1].type == "tool":
        return AIMessage("Here is the answer.")
    return AIMessage("", tool_calls=[{"name": "lookup", "args": {"term": "tread"},
                                      "id": "c1", "type": "tool_call"}])


def time_ours(turns: int) -> float:
    model = ScriptedModel(script=[one_tool_then_answer])
    persona = get_persona("friendly")
    graph = build(Kit([lookup], checkpointer=InMemorySaver()))
    context = TurnContext(persona=persona, model=model, model_spec="scripted")
    started = time.perf_counter()
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage("define tread")], "iterations": 0},
                     {"configurable": {"thread_id": f"t{i}"}}, context=context)
    return (time.perf_counter() - started) / turns


def time_create_agent(turns: int) -> float:
    model = ScriptedModel(script=[one_tool_then_answer])
    prompt = build_system_prompt(get_persona("friendly"))
    agent = create_agent(model, [lookup], system_prompt=prompt, checkpointer=InMemorySaver())
    started = time.perf_counter()
    for i in range(turns):
        agent.invoke({"messages": [HumanMessage("define tread")]},
                     {"configurable": {"thread_id": f"t{i}"}})
    return (time.perf_counter() - started) / turns


def main() -> None:
    time_ours(20), time_create_agent(20)  # warm both
    ours, theirs, ratios = [], [], []
    for round_number in range(ROUNDS):
        # Alternate which goes first so drift on a shared machine hits both alike.
        pair = (time_ours, time_create_agent) if round_number % 2 else (time_create_agent,
                                                                         time_ours)
        timed = {fn: fn(TURNS) for fn in pair}
        ours.append(timed[time_ours])
        theirs.append(timed[time_create_agent])
        ratios.append(timed[time_ours] / timed[time_create_agent])
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"ours: {a * 1000:.2f} ms/turn, create_agent: {b * 1000:.2f} ms/turn "
          f"(medians of {ROUNDS} paired rounds of {TURNS} turns, same scripted model; "
          f"per-round ratios {min(ratios):.2f}-{max(ratios):.2f})")
    print(f"agent_overhead: ratio {statistics.median(ratios):.2f} (goal <= 1.0)")


if __name__ == "__main__":
    main()
