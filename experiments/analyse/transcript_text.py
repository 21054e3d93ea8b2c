"""A transcript as text for a terminal (`python -m experiments show`): checks, then turns."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _short(value: Any, limit: int = 160) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _args(args: Any) -> str:
    if isinstance(args, dict):
        return ", ".join(f"{k}={v!r}" for k, v in args.items())
    return repr(args)


def _message_lines(message: dict[str, Any]) -> Iterator[str]:
    if "ai" in message:
        for call in message.get("calls", []):
            args = _args(call["args"]) if "args" in call else f"unreadable: {call['unreadable']}"
            yield f"  assistant calls {call['name']}({_short(args, 200)})"
        if message["ai"].strip():
            yield f"  assistant: {message['ai'].strip()}"
    elif "tool" in message:
        took = f" ({message['s']:.3g} s)" if "s" in message else ""
        if "error" in message:
            yield f"  tool {message['tool']}{took} ERROR: {_short(message['error'], 400)}"
        else:
            yield f"  tool {message['tool']}{took}: {_short(message['result'], 400)}"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _turn_header(i: int, turn: dict[str, Any]) -> str:
    usage = turn.get("usage") or {}
    parts = [f"{turn.get('latency_s', 0):.3f} s", _plural(turn.get("model_calls", 0), "model call"),
             _plural(turn.get("http_attempts", 0), "HTTP request"),
             f"tokens {usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)}"
             + (" (estimated)" if turn.get("usage_estimated") else "")]
    if turn.get("retry_wait_s"):
        parts.append(f"waited {turn['retry_wait_s']:.2f} s for retries")
    if turn.get("ttft_s") is not None:
        parts.append(f"first token {turn['ttft_s']:.3f} s")
    return f"turn {i} ({', '.join(parts)})"


def _judge_lines(judge: dict[str, Any]) -> list[str]:
    status = judge.get("status", "ok")
    head = (f"judge {judge.get('model')}: score {judge.get('score')} - {judge.get('reason')}"
            + ("" if status == "ok" else f" [{status.upper()}]"))
    samples = judge.get("samples") or []
    if len(samples) < 2:
        return [head]
    scores = ", ".join("-" if s.get("score") is None else str(s["score"]) for s in samples)
    return [head, f"  {len(samples)} samples: {scores} (agreement {judge.get('agreement')})"]


def render(transcript: dict[str, Any]) -> str:
    """The transcript as text for a terminal: checks first (failures marked), then turns."""
    config = transcript.get("config", {})
    lines = [f"case {transcript['case_key']}: {transcript.get('status', '?').upper()}",
             " / ".join(f"{k} {v}" for k, v in config.items())
             + f" / scenario {transcript.get('scenario')} / repeat {transcript.get('repeat')}"]
    if error := transcript.get("error"):
        lines.append(f"error ({error.get('type')}): {error.get('message')}")
    lines.append("checks:")
    lines += [f"  [{'pass' if check[1] else 'FAIL'}] {check[0]}: {check[2]}"
              + (f" ({check[3]})" if len(check) > 3 and check[3] else "")
              for check in transcript.get("checks", [])]
    if judge := transcript.get("judge"):
        lines += _judge_lines(judge)
    for i, turn in enumerate(transcript.get("turns", []), 1):
        lines += ["", _turn_header(i, turn), f"  user: {turn['user']}"]
        for message in turn.get("messages", []):
            lines.extend(_message_lines(message))
        if error := turn.get("error"):
            lines.append(f"  ERROR ({error['type']}): {error['message']}")
    return "\n".join(lines)
