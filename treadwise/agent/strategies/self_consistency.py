"""Self-consistency: plan, k independent attempts with a mix of approaches (tools, step-by-step,
a program run in the math sandbox), a majority vote, one self-correction when there is none."""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from treadwise.agent.graph import Kit, fallback_answer, stage_message, tool_node, window
from treadwise.agent.state import AgentState, TurnContext
from treadwise.agent.strategies import strategy
from treadwise.agent.strategies.steps import (
    calls_left,
    material,
    question,
    record,
    spent,
    stages_named,
    tool_step,
    write,
)
from treadwise.conversation import current_turn
from treadwise.settings import CONSISTENCY_APPROACHES, Settings
from treadwise.tools.math_results import calculation_of

# Calls kept back while attempting: one to self-correct, one to write.
RESERVE = 2
ATTEMPT_CALLS = 3  # a tool-using attempt's own limit
MAX_ATTEMPTS = 7
PLAN = """\
Stage: plan. Do not answer yet and do not call tools. Read the customer's last message and
reply in three short lines:
Problem type: <arithmetic, calculus, business, or other>
Plan: <the steps that lead to the answer>
Approach: <react (call the tools), steps (reason step by step), or program (write a program)>"""
ATTEMPTS = {
    "react": "Stage: attempt (tools). Solve the customer's last message by calling the tools; "
             "then reply with the result, ending with a line `Final answer: <value>`.",
    "steps": "Stage: attempt (step by step). Do not call tools. Solve the customer's last "
             "message by reasoning step by step, one numbered step per line, and end with a "
             "line `Final answer: <value>` (or `Final answer: none` if you cannot).",
    "program": "Stage: attempt (program). Do not call tools and do not compute the answer "
               "yourself. Write a short program that computes it, in a ```python block: one "
               "statement per line, each `name = expression` using numbers, + - * / ** and "
               "math functions such as sqrt; the last line is the result. No imports, loops, "
               "strings or other statements: anything else is refused.",
}
CORRECT = """\
Stage: self-correction. Do not call tools. Independent attempts at the customer's last message
disagreed or failed; they are listed below. Find where they went wrong, work out the correct
answer, and end with a line `Final answer: <value>`."""
WRITE = """\
Stage: write. Do not call tools. Write the final reply to the customer's last message in your
persona's voice from the notes below: state the agreed answer (or the draft's) and how it was
found in a sentence or two. Never mention attempts, votes, drafts or stages."""
NON_MATH = ("business", "other")
COUNTED = {"react", "program"}  # approaches whose answers can count (tools, the sandbox)
FINAL_RE = re.compile(r"final answer\s*(?:is|:|=)\s*(.+)", re.IGNORECASE)
NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)
# A lone letter beside an operator: an expression such as x^3/3 + C, not a number.
SYMBOLIC_RE = re.compile(r"(?<![A-Za-z])[a-z](?![A-Za-z])\s*[-+*/^(]|[-+*/^]\s*[a-z](?![A-Za-z])")
NO_ANSWER = ("none", "unknown", "n/a", "")
FIELD_RE = re.compile(r"^\W*(problem type|approach)\s*:\s*\W*(\w+)", re.IGNORECASE | re.MULTILINE)
FENCE_RE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def approaches(settings: Settings | None) -> tuple[int, tuple[str, ...]]:
    """k and the approach mix from the settings, checked."""
    k = settings.consistency_k if settings else 3
    mix = tuple(settings.consistency_approaches if settings else CONSISTENCY_APPROACHES)
    unknown = sorted(set(mix) - set(ATTEMPTS))
    if unknown or not mix:
        raise ValueError(f"unknown self-consistency approach {', '.join(unknown) or '(none)'}; "
                         f"choose from {', '.join(ATTEMPTS)}")
    if not set(mix) & COUNTED:
        raise ValueError("self-consistency needs react or program among its approaches: only "
                         "answers a tool or a program produced count in the vote")
    if not 1 <= k <= MAX_ATTEMPTS:
        raise ValueError(f"self-consistency k must be between 1 and {MAX_ATTEMPTS}, got {k}")
    return k, mix


def attempt_order(plan: str, k: int, mix: Sequence[str]) -> list[str]:
    """The approach of each attempt: the planner's favourite first; one attempt with tools
    when the planner says the question is not a math problem (there is nothing to vote on)."""
    fields = {name.lower(): value.lower() for name, value in FIELD_RE.findall(plan)}
    favourite = fields.get("approach")
    if fields.get("problem type") in NON_MATH:
        return ["react"]
    order = list(mix)
    if favourite in order:
        order.remove(favourite)
        order.insert(0, favourite)
    return [order[i % len(order)] for i in range(k)]


def normal(value: str) -> str:
    """One spelling per answer, so 81, 81.0 and "81." count as the same vote."""
    value = value.strip().strip("*`$. ").replace(",", "")
    try:
        return f"{float(value):.10g}"
    except ValueError:
        return " ".join(value.lower().split())


def extract_answer(text: str) -> str | None:
    """The final answer an attempt states: what follows "Final answer", else its last
    "= value", else its last number; None when it gives none."""
    if match := FINAL_RE.search(text):
        candidate = match.group(1).strip().splitlines()[0].strip()
        if candidate.strip(" .*").lower() in NO_ANSWER:
            return None
        if "=" not in candidate and SYMBOLIC_RE.search(candidate):
            return normal(candidate)[:80]
        return _number(candidate, first=True) or normal(candidate)[:80]
    return _number(text, first=False)


def _number(text: str, first: bool) -> str | None:
    """The number after the last "=" (its "≈" decimal when given), else the first or last."""
    text = text.replace(",", "")
    if "=" in text:
        text = text.rsplit("=", 1)[-1]
        first = True
    if "\u2248" in text:
        text = text.rsplit("\u2248", 1)[-1]
    numbers = NUMBER_RE.findall(text)
    if not numbers:
        return None
    return normal(numbers[0] if first else numbers[-1])


def extract_program(text: str) -> str | None:
    """The program in a reply: its last ```python block, or the whole reply when it has none."""
    if blocks := FENCE_RE.findall(text):
        return blocks[-1].strip() or None
    # Unfenced, it must look like a program: every line but the last an assignment.
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines or any("=" not in line for line in lines[:-1]):
        return None
    return "\n".join(lines)


def own(messages: Sequence[AnyMessage], index: int) -> list[AnyMessage]:
    """This turn's messages of one attempt: its tool calls and their results, nobody else's."""
    ids: set[str] = set()
    mine: list[AnyMessage] = []
    for message in current_turn(messages):
        if isinstance(message, AIMessage) and message.response_metadata.get("attempt") == index:
            mine.append(message)
            ids |= {c["id"] or "" for c in message.tool_calls}
            ids |= {c.get("id") or "" for c in message.invalid_tool_calls}
        elif isinstance(message, ToolMessage) and message.tool_call_id in ids:
            mine.append(message)
    return mine


def tally(attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """The vote: counts per answer, the winner and whether it is a majority of the attempts."""
    counts = Counter(a["answer"] for a in attempts if a["answer"] is not None)
    winner, votes = counts.most_common(1)[0] if counts else (None, 0)
    tied = sum(1 for n in counts.values() if n == votes) > 1
    majority = bool(winner) and not tied and 2 * votes > len(attempts)
    return {"counts": dict(counts), "winner": winner if majority else None,
            "majority": majority, "attempts": len(attempts)}


def program_call(response: AIMessage, index: int, program: str) -> AIMessage:
    """The attempt's program as a call of the restricted program tool."""
    return AIMessage(content="", tool_calls=[{
        "name": "run_program", "args": {"program": program},
        "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}],
        id=response.id, usage_metadata=response.usage_metadata,
        response_metadata={"attempt": index})


def listing(attempts: list[dict[str, Any]]) -> str:
    """The attempts for the self-correction: each with the answer that counts (or none)."""
    return "\n\n".join(
        f"Attempt {i} ({a['approach']}): answer {a['answer'] or 'none'}\n"
        + (f"(It stated {a['unbacked']}, which no tool result or program gave.)\n"
           if a.get("unbacked") else "") + a["text"][:800]
        for i, a in enumerate(attempts, 1))


@strategy("self-consistency", budget=10, budget_setting="consistency_budget",
          description="Several independent attempts (tools, step by step, a program), then "
                      "a majority vote; one self-correction when they disagree.")
def build(kit: Kit) -> Any:
    budget = kit.budget
    k, mix = approaches(kit.settings)
    program_tool = _program_tools(kit)

    def plan(state: AgentState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        context = runtime.context
        prompt = [kit.system(context.persona, PLAN), *window(state["messages"])]
        response = kit.call(context, prompt, final=True, stage="plan")
        order = attempt_order(response.text, k, mix)
        trace = record(spent(state.get("trace") or {}, response), "plan",
                       response.text or "(no plan)", approaches=order)
        return {"iterations": state.get("iterations", 0) + 1,
                "trace": {**trace, "order": order, "attempts": []}}

    def attempt(state: AgentState, runtime: Runtime[TurnContext]) -> Command:
        trace = state.get("trace") or {}
        index = len(trace["attempts"])
        approach = trace["order"][index]
        used = trace.get("used", 0)
        if calls_left(state, budget) <= RESERVE:
            return Command(update={"trace": {**trace, "capped": True}}, goto="collect")
        plans = stages_named(trace, "plan")
        instructions = f"{ATTEMPTS[approach]}\nPlan:\n{plans[-1]['text'] if plans else ''}"
        prompt = [kit.system(runtime.context.persona, instructions),
                  *question(state["messages"]), *own(state["messages"], index)]
        final = (approach != "react" or used + 1 >= ATTEMPT_CALLS
                 or calls_left(state, budget) - 1 <= RESERVE)
        outcome, update, response = tool_step(kit, state, runtime.context, prompt,
                                              final=final, stage=f"attempt-{approach}",
                                              tag={"attempt": index})
        update["trace"] = {**trace, "used": used + 1}
        if outcome != "done":
            return Command(update=update, goto="tools" if outcome == "tools" else "attempt")
        return _ended(update, response, approach, index)

    def collect(state: AgentState) -> Command:
        """Record the attempt that just ended with the answer it reached; go on or vote."""
        trace = dict(state.get("trace") or {})
        index = len(trace["attempts"])
        approach = trace["order"][index]
        text, used = trace.pop("text", ""), trace.pop("used", 0)
        entry = _entry(approach, text, used, own(state["messages"], index))
        trace["attempts"] = [*trace["attempts"], entry]
        trace = record(trace, "attempt", f"Attempt {index + 1} ({approach}): {_shown(entry)}",
                       approach=approach, answer=entry["answer"])
        more = (len(trace["attempts"]) < len(trace["order"])
                and calls_left(state, budget) > RESERVE)
        return Command(update={"trace": trace}, goto="attempt" if more else "vote")

    def vote(state: AgentState) -> Command:
        trace = state.get("trace") or {}
        if len(trace["order"]) == 1:
            return _no_vote(trace)
        result = tally(trace["attempts"])
        counts = ", ".join(f"{answer}: {n}" for answer, n in result["counts"].items())
        text = (f"Majority: {result['winner']} ({counts})" if result["majority"]
                else f"No majority ({counts or 'no answers'})")
        trace = record({**trace, "vote": result}, "vote", text)
        fix = not result["majority"] and calls_left(state, budget) >= RESERVE
        return Command(update={"trace": trace}, goto="correct" if fix else "write")

    def correct(state: AgentState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        trace = state.get("trace") or {}
        context = runtime.context
        prompt = [kit.system(context.persona, CORRECT), *question(state["messages"]),
                  stage_message(material(attempts=listing(trace["attempts"])), "correct")]
        response = kit.call(context, prompt, final=True, stage="correct")
        answer = extract_answer(response.text)
        # The correction picks among answers a tool or a program produced, or none.
        backed = {a["answer"] for a in trace["attempts"]} - {None}
        result = {**trace["vote"], "corrected": answer if answer in backed else None}
        trace = record(spent({**trace, "vote": result}, response), "correct",
                       response.text or "(empty reply)", answer=answer)
        return {"iterations": state.get("iterations", 0) + 1, "trace": trace}

    def write_node(state: AgentState, runtime: Runtime[TurnContext]) -> Command:
        history, notes, fallback = _write_up(state.get("trace") or {}, state["messages"])
        return write(kit, state, runtime, budget=budget, instructions=WRITE,
                     material=notes, fallback=fallback, history=history)

    graph = StateGraph(AgentState, context_schema=TurnContext)
    graph.add_node("plan", plan)
    graph.add_node("attempt", attempt, destinations=("tools", "program", "attempt", "collect"))
    graph.add_node("tools", kit.tool_node())
    graph.add_node("program", tool_node(program_tool))
    graph.add_node("collect", collect, destinations=("attempt", "vote"))
    graph.add_node("vote", vote, destinations=("correct", "write"))
    graph.add_node("correct", correct)
    graph.add_node("write", write_node, destinations=("write", "__end__"))
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "attempt")
    graph.add_edge("tools", "attempt")
    graph.add_edge("program", "collect")
    graph.add_edge("correct", "write")
    return graph.compile(checkpointer=kit.checkpointer)


def _ended(update: dict[str, Any], response: AIMessage, approach: str, index: int) -> Command:
    """An attempt's last reply: a program goes to the program tool, anything else is collected."""
    program = extract_program(response.text) if approach == "program" else None
    if program:
        # Memory keeps the program's call, and with it the reply's token count.
        update["messages"] = [program_call(response, index, program)]
        update["trace"] = {**update["trace"], "text": response.text}
        return Command(update=update, goto="program")
    update["trace"] = {**spent(update["trace"], response), "text": response.text}
    return Command(update=update, goto="collect")


def _program_tools(kit: Kit) -> list[Any]:
    from treadwise.tools import ToolContext
    from treadwise.tools.math import program_tools

    data_dir = kit.settings.data_dir if kit.settings else Settings().data_dir
    return program_tools(ToolContext(data_dir))


def _answer_of(approach: str, text: str,
               mine: list[AnyMessage]) -> tuple[str | None, str | None]:
    """(the answer that counts in the vote, the answer the attempt stated). Only answers a
    successful tool result or program produced count: a program's result, or a tool attempt's
    stated answer when one of its tool results gives it (a capped attempt that wrote none
    answers with its last result). Reasoning alone, or a number read from an error ("the limit
    is 10,000 digits"), states an answer but never counts."""
    results = [m for m in mine if isinstance(m, ToolMessage) and m.status != "error"]
    if approach == "program":
        runs = [m for m in results if m.name == "run_program"]
        answer = _found(runs[-1]) if runs else None
        return answer, answer
    stated = extract_answer(text) if text.strip() or approach != "react" else (
        _found(results[-1]) if results else None)
    produced = {_found(m) for m in results} - {None}
    return (stated if approach == "react" and stated in produced else None), stated


def _found(result: ToolMessage) -> str | None:
    """What a tool result answers: its math artifact's value as shown, else its text's."""
    found = calculation_of(result)
    return extract_answer(found.shown if found else result.text)


def _entry(approach: str, text: str, used: int, mine: list[AnyMessage]) -> dict[str, Any]:
    """One attempt's record; `unbacked` holds what it stated when that does not count."""
    answer, stated = _answer_of(approach, text, mine)
    entry = {"approach": approach, "answer": answer, "text": text.strip()[:2000],
             "llm_calls": used}
    return {**entry, "unbacked": stated} if stated != answer else entry


def _shown(entry: dict[str, Any]) -> str:
    if entry["answer"] is not None:
        return entry["answer"]
    if entry.get("unbacked") is not None:
        return f"no answer that counts (it stated {entry['unbacked']}, which no tool result gave)"
    return "no answer"


def _write_up(trace: dict[str, Any],
              messages: list[AnyMessage]) -> tuple[list[AnyMessage], str, str]:
    """What the writer sees: the question with the backing attempt's work, the notes, and the
    answer to give when no call is left."""
    result = trace.get("vote") or {}
    answer = result.get("corrected") or result.get("winner")
    attempts = trace.get("attempts", [])
    backing = _backing(result, attempts, answer)
    history = question(messages)
    if backing is not None:
        history += own(messages, backing)
    work = attempts[backing]["text"] if backing is not None else ""
    notes = (material(draft_answer=work) if result.get("skipped")
             else material(agreed_answer=_agreed(result, answer), supporting_work=work))
    fallback = (f"The answer is {answer}." if answer is not None
                else work.strip() or fallback_answer(messages))
    return history, notes, fallback


def _no_vote(trace: dict[str, Any]) -> Command:
    """A single attempt (not a math problem) is written up as it is: nothing to vote on."""
    result: dict[str, Any] = {"counts": {}, "winner": None, "majority": False, "attempts": 1,
              "skipped": "one attempt: not a math problem, nothing to vote on"}
    return Command(update={"trace": record({**trace, "vote": result}, "vote",
                                           result["skipped"])}, goto="write")


def _backing(result: dict[str, Any], attempts: list[dict[str, Any]],
             answer: str | None) -> int | None:
    """The attempt whose work the answer is written from: the only one, the first that
    reached the agreed answer or, without one, the first that used the tools (what they said,
    such as why a number cannot be computed, is the most honest reply)."""
    if result.get("skipped"):
        return 0 if attempts else None
    if answer is None:
        return next((i for i, a in enumerate(attempts) if a["approach"] == "react"), None)
    return next((i for i, a in enumerate(attempts) if a["answer"] == answer), None)


def _agreed(result: dict[str, Any], answer: str | None) -> str:
    if answer is None:
        return "none: the attempts did not reach an answer"
    if result.get("corrected"):
        return f"{answer} (after a self-correction)"
    return f"{answer} ({result['counts'].get(answer, 0)} of {result['attempts']} attempts)"
