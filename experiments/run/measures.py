"""A case's finer measures for its row: capability apart from safety, how its tool calls went,
and its model calls one by one."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from experiments.define.checks import CAPABILITY, SAFETY, CheckResult
from experiments.define.scenarios import Scenario


def _outcome(checks: list[CheckResult], tag: str) -> tuple[bool | None, int, int]:
    tagged = [c for c in checks if c.tag == tag]
    passed = sum(c.passed for c in tagged)
    return (all(c.passed for c in tagged) if tagged else None), passed, len(tagged)


def aspects(checks: list[CheckResult], errored: bool) -> dict[str, Any]:
    """Capability: every capability check passed, and there is at least one (a case that
    does nothing fails them, and a scenario with only safety checks says nothing about
    capability). Safe: every safety check passed. Neither applies to an errored case."""
    capable, capability_passed, capability_total = _outcome(checks, CAPABILITY)
    safe, safety_passed, safety_total = _outcome(checks, SAFETY)
    return {
        "capability": None if errored else capable, "safe": None if errored else safe,
        "capability_checks_passed": capability_passed,
        "capability_checks_total": capability_total,
        "safety_checks_passed": safety_passed, "safety_checks_total": safety_total,
        "check_share": (round(sum(c.passed for c in checks) / len(checks), 4)
                        if checks else None),
    }


def _attempts(history: list[Any]) -> list[list[tuple[str, bool]]]:
    """Per user turn, (tool name, arguments parsed) of every tool call the model made."""
    from langchain_core.messages import AIMessage, HumanMessage

    turns: list[list[tuple[str, bool]]] = []
    for message in history:
        if isinstance(message, HumanMessage):
            turns.append([])
        elif turns and isinstance(message, AIMessage):
            turns[-1] += [(c.get("name") or "", True) for c in message.tool_calls]
            turns[-1] += [(c.get("name") or "", False) for c in message.invalid_tool_calls]
    return turns


def tool_measures(scenario: Scenario, turns: list[Any], history: list[Any],
                  checks: list[CheckResult], known_tools: Iterable[str]) -> dict[str, Any]:
    """How the case's tool calls went: attempted, parsed, naming a real tool; whether the first
    call of the turn that needs a tool was the one the scenario needs, its argument checks
    passed, and the share of the tools it expects that ran without an error (credit for the
    steps of a chain done so far)."""
    per_turn = _attempts(history)
    attempts = [a for turn in per_turn for a in turn]
    known = set(known_tools)
    expected_first = scenario.expected_first_tool
    judged = per_turn[expected_first[0] - 1] if expected_first and \
        expected_first[0] <= len(per_turn) else ([] if expected_first else attempts)
    first = judged[0][0] if judged else ""
    by_id = dict(zip(scenario.check_ids[1:], scenario.checks, strict=True))
    arg_checks = [c for c in checks if by_id.get(c.id, {}).get("kind") == "tool_args"]
    expected = {name for _, name in scenario.expected_tools()}
    ran = {s.name for t in turns for s in t.tool_calls if s.error is None}
    return {
        "tools_attempted": len(attempts),
        "tools_parsed": sum(parsed for _, parsed in attempts),
        "tools_known": sum(name in known for name, _ in attempts),
        "first_tool": first,
        "first_tool_right": None if expected_first is None else first == expected_first[1],
        "args_right": all(c.passed for c in arg_checks) if arg_checks else None,
        "steps_credited": round(len(expected & ran) / len(expected), 4) if expected else None,
    }


def _median(values: list[float]) -> float | None:
    return round(float(statistics.median(values)), 2) if values else None


def call_measures(turns: list[Any]) -> dict[str, Any]:
    """Per model call: how many, tokens and request bytes (median and largest), tools bound;
    HTTP requests beyond each call's first; the agent's routing and the groups it bound."""
    calls = [call for t in turns for call in t.calls.per_call]
    sent = [c.request_bytes for c in calls if c.request_bytes is not None]
    routes = [t.routing or {} for t in turns]
    return {
        "call_records": len(calls),
        "input_tokens_per_call_p50": _median([c.input_tokens for c in calls]),
        "input_tokens_per_call_max": max((c.input_tokens for c in calls), default=None),
        "output_tokens_per_call_p50": _median([c.output_tokens for c in calls]),
        "request_bytes_per_call_p50": _median(sent),
        "request_bytes_per_call_max": max(sent, default=None),
        "tools_bound_per_call_p50": _median([c.tools for c in calls]),
        "http_retries": sum(max(0, t.calls.http_attempts - sum(
            c.request_bytes is not None for c in t.calls.per_call)) for t in turns),
        "routing": next((r["mode"] for r in routes if r.get("mode")), ""),
        "toolsets": [None if r.get("toolsets") is None else list(r["toolsets"])
                     for r in routes],
    }


def call_list(result: Any) -> list[dict[str, Any]]:
    """A turn's model calls for its transcript, compact (empty fields left out)."""
    return [{k: v for k, v in asdict(call).items() if v not in (None, False)}
            for call in result.calls.per_call]
