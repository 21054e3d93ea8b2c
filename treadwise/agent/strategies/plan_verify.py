"""Plan-verify: analyse and plan, run the tools, validate the result (sent back once), write."""

from __future__ import annotations

import re
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

BUDGET = 8
# Calls kept back while acting: one to validate, one to write.
RESERVE = 2
PLAN = """\
Stage: plan. Do not answer yet and do not call tools. Analyse the customer's last message and
reply in three short lines:
Problem type: <arithmetic, calculus, business, or other>
Plan: <which tools to call, in order, with which arguments>
Check: <how to tell the answer is right>"""
ACT = """\
Stage: act. Follow this plan, calling the tools it names; when the tool results answer the
question, reply with a short draft answer that states the result.
Plan:
{plan}"""
VALIDATE = """\
Stage: validate. Do not call tools. Compare the draft answer with the tool results above: does
it answer the customer's question, and does every number in it match what a tool returned?
Reply with one line, VERDICT: OK, or VERDICT: REVISE followed by what to fix."""
REVISE = "A check of your draft found a problem: {reason}\nFix it, calling tools if needed."
WRITE = """\
Stage: write. Do not call tools. Write the final reply to the customer's last message from the
notes below and the tool results above, in your persona's voice. State only results the tools
returned; never mention the plan, the draft or the check."""
VERDICT_RE = re.compile(r"verdict\s*:\s*(ok|revise)\b[\s:,.-]*(.*)", re.IGNORECASE | re.DOTALL)


def verdict(text: str) -> tuple[str, str]:
    """("ok" | "revise" | "unreadable", reason) from a validation reply."""
    match = VERDICT_RE.search(text)
    if not match:
        return "unreadable", ""
    return match.group(1).lower(), match.group(2).strip()[:500]


@strategy("plan-verify", budget=BUDGET,
          description="Plan the tools, run them, validate the result (sent back once), write.")
def build(kit: Kit) -> Any:
    budget = kit.budget

    def plan(state: AgentState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        context = runtime.context
        prompt = [kit.system(context.persona, PLAN), *window(state["messages"])]
        response = kit.call(context, prompt, final=True, stage="plan")
        trace = spent(state.get("trace") or {}, response)
        return {"iterations": state.get("iterations", 0) + 1,
                "trace": record(trace, "plan", response.text or "(no plan)")}

    def act(state: AgentState, runtime: Runtime[TurnContext]) -> Command:
        trace = state.get("trace") or {}
        plans = stages_named(trace, "plan")
        instructions = ACT.format(plan=plans[-1]["text"] if plans else "(none)")
        prompt = [kit.system(runtime.context.persona, instructions), *window(state["messages"])]
        if trace.get("revise"):
            prompt.append(stage_message(REVISE.format(reason=trace["revise"]), "act"))
        # The last call this stage may make answers in text, leaving the reserve untouched.
        final = calls_left(state, budget) - 1 <= RESERVE
        outcome, update, response = tool_step(kit, state, runtime.context, prompt,
                                              final=final, stage="act")
        if outcome != "done":
            return Command(update=update, goto="tools" if outcome == "tools" else "act")
        trace = spent(trace, response)
        update["trace"] = record({**trace, "capped": trace.get("capped") or final},
                                 "act", response.text or "(no draft)")
        return Command(update=update, goto="validate")

    def validate(state: AgentState, runtime: Runtime[TurnContext]) -> Command:
        trace = state.get("trace") or {}
        if calls_left(state, budget) <= 1:
            return Command(update={"trace": record(trace, "validate", "Skipped: no call left "
                                                   "beyond the answer.", verdict="skipped")},
                           goto="write")
        context = runtime.context
        draft = stages_named(trace, "act")[-1]["text"]
        prompt = [kit.system(context.persona, VALIDATE), *window(state["messages"]),
                  stage_message(material(draft_answer=draft), "validate")]
        response = kit.call(context, prompt, final=True, stage="validate")
        calls = state.get("iterations", 0) + 1
        kind, reason = verdict(response.text)
        trace = record(spent(trace, response), "validate", response.text or "(empty reply)",
                       verdict=kind)
        # Sent back once, and only when acting again still leaves a call to write.
        again = (kind == "revise" and not trace.get("revised")
                 and budget - calls >= RESERVE + 1)
        if again:
            trace = {**trace, "revised": True, "revise": reason or "the draft is wrong"}
        else:
            trace = {key: value for key, value in trace.items() if key != "revise"}
        return Command(update={"iterations": calls, "trace": trace},
                       goto="act" if again else "write")

    def write_node(state: AgentState, runtime: Runtime[TurnContext]) -> Command:
        trace = state.get("trace") or {}
        drafts = stages_named(trace, "act")
        checks = stages_named(trace, "validate")
        plans = stages_named(trace, "plan")
        draft = drafts[-1]["text"] if drafts else ""
        notes = material(plan=plans[-1]["text"] if plans else "", draft_answer=draft,
                         check=checks[-1]["text"] if checks else "")
        usable = draft if draft and draft != "(no draft)" else ""
        return write(kit, state, runtime, budget=budget, instructions=WRITE, material=notes,
                     fallback=usable or fallback_answer(state["messages"]))

    graph = StateGraph(AgentState, context_schema=TurnContext)
    graph.add_node("plan", plan)
    graph.add_node("act", act, destinations=("tools", "act", "validate"))
    graph.add_node("tools", kit.tool_node())
    graph.add_node("validate", validate, destinations=("act", "write"))
    graph.add_node("write", write_node, destinations=("write", "__end__"))
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("tools", "act")
    return graph.compile(checkpointer=kit.checkpointer)
