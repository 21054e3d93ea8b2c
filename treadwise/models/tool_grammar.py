"""GBNF grammars from tool schemas: a call of a bound tool with schema-valid arguments, or prose."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from treadwise.models.chatml import CLOSE, OPEN

# Longest string argument the grammar lets a model write: a small model left free runs on
# until its token limit and the call is lost; nothing a tool takes needs more.
MAX_STRING = 160
# Prose may not open with these: "<" could be a call tag, "{", "[" or "`" a bare JSON call.
_PROSE_START = r"[^<{\[` \t\r\n]"


def function_of(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function part of an OpenAI tool dict (or the dict itself when it is one)."""
    return tool.get("function", tool)


# Values an argument may take, by tool and argument: those the conversation grounds
# (treadwise.evidence.arguments.held_values); an argument not listed is held by its type only.
Held = Mapping[str, Mapping[str, Sequence[Any]]]


def arguments_schema(tool: Mapping[str, Any], held: Held | None = None) -> dict[str, Any]:
    """The tool's parameter schema as the grammar holds it: every key, in order, and no other
    (a small model left to choose optional keys invented values for them), strings bounded,
    and the arguments ``held`` lists held to those values."""
    schema = copy.deepcopy(dict(function_of(tool).get("parameters") or {}))
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    schema["required"] = list(schema["properties"])
    values = (held or {}).get(function_of(tool)["name"], {})
    for key, prop in schema["properties"].items():
        if (enum := _typed(prop, values.get(key, ()))):
            schema["properties"][key] = {"enum": enum}
        else:
            _bound_strings(prop)
    return schema


def _typed(prop: Mapping[str, Any], values: Sequence[Any]) -> list[Any]:
    """The values as the property's JSON type takes them: 3 for a number, "3" for a string."""
    types = {prop.get("type"), *(o.get("type") for o in prop.get("anyOf") or ())}
    typed: list[Any] = []
    for value in values:
        if value is None:
            shown: Any = None if "null" in types else ...
        elif isinstance(value, int | float) and ("number" in types or (
                "integer" in types and float(value).is_integer())):
            shown = int(value) if "number" not in types else value
        elif "string" in types:
            shown = str(value)
        else:
            shown = ...
        if shown is not ... and shown not in typed:
            typed.append(shown)
    return typed


def _bound_strings(schema: dict[str, Any]) -> None:
    if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema:
        schema["maxLength"] = min(int(schema.get("maxLength", MAX_STRING)), MAX_STRING)
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or ():
            _bound_strings(option)


def _converter() -> Any:
    from llama_cpp.llama_grammar import SchemaConverter

    return SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)


def _literal(text: str) -> str:
    return json.dumps(text)


def _call_rules(tools: Sequence[Mapping[str, Any]], held: Held | None = None
                ) -> tuple[str, str]:
    """(the rules, the name of the rule for one whole call object of any of ``tools``)."""
    converter = _converter()
    branches = []
    for index, tool in enumerate(tools):
        name = function_of(tool)["name"]
        args = converter.visit(converter.resolve_refs(arguments_schema(tool, held), name),
                               f"args{index}")
        branches.append(f'"{{" space {_literal(_literal("name"))} space ":" space '
                        f'{_literal(_literal(name))} space "," space '
                        f'{_literal(_literal("arguments"))} space ":" space {args} "}}" space')
    return converter.format_grammar(), " | ".join(f"({b})" for b in branches)


def call_grammar(tools: Sequence[Mapping[str, Any]], *, prose: bool,
                 held: Held | None = None) -> str:
    """One ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` of one of ``tools``,
    its arguments held to that tool's schema (and to ``held``); with ``prose``, any text that
    opens otherwise."""
    rules, call = _call_rules(tools, held)
    root = f"call ::= {_literal(OPEN)} ({call}) {_literal(CLOSE)}"
    options = "call | prose" if prose else "call"
    return "\n".join([f"root ::= {options}", root, rules,
                      f"prose ::= {_PROSE_START} [^\\x00]*"])


def arguments_grammar(tool: Mapping[str, Any], held: Held | None = None) -> str:
    """A JSON object of the tool's arguments, held to its schema (and to ``held``)."""
    converter = _converter()
    schema = converter.resolve_refs(arguments_schema(tool, held), function_of(tool)["name"])
    converter.visit(schema, "")
    return converter.format_grammar()


def choice_grammar(options: Sequence[str]) -> str:
    """Exactly one of ``options``."""
    return "root ::= " + " | ".join(_literal(o) for o in options)


def quote_grammar(lines: Sequence[str], most: int = 3) -> str:
    """One to ``most`` of ``lines``, word for word, one a line: an answer that can say only
    what the tools said."""
    options = " | ".join(_literal(line) for line in lines)
    more = ' ("\\n" line)?' * (most - 1)
    return f"root ::= line{more}\nline ::= {options}"


def is_prose(text: str) -> bool:
    """The reply has opened with text that cannot be a call (the grammar may be let go)."""
    head = text.lstrip()
    return bool(head) and not OPEN.startswith(head[:len(OPEN)]) and head[0] not in "<{[`"
