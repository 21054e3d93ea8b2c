"""ReAct, the default strategy: reason <-> tools, at most five model calls per user turn."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from treadwise.agent.graph import (
    Kit,
    answer_message,
    fallback_answer,
    is_empty,
    last_ai,
    mark,
    nudges,
    unreadable,
    window,
)
from treadwise.agent.state import AgentState, TurnContext
from treadwise.agent.strategies import strategy
from treadwise.settings import MAX_ITERATIONS


@strategy("react", budget=MAX_ITERATIONS, answer_nodes=("reason",),
          description="Reason and call tools in a loop until the answer is ready.")
def build(kit: Kit) -> Any:
    """Compile the reason/tools graph; the persona and model arrive per turn as TurnContext.

    Every model call is one visit to `reason`: an empty reply leaves a nudge count behind and
    the route sends the turn straight back, so the loop is an edge, not a hidden inner loop.
    """
    max_iterations = kit.budget

    def reason(state: AgentState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        context = runtime.context
        calls = state.get("iterations", 0) + 1
        final = calls >= max_iterations
        waiting = state.get("nudges", 0)
        prompt = [kit.system(context.persona), *window(state["messages"]), *nudges(waiting)]
        response = kit.call(context, prompt, final=final)
        if is_empty(response):
            if not final:
                # Empty replies (e.g. Gemini's MALFORMED_FUNCTION_CALL) get one nudge per call.
                return {"iterations": calls, "nudges": waiting + 1}
            response = answer_message(fallback_answer(state["messages"]), calls=calls,
                                      capped=True, usage=response.usage_metadata)
        mark(response, calls=calls, capped=final)
        return {"messages": [response, *unreadable(response)], "iterations": calls,
                "nudges": 0}

    def route(state: AgentState) -> Literal["tools", "reason", "__end__"]:
        """Run the tool calls; after an empty reply or calls that could not even be read,
        think again."""
        # "__end__" is END spelled out: langgraph types END as a plain str, not this Literal.
        if state.get("nudges"):
            return "reason"
        last = last_ai(state["messages"])
        if last is None:
            return "__end__"
        if last.tool_calls:
            return "tools"
        return "reason" if last.invalid_tool_calls else "__end__"

    graph = StateGraph(AgentState, context_schema=TurnContext)
    graph.add_node("reason", reason)
    graph.add_node("tools", kit.tool_node())
    graph.add_edge(START, "reason")
    graph.add_conditional_edges("reason", route, ["tools", "reason", END])
    graph.add_edge("tools", "reason")
    return graph.compile(checkpointer=kit.checkpointer)
