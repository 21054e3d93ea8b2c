"""Think-write: private reasoning steps with tools between them, then a writer in the persona's
voice; the thoughts are shown collapsed and never mixed into the answer."""

from __future__ import annotations

from typing import Any

from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from treadwise.agent.graph import Kit, fallback_answer, stage_message, window
from treadwise.agent.state import AgentState, TurnContext
from treadwise.agent.strategies import strategy
from treadwise.agent.strategies.steps import (
    calls_left,
    material,
    record,
    spent,
    stages_named,
    tool_step,
    write,
)

BUDGET = 5
THINK = """\
Stage: think. Your reply is private: the customer never sees it. Think one step about the
customer's last message: what is asked, what the tool results so far show, and what is still
missing. If a tool is needed, call it now; when you have everything, say so and state the
result in one sentence without calling a tool."""
WRITE = """\
Stage: write. Do not call tools. Write the reply to the customer's last message in your
persona's voice, from your private notes below and the tool results above. The notes are not
for the customer: never quote them, and state only results the tools returned."""


def notes(trace: dict[str, Any]) -> str:
    thoughts = [stage["text"] for stage in stages_named(trace, "think")]
    return "\n".join(f"{i}. {text}" for i, text in enumerate(thoughts, 1)) or "(none yet)"


@strategy("think-write", budget=BUDGET,
          description="Think privately with tools between thoughts, then write the reply.")
def build(kit: Kit) -> Any:
    budget = kit.budget

    def think(state: AgentState, runtime: Runtime[TurnContext]) -> Command:
        trace = state.get("trace") or {}
        prompt = [kit.system(runtime.context.persona, THINK), *window(state["messages"]),
                  stage_message(material(private_notes_so_far=notes(trace)), "think")]
        # One call is always kept for the writer; the last thought calls no tool.
        final = calls_left(state, budget) - 1 <= 1
        outcome, update, response = tool_step(kit, state, runtime.context, prompt,
                                              final=final, stage="think")
        thought = response.text.strip()
        if update.get("messages"):
            # Memory keeps the tool calls; the thought itself lives only in the trace.
            call = update["messages"][0].model_copy(update={"content": ""})
            update["messages"] = [call, *update["messages"][1:]]
        else:
            trace = spent(trace, response)
        if thought or outcome == "done":
            trace = record(trace, "think", thought or "(no thought)",
                           tools=[c["name"] for c in response.tool_calls])
        if outcome == "done" and final:
            trace = {**trace, "capped": True}
        update["trace"] = trace
        goto = {"tools": "tools", "again": "think", "done": "write"}[outcome]
        return Command(update=update, goto=goto)

    def write_node(state: AgentState, runtime: Runtime[TurnContext]) -> Command:
        trace = state.get("trace") or {}
        # The fallback reports tool results only: a thought never reaches the customer.
        return write(kit, state, runtime, budget=budget, instructions=WRITE,
                     material=material(private_notes=notes(trace)),
                     fallback=fallback_answer(state["messages"]))

    graph = StateGraph(AgentState, context_schema=TurnContext)
    graph.add_node("think", think, destinations=("tools", "think", "write"))
    graph.add_node("tools", kit.tool_node())
    graph.add_node("write", write_node, destinations=("write", "__end__"))
    graph.add_edge(START, "think")
    graph.add_edge("tools", "think")
    return graph.compile(checkpointer=kit.checkpointer)
