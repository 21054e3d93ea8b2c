"""ChatML for local models: messages as prompt blocks, and tool calls read back from text."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_NAME = re.compile(r'"(?:name|function)"\s*:\s*"([^"]+)"')
_CALL_SYNTAX = re.compile(r"^\s*([A-Za-z_]\w*)\((.*)\)\s*\.?\s*$", re.S)
TRIMMED_NOTE = "(Shortened: use the tools for anything not written here.)"
ARG_KEYS = ("arguments", "parameters", "args", "input")


def summary(text: str, words: int = 12) -> str:
    """A tool description's first clause, at most a dozen words: a 135M model follows a few
    lines, not pages."""
    line = " ".join((text or "").split())
    line = re.split(r"[.:;(]\s|\s\(|[.:;]$", line, maxsplit=1)[0]
    cut = line.split(" ")
    return " ".join(cut[:words]) + ("..." if len(cut) > words else "")


def tool_choice_name(tool_choice: Any) -> str | None:
    """The one tool a tool_choice forces, in any of LangChain's spellings, else None."""
    if isinstance(tool_choice, dict):
        return (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "any", "required"):
        return tool_choice
    return None


def _header(role: str) -> str:
    return f"<|im_start|>{role}\n"


def _block(role: str, text: str) -> str:
    return f"{_header(role)}{text.strip()}<|im_end|>\n"


def _assistant_text(message: AIMessage) -> str:
    calls = [OPEN + json.dumps({"name": c["name"], "arguments": c["args"]}) + CLOSE
             for c in message.tool_calls]
    calls += [f"{OPEN}{c.get('args') or ''}{CLOSE}" for c in message.invalid_tool_calls]
    return "\n".join(part for part in [message.text.strip(), *calls] if part)


def _role_and_text(message: BaseMessage) -> tuple[str, str]:
    if isinstance(message, AIMessage):
        return "assistant", _assistant_text(message)
    if isinstance(message, ToolMessage):
        # Tool results arrive as a user turn: small chat models know only three roles.
        return "user", f"Result of {message.name or 'the tool'}: {message.text}"
    if isinstance(message, SystemMessage):
        return "system", message.text
    return "user", message.text


def render_message(message: BaseMessage) -> str:
    return _block(*_role_and_text(message))


def system_text(messages: Sequence[BaseMessage]) -> str:
    return "\n\n".join(m.text for m in messages if isinstance(m, SystemMessage)).strip()


def system_block(system: str) -> str:
    """The system message as the prompt's first block, which the engine keeps evaluated."""
    return _block("system", system)


def conversation(messages: Sequence[BaseMessage]) -> list[str]:
    """Every non-system message, then the assistant's turn to speak, as blocks: each role line
    and each message text is its own block (they tokenize apart: special tokens split them),
    so a new question still shares "<|im_start|>user" with the previous prompt."""
    blocks: list[str] = []
    for message in messages:
        if not isinstance(message, SystemMessage):
            role, text = _role_and_text(message)
            blocks += [_header(role), f"{text.strip()}<|im_end|>\n"]
    return [*blocks, _header("assistant")]


@dataclass
class ParsedCall:
    name: str
    args: dict[str, Any] | None
    raw: str
    error: str | None = None
    id: str = ""

    def __post_init__(self) -> None:
        self.id = self.id or f"call_{uuid.uuid4().hex[:12]}"


def _loads(text: str) -> Any:
    """LangChain's lenient JSON reader, the one streamed calls use (whole JSON parses as is)."""
    from langchain_core.utils.json import parse_partial_json

    return parse_partial_json(text)


def _call_from(obj: Any, raw: str) -> ParsedCall | None:
    if not isinstance(obj, dict):
        return None
    function = obj.get("function")
    if isinstance(function, dict):
        obj = function
    name = obj.get("name") or (function if isinstance(function, str) else None)
    if not isinstance(name, str) or not name:
        return None
    args: Any = next((obj[k] for k in ARG_KEYS if k in obj), {})
    if isinstance(args, str):
        try:
            args = _loads(args) if args.strip() else {}
        except ValueError:
            args = None
    if not isinstance(args, dict):
        return ParsedCall(name, None, raw, "its arguments are not a JSON object")
    return ParsedCall(name, args, raw)


def _calls_in(raw: str) -> list[ParsedCall]:
    """Every call written in one block: an object, a list of them, or text that is neither."""
    text = _FENCE.sub("", raw.strip()).strip()
    try:
        parsed = _loads(text)
    except ValueError:
        parsed = None
    items = parsed if isinstance(parsed, list) else [parsed]
    calls = [c for item in items if (c := _call_from(item, raw)) is not None]
    if calls:
        return calls
    name = _NAME.search(text)
    return [ParsedCall(name.group(1) if name else "", None, raw,
                       "its arguments are not valid JSON")]


def _positional(text: str, tools: Sequence[Mapping[str, Any]]) -> list[ParsedCall]:
    """add(5, 4): a whole reply in call syntax naming a real tool, arguments in schema order."""
    match = _CALL_SYNTAX.match(text)
    specs = {t.get("function", t)["name"]: t.get("function", t) for t in tools}
    if not match or match.group(1) not in specs:
        return []
    names = list((specs[match.group(1)].get("parameters") or {}).get("properties") or {})
    try:
        values = json.loads(f"[{match.group(2)}]")
    except ValueError:
        return [ParsedCall(match.group(1), None, text, "its arguments could not be read")]
    if len(values) > len(names):
        return [ParsedCall(match.group(1), None, text, "it has too many arguments")]
    return [ParsedCall(match.group(1), dict(zip(names, values, strict=False)), text)]


def parse_reply(text: str, tools: Sequence[Mapping[str, Any]]) -> tuple[str, list[ParsedCall]]:
    """(the prose, the tool calls) of a generated reply; with no tools offered, only prose."""
    if OPEN in text:
        prose = _BLOCK.sub("", text).strip()
        if not tools:
            return prose, []
        return prose, [c for raw in _BLOCK.findall(text) for c in _calls_in(raw)]
    stripped = _FENCE.sub("", text.strip()).strip()
    if tools and stripped[:1] in ("{", "["):
        calls = _calls_in(stripped)
        if calls and (calls[0].args is not None or calls[0].name):
            return "", calls
    if tools:
        if calls := _positional(stripped, tools):
            return "", calls
    return text.strip(), []

