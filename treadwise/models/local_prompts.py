"""The short prompts a small local model reads, one per step: call, pick, arguments, answer."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from treadwise.models import chatml
from treadwise.models.local_examples import Example, closest, examples
from treadwise.models.tool_grammar import function_of

# What a 135M model keeps of the system prompt: the persona's opening paragraph.
ESSENTIAL_TOKENS = 160
LOCAL_RULES = ("Use a tool for every calculation and for every fact about TreadWise. Never make "
               "up prices, phone numbers, web addresses or opening hours.")
CALL_INTRO = ("To use a tool, reply with only this line:\n"
              '<tool_call>{"name": "TOOL", "arguments": {ARGUMENTS}}</tool_call>\nTools:')
PICK_INTRO = "Choose the tool for the customer's message. Reply with the tool's name only.\nTools:"
ARGS_INTRO = ("Write the arguments of the tool {name} for the customer's message, as one JSON "
              "object with every argument.\n{name}: {summary}\nArguments:")
ANSWER_INTRO = ("Answer the customer's question in one or two sentences, using only the facts "
                "given. Do not add prices, phone numbers, web addresses or other facts.")
RESULT_CHARS = 300
MAX_QUOTED_LINES = 16
EXAMPLE_COUNT = 5
# A call example is three times a pick's length, and every one is read anew for each message.
CALL_EXAMPLES = 3
# Voice parts around a grounded answer, by the tool that produced the result.
FRAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "check_service_availability": (("availability_opener", "opener"),
                                   ("availability_closer", "closer")),
    "get_tire_recommendation": (("recommendation_opener", "opener"),
                                ("recommendation_closer", "closer")),
    "get_business_info": (("info_opener", "opener"), ("info_closer", "closer")),
}
MATH_FRAME = (("math_opener", "opener"), ("math_closer",))


def _paragraphs(system: str) -> list[str]:
    """The system prompt's paragraphs that say who is speaking ("You are ..."), else its first:
    the assistant's role and the persona's voice, not the rules and notes between them."""
    paragraphs = [p.strip() for p in system.strip().split("\n\n") if p.strip()]
    who = [p for p in paragraphs if p.startswith("You are")]
    return who[:2] or paragraphs[:1]


def persona_speaks(system: str, persona: Any) -> bool:
    """Whether who speaks in `system` (what the call, answer and prose steps' first block
    takes from it) is the persona's own text. A strategy's plan, which the model wrote from the
    customer's words, may also sit in a system message, and a custom prompt may put it first."""
    if not (hasattr(persona, "name") and hasattr(persona, "style")):
        return False
    from treadwise.agent.prompts import build_system_prompt

    return _paragraphs(system) == _paragraphs(build_system_prompt(persona))


def essentials(system: str, count: Callable[[str], int]) -> str:
    """Who speaks (cut to ESSENTIAL_TOKENS, whole sentences) and the local rules."""
    kept = ""
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(_paragraphs(system))):
        if kept and count(f"{kept} {sentence}") > ESSENTIAL_TOKENS:
            break
        kept = f"{kept} {sentence}".strip()
    return f"{kept}\n\n{LOCAL_RULES}" if kept else LOCAL_RULES


def persona_line(system: str) -> str:
    """Who is speaking, in one sentence: the persona's "You are the ...", else the first."""
    paragraphs = _paragraphs(system)
    return re.split(r"(?<=[.!?])\s+", paragraphs[-1])[0] if paragraphs else ""


def _listing(tools: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(f"- {function_of(t)['name']}: "
                     f"{chatml.summary(function_of(t).get('description', ''))}" for t in tools)


def _names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    return [function_of(t)["name"] for t in tools]


def call_text(name: str, args: Mapping[str, Any]) -> str:
    return chatml.OPEN + json.dumps({"name": name, "arguments": dict(args)}) + chatml.CLOSE


def _exchange(ask: str, reply: str) -> list[str]:
    return [chatml.render_message(HumanMessage(ask)), chatml.render_message(AIMessage(reply))]


def call_head(head: str, tools: Sequence[Mapping[str, Any]], forced: str | None = None) -> str:
    """The first block of a reply that is a tool call or prose: who speaks and the tools."""
    lines = [head, "", CALL_INTRO, _listing(tools)]
    if forced:
        lines.append(f"Call the tool {forced} now.")
    return chatml.system_block("\n".join(lines))


def call_prompt(first: str, tools: Sequence[Mapping[str, Any]], question: str,
                body: list[str]) -> list[str]:
    """``first`` (call_head), the closest examples in the call format, then the conversation
    ``body`` (blocks ending with the assistant's header)."""
    shown = closest(question, _names(tools), CALL_EXAMPLES)
    return [first, *(b for e in shown for b in _exchange(e.ask, call_text(e.tool, e.args))),
            *body]


def pick_labels(names: Sequence[str]) -> dict[str, str]:
    """label -> tool name for the pick step. A verb several tools start with is left out
    (get_business_info -> business_info): the model's first token then names one tool, and
    greedy choice is not skewed to whichever verb the most tools share."""
    heads = [n.split("_", 1)[0] for n in names]
    labels: dict[str, str] = {}
    for name, head in zip(names, heads, strict=True):
        rest = name.split("_", 1)[1] if "_" in name else ""
        shared = heads.count(head) > 1 or head in names and head != name
        label = rest if shared and rest and rest not in names else name
        labels[label if label not in labels else name] = name
    return labels


def pick_prompt(tools: Sequence[Mapping[str, Any]], question: str) -> list[str]:
    """Which tool the message needs: the list, the closest examples, the message."""
    labels = pick_labels(_names(tools))
    label_of = {name: label for label, name in labels.items()}
    listing = "\n".join(f"- {label_of[function_of(t)['name']]}: "
                        f"{chatml.summary(function_of(t).get('description', ''))}"
                        for t in tools)
    names = set(_names(tools))
    # Every example of these tools rides in the first block, read once and kept (a saved
    # state per tool list); the closest few come again last, where the model copies them.
    every = "".join(b for e in examples() if e.tool in names
                    for b in _exchange(e.ask, label_of[e.tool]))
    head = chatml.system_block(f"{PICK_INTRO}\n{listing}") + every
    shown = closest(question, _names(tools), EXAMPLE_COUNT)
    return [head, *(b for e in shown for b in _exchange(e.ask, label_of[e.tool])),
            *_exchange_open(question)]


def _parameter_lines(tool: Mapping[str, Any]) -> str:
    params = function_of(tool).get("parameters") or {}
    lines = []
    for name, spec in (params.get("properties") or {}).items():
        kinds = [spec.get("type")] if spec.get("type") else \
            [o.get("type") for o in spec.get("anyOf") or () if o.get("type")]
        kind = " or ".join(k for k in kinds if k) or "value"
        lines.append(f"- {name} ({kind}): {chatml.summary(spec.get('description', ''), 16)}")
    return "\n".join(lines)


def arguments_prompt(tool: Mapping[str, Any], question: str) -> list[str]:
    """The arguments of one chosen tool: its parameters, its closest examples, the message."""
    function = function_of(tool)
    intro = ARGS_INTRO.format(name=function["name"],
                              summary=chatml.summary(function.get("description", "")))
    shown: list[Example] = closest(question, [function["name"]], 1)
    return [chatml.system_block(f"{intro}\n{_parameter_lines(tool)}"),
            *(b for e in shown for b in _exchange(e.ask, json.dumps(e.args))),
            *_exchange_open(question)]


def _exchange_open(question: str) -> list[str]:
    return [chatml.render_message(HumanMessage(question)), "<|im_start|>assistant\n"]


def result_lines(results: Sequence[ToolMessage]) -> list[str]:
    """The results' sentences and list items, each on its own, in order, without repeats: what
    a grounded answer may quote."""
    lines: list[str] = []
    for result in results:
        for raw in result.text.splitlines():
            line = raw.strip().lstrip("-*• ").strip()
            for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", line):
                sentence = sentence.strip()[:RESULT_CHARS]
                if sentence and sentence not in lines:
                    lines.append(sentence)
    return lines[:MAX_QUOTED_LINES]


def answer_prompt(system: str, question: str, results: Sequence[ToolMessage]) -> list[str]:
    """A grounded answer: who speaks and the rule, then only the results and the question.
    No worked example: SmolLM2 repeated an example's answer for unrelated questions."""
    head = chatml.system_block(f"{persona_line(system)}\n{ANSWER_INTRO}")
    facts = "\n".join(f"- {line}" for line in result_lines(results))
    return [head, *_exchange_open(f"Facts:\n{facts}\nQuestion: {question}")]


def voice_frame(persona: Any, results: Sequence[ToolMessage], temperature: float,
                rng: random.Random) -> tuple[str, str]:
    """(opener, closer) in the persona's voice for an answer written from these results."""
    from treadwise.rules.voice import Voice

    if persona is None:
        return "", ""
    last = next((r.name for r in reversed(results) if r.status != "error"), None)
    from treadwise.tools.math import PLAIN_TOOLS

    frame = MATH_FRAME if last in {*PLAIN_TOOLS, "plot_area"} else FRAMES.get(
        last or "", (("opener",), ("closer",)))
    voice = Voice(persona, rng, temperature)
    return voice.pick(*frame[0]), voice.pick(*frame[1])


def conversation_body(messages: Sequence[BaseMessage], fits: Callable[[list[str]], bool]
                      ) -> list[str]:
    """The latest turns that fit, as blocks ending with the assistant's header."""
    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    for start in [0, *starts[1:]]:
        body = chatml.conversation(messages[start:])
        if fits(body):
            return body
    return chatml.conversation(messages[starts[-1]:] if starts else messages)
