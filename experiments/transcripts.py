"""Transcripts: every case's whole conversation as one compact JSON line in transcripts.jsonl."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from experiments.appending import AppendFile

TRANSCRIPTS_FILE = "transcripts.jsonl"


class TranscriptError(ValueError):
    """A case's transcript cannot be found (unknown key, ambiguous prefix, no file)."""


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
    if result.error is not None:
        record["error"] = result.error.to_dict()
    return record


def encode(transcript: dict[str, Any]) -> str:
    """One line of JSON, the case key first so a reader can find it without parsing."""
    ordered = {"case_key": transcript["case_key"], **transcript}
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"), default=str)


class TranscriptWriter:
    """Appends one line per case and flushes it; a kill leaves at most one partial line."""

    def __init__(self, path: Path):
        self.path = Path(path)
        repair(self.path)
        self._file = AppendFile(self.path)

    def write(self, transcript: dict[str, Any]) -> None:
        self._file.append(encode(transcript) + "\n")

    def close(self) -> None:
        self._file.close()


def repair(path: Path) -> int:
    """Cut a half-written last line off the file; return the bytes removed."""
    path = Path(path)
    if not path.exists():
        return 0
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        with path.open("r+b") as handle:
            handle.truncate(keep)
    return len(data) - keep


def read_transcripts(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Every complete transcript of a run, in the order the cases finished."""
    path = Path(run_dir) / TRANSCRIPTS_FILE
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                yield json.loads(line)
            except ValueError:
                continue  # the line a kill cut short


def _keys(path: Path) -> Iterator[tuple[str, str]]:
    marker = '{"case_key":"'
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith(marker) and line.endswith("\n"):
                yield line[len(marker):line.index('"', len(marker))], line


def find_transcript(run_dir: Path, case: str) -> dict[str, Any]:
    """The transcript of one case: its key, or any part of a key that only one case has.

    A case run again (--retry-errors) has several lines; the latest wins.
    """
    path = Path(run_dir) / TRANSCRIPTS_FILE
    if not path.exists():
        raise TranscriptError(f"{run_dir}: no {TRANSCRIPTS_FILE} (runs made before transcripts "
                              "existed have none)")
    return pick_transcript(_keys(path), case, run_dir)


def pick_transcript(lines: Iterable[tuple[str, str]], case: str, run: Any) -> dict[str, Any]:
    """Of (case key, JSON line) pairs, the one whose key is `case` or the only one containing
    it (a later line of the same key wins)."""
    exact, partial = None, {}
    for key, line in lines:
        if key == case:
            exact = line
        elif case in key:
            partial[key] = line
    if exact is not None:
        return json.loads(exact)
    if len(partial) == 1:
        return json.loads(next(iter(partial.values())))
    if not partial:
        raise TranscriptError(f"{run}: no case matches {case!r}")
    shown = ", ".join(sorted(partial)[:8]) + (" ..." if len(partial) > 8 else "")
    raise TranscriptError(f"{case!r} matches {len(partial)} cases: {shown}")


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


def render(transcript: dict[str, Any]) -> str:
    """The transcript as text for a terminal: checks first (failures marked), then turns."""
    config = transcript.get("config", {})
    lines = [f"case {transcript['case_key']}: {transcript.get('status', '?').upper()}",
             " / ".join(f"{k} {v}" for k, v in config.items())
             + f" / scenario {transcript.get('scenario')} / repeat {transcript.get('repeat')}"]
    if error := transcript.get("error"):
        lines.append(f"error ({error.get('type')}): {error.get('message')}")
    lines.append("checks:")
    lines += [f"  [{'pass' if passed else 'FAIL'}] {cid}: {why}"
              for cid, passed, why in transcript.get("checks", [])]
    if judge := transcript.get("judge"):
        lines.append(f"judge {judge.get('model')}: score {judge.get('score')} - "
                     f"{judge.get('reason')}")
    for i, turn in enumerate(transcript.get("turns", []), 1):
        lines += ["", _turn_header(i, turn), f"  user: {turn['user']}"]
        for message in turn.get("messages", []):
            lines.extend(_message_lines(message))
        if error := turn.get("error"):
            lines.append(f"  ERROR ({error['type']}): {error['message']}")
    return "\n".join(lines)
