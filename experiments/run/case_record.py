"""What a finished case leaves: its record (CaseRow) and its transcript, built from its turns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from experiments.define.checks import CheckResult
from experiments.define.grid import Case
from experiments.run.grading import Verdict, style
from experiments.run.measures import aspects, call_list, call_measures, tool_measures
from experiments.run.response_cache import CacheTally
from experiments.store.record import CaseRecord, CaseRow

HARNESS_ERROR = "harness"


def _ai(message: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"ai": message.text}
    calls = [{"name": c.get("name"), "args": c.get("args")} for c in message.tool_calls]
    calls += [{"name": c.get("name"), "unreadable": c.get("args")}
              for c in message.invalid_tool_calls]
    if calls:
        entry["calls"] = calls
    if usage := message.usage_metadata:
        entry["usage"] = [usage.get("input_tokens", 0), usage.get("output_tokens", 0)]
    return entry


def _tool(message: Any) -> dict[str, Any]:
    outcome = "error" if message.status == "error" else "result"
    entry = {"tool": message.name, outcome: message.text}
    if (duration := message.response_metadata.get("duration_s")) is not None:
        entry["s"] = round(float(duration), 4)
    return entry


def conversation(messages: list[Any]) -> list[list[dict[str, Any]]]:
    """The thread's messages split per user turn (what followed each user message)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    turns: list[list[dict[str, Any]]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append([])
        elif turns and isinstance(message, AIMessage):
            turns[-1].append(_ai(message))
        elif turns and isinstance(message, ToolMessage):
            turns[-1].append(_tool(message))
    return turns


def turn_record(user: str, result: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One user turn: the message, what the model and tools did, the answer and its costs."""
    calls = result.calls
    record: dict[str, Any] = {
        "user": user, "answer": result.answer, "latency_s": result.latency_s,
        "model_calls": result.llm_calls, "usage": result.usage,
        "http_attempts": calls.http_attempts, "retry_wait_s": calls.retry_wait_s,
        "ttft_s": calls.ttft_s, "messages": messages}
    if calls.usage_missing:
        record["usage_estimated"] = True
    if calls.per_call:
        record["calls"] = call_list(result)
    if result.routing:
        record["routing"] = result.routing
    if result.error is not None:
        record["error"] = result.error.to_dict()
    return record


def status(talk: Any, checks: list[CheckResult]) -> str:
    """error when the provider or harness failed (the case says nothing about the
    configuration), failed when a check failed, else ok."""
    if talk.harness_error or any(t.error is not None for t in talk.turns):
        return "error"
    return "ok" if all(c.passed for c in checks) else "failed"


def _error(talk: Any) -> tuple[str, str]:
    if talk.harness_error:
        return HARNESS_ERROR, talk.harness_error
    error = next((t.error for t in talk.turns if t.error is not None), None)
    return (error.type, error.message) if error else ("", "")


def _calls(turns: list[Any]) -> dict[str, Any]:
    ttft = next((t.calls.ttft_s for t in turns if t.calls.ttft_s is not None), None)
    return {
        "http_attempts": sum(t.calls.http_attempts for t in turns),
        "retry_wait_s": round(sum(t.calls.retry_wait_s for t in turns), 4),
        "ttft_s": ttft, "usage_missing": any(t.calls.usage_missing for t in turns),
    }


def _tools(turns: list[Any]) -> dict[str, Any]:
    steps = [s for t in turns for s in t.tool_calls]
    errors = [s.error for s in steps if s.error]
    return {
        "tool_sequence": [[s.name for s in t.tool_calls] for t in turns],
        "tool_errors": len(errors),
        "tool_error_detail": " ".join(errors[0].split())[:300] if errors else "",
        "artifacts": sum(len(t.artifacts) for t in turns),
    }


def _usage(ctx: Any, case: Case, turns: list[Any], cache: CacheTally) -> dict[str, Any]:
    input_tokens = sum(t.usage.get("input_tokens", 0) for t in turns)
    output_tokens = sum(t.usage.get("output_tokens", 0) for t in turns)
    # Answers from the cache cost nothing now; their tokens still describe the reply.
    paid_in = max(0, input_tokens - cache.input_tokens)
    paid_out = max(0, output_tokens - cache.output_tokens)
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "cost_usd": ctx.prices.cost(case.cell.model, paid_in, paid_out),
            "cache_hits": cache.hits}


def _measures(ctx: Any, case: Case, talk: Any, checks: list[CheckResult],
              state: str) -> dict[str, Any]:
    """The finer measures of 20.6/20.7 and 22.3, and what configured the model."""
    cell = case.cell
    return {**aspects(checks, state == "error"),
            **tool_measures(case.scenario, talk.turns, talk.history, checks,
                            (t.name for t in ctx.tools)),
            **call_measures(talk.turns),
            "decoding": cell.model_settings.get("decoding", ""),
            "model_routing": cell.model_settings.get("routing", ""),
            "prompt_hash": cell.prompt_hash}


def _row(ctx: Any, case: Case, talk: Any, checks: list[CheckResult], cache: CacheTally,
         verdict: Verdict | None) -> CaseRow:
    cell, turns = case.cell, talk.turns
    failed = [c for c in checks if not c.passed]
    answer = turns[-1].answer if turns else ""
    state = status(talk, checks)
    error_type, error_message = _error(talk)
    return CaseRow(**{
        "run_id": ctx.run_id, "case_key": case.key, "config_hash": cell.config_hash,
        "scenario": case.scenario.id, "repeat": case.repeat, "persona": cell.persona,
        "provider": cell.provider, "model": cell.model_name, "model_spec": cell.model,
        "temperature": cell.temperature, "variation": cell.variation.name,
        "strategy": cell.strategy, "category": case.scenario.category,
        "status": state, "success": state == "ok",
        "checks_passed": len(checks) - len(failed), "checks_total": len(checks),
        "failed_checks": [c.id for c in failed],
        "check_details": {c.id: c.description for c in failed},
        "latency_s": round(sum(t.latency_s for t in turns), 4),
        "model_calls": sum(t.llm_calls for t in turns),
        "iterations": sum(t.iterations for t in turns),
        "turn_iterations": [t.iterations for t in turns],
        "turn_model_calls": [t.llm_calls for t in turns],
        "stopped_by_cap": any(t.stopped_by_cap for t in turns),
        **_calls(turns), **_tools(turns), **_usage(ctx, case, turns, cache),
        "response_chars": len(answer), "response_words": len(answer.split()),
        **style([t.answer for t in turns]), **(verdict.columns() if verdict else {}),
        "answer": answer, "error_type": error_type, "error_message": error_message,
        "seed": case.seed, "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "package_version": ctx.package_version, "git_commit": ctx.git_commit,
        **_measures(ctx, case, talk, checks, state),
    })


def _transcript(case: Case, talk: Any, checks: list[CheckResult], row: CaseRow,
                verdict: Verdict | None, judge: str | None) -> dict[str, Any]:
    cell = case.cell
    messages = conversation(talk.history)
    turns = [turn_record(user, result, messages[i] if i < len(messages) else [])
             for i, (user, result) in enumerate(zip(case.scenario.turns, talk.turns,
                                                    strict=False))]
    transcript: dict[str, Any] = {
        "case_key": case.key, "status": row.status,
        "config": {"persona": cell.persona, "model": cell.model,
                   "temperature": cell.temperature, "variation": cell.variation.name,
                   "strategy": cell.strategy, "routing": cell.routing or None,
                   **cell.model_settings, "prompt_hash": cell.prompt_hash},
        "config_hash": cell.config_hash, "scenario": case.scenario.id,
        "repeat": case.repeat, "seed": case.seed,
        "checks": [[c.id, c.passed, c.description, c.tag] for c in checks], "turns": turns}
    if row.error_type:
        transcript["error"] = {"type": row.error_type, "message": row.error_message}
    if row.cache_hits:
        transcript["cache_hits"] = row.cache_hits
    if verdict is not None:
        transcript["judge"] = verdict.record(judge)
    return transcript


def case_record(ctx: Any, case: Case, talk: Any, checks: list[CheckResult], cache: CacheTally,
                verdict: Verdict | None) -> CaseRecord:
    row = _row(ctx, case, talk, checks, cache, verdict)
    judge = ctx.judge.spec if ctx.judge is not None else None
    return CaseRecord(row, _transcript(case, talk, checks, row, verdict, judge))
