"""One call of a small local model as steps: pick a tool, write its arguments, or answer."""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, get_args

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from treadwise.conversation import current_turn, turn_start
from treadwise.models import chatml
from treadwise.models import local_grounding as grounding
from treadwise.models import local_prompts as prompts
from treadwise.models.llamacpp import Constraint, Generation, LlamaEngine, Sampling
from treadwise.models.local_examples import small_talk
from treadwise.models.tool_grammar import (
    Held,
    arguments_grammar,
    call_grammar,
    choice_grammar,
    function_of,
    is_prose,
    quote_grammar,
)

Decoding = Literal["free", "constrained"]
# With grounding on, a held call's values are those the conversation grounds (evidence/).
Grounding = Literal["on", "off"]
GROUNDINGS: tuple[str, ...] = ("on", "off")
# Which tools the model is given is the agent's routing (agent/routing.py, for every model);
# "tool" adds a first step in which the model picks one of them.
Routing = Literal["none", "tool"]
DECODINGS: tuple[str, ...] = get_args(Decoding)
ROUTINGS: tuple[str, ...] = get_args(Routing)
# The settings that measured best on the local mini-study (see the report).
DEFAULT_DECODING: Decoding = "constrained"
DEFAULT_ROUTING: Routing = "tool"
# A call's JSON needs room whatever the reply limit; a name needs a few tokens.
CALL_TOKENS = 160
PICK_TOKENS = 16
# A quoted answer is cut only where a line ends, so it may run past the reply limit a little.
QUOTE_TOKENS = 200
HISTORY_TOKENS = 1536


@dataclass
class Options:
    """How the model decides: held to grammars or free, and how the tools are narrowed."""

    decoding: Decoding = DEFAULT_DECODING
    routing: Routing = DEFAULT_ROUTING
    grounding: Grounding = "on"
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int = 256
    timeout_s: float = 60.0
    repeat_penalty: float = Sampling.repeat_penalty


@dataclass
class StepRecord:
    """One generation of a call: which step, what it read and wrote."""

    step: str
    stats: Generation = field(default_factory=Generation)


class LocalTurn:
    """Runs one model call: ``run()`` yields the prose as it is written; afterwards ``calls``
    holds the tool calls (if any) and ``steps`` what each generation cost."""

    def __init__(self, engine: LlamaEngine, options: Options, messages: Sequence[BaseMessage],
                 tools: Sequence[Mapping[str, Any]], tool_choice: Any = None,
                 persona: Any = None):
        self.engine, self.options, self.persona = engine, options, persona
        self.system = chatml.system_text(messages)
        self.history = [m for m in messages if not isinstance(m, SystemMessage)]
        start = turn_start(self.history)
        self.question = self.history[start].text if start >= 0 else ""
        self.turn = current_turn(self.history) if start >= 0 else []
        self.results = [m for m in self.turn if isinstance(m, ToolMessage)]
        self.tool_choice = tool_choice
        self.offered = [] if tool_choice == "none" else list(tools)
        self.calls: list[chatml.ParsedCall] = []
        self.steps: list[StepRecord] = []
        self.deadline = time.monotonic() + options.timeout_s

    @property
    def constrained(self) -> bool:
        return self.options.decoding == "constrained"

    @cached_property
    def held(self) -> Held | None:
        """The values each declared tool argument may take (local_grounding.held)."""
        if not self.constrained or self.options.grounding != "on":
            return None
        return grounding.held(self.history, [function_of(t)["name"] for t in self.offered])

    @property
    def retrying(self) -> bool:
        return self.options.grounding == "on" and grounding.retrying(self.results)

    def _next_step(self) -> str | None:
        if self.options.grounding != "on":
            return None
        return grounding.next_step(self.question, self.results)

    def run(self) -> Generator[str, None, None]:
        forced = chatml.tool_choice_name(self.tool_choice)
        must_call = forced is not None or self.tool_choice in ("any", "required", True)
        tools = [] if small_talk(self.question) and not must_call else self.offered
        if forced and (chosen := self._tool(forced)) is not None:
            yield from self._call_or_answer(self._arguments(chosen))
        elif not tools:
            yield from self._answer()
        elif self.options.routing == "tool" and not must_call:
            # One tool a turn: picking again after a result, SmolLM2 chained nothing right
            # and sent availability answers on to record_customer_interest with made-up data.
            if self.retrying:
                # The one retry: the refused tool is not offered again (a small model at
                # temperature 0 would pick it again), the rest are, values still held.
                refused = self.results[-1].name
                yield from self._call_or_answer(
                    self._pick([t for t in tools if function_of(t)["name"] != refused]))
            elif (step := self._next_step()) is not None:
                call = self._pick(tools, step)
                if call is not None and self._repeated(call):
                    # Picking the first step's call again: the step's tool is another one.
                    call = self._pick([t for t in tools if function_of(t)["name"] != call.name],
                                      step)
                yield from self._call_or_answer(call)
            elif self.results:
                yield from self._answer()
            else:
                yield from self._call_or_answer(self._pick(tools))
        else:
            yield from self._single(tools, must_call)

    def _tool(self, name: str) -> Mapping[str, Any] | None:
        return next((t for t in self.offered if function_of(t)["name"] == name), None)

    def _generate(self, step: str, blocks: list[str], max_tokens: int,
                  constraint: Constraint | None = None) -> Generator[str, None, None]:
        record = StepRecord(step)
        self.steps.append(record)
        o = self.options
        # Names and arguments are copied from the message: a repeat penalty turned "100" into
        # "10" (the second 0 was penalised), so only prose is penalised for repeating itself.
        penalty = 1.0 if step in ("pick", "arguments") else o.repeat_penalty
        return self.engine.generate(
            blocks, max_tokens=max_tokens, temperature=o.temperature, seed=o.seed,
            timeout_s=max(0.0, self.deadline - time.monotonic()), stats=record.stats,
            sampling=Sampling(repeat_penalty=penalty), constraint=constraint,
            # On disk for other processes only a first block with nothing from the conversation:
            # the pick and arguments steps' (tools, examples), or the persona's own who-speaks.
            shared=step in ("pick", "arguments")
            or prompts.persona_speaks(self.system, self.persona))

    def _count(self, text: str) -> int:
        return len(self.engine.block_tokens(text))

    def _fits(self, head: list[str]) -> Any:
        used = sum(self._count(b) for b in head)
        return lambda body: used + sum(self._count(b) for b in body) <= HISTORY_TOKENS

    def _head(self) -> str:
        return prompts.essentials(self.system, self._count)

    def _body(self, head: list[str]) -> list[str]:
        """The conversation: after a tool result only this turn, so the model reads the
        question and what the tools said, not older turns."""
        if self.results:
            return chatml.conversation(self.history[turn_start(self.history):])
        return prompts.conversation_body(self.history, self._fits(head))

    def _call_or_answer(self, call: chatml.ParsedCall | None) -> Generator[str, None, None]:
        if call is None or self._repeated(call):
            yield from self._answer()
        else:
            self.calls = [call]

    def _repeated(self, call: chatml.ParsedCall) -> bool:
        """The same call again in this turn: the model is looping, so it answers instead."""
        made = [c for m in self.turn if isinstance(m, AIMessage) for c in m.tool_calls]
        return any(c["name"] == call.name and c["args"] == call.args for c in made)

    def _pick(self, tools: Sequence[Mapping[str, Any]], ask: str | None = None
              ) -> chatml.ParsedCall | None:
        """The tool the model picks from the short list for ``ask`` (default: the question),
        with its arguments."""
        if not tools:
            return None
        ask = ask or self.question
        labels = prompts.pick_labels([function_of(t)["name"] for t in tools])
        constraint = Constraint(choice_grammar(list(labels))) if self.constrained else None
        blocks = prompts.pick_prompt(tools, ask)
        with closing(self._generate("pick", blocks, PICK_TOKENS, constraint)) as pieces:
            text = "".join(pieces).strip()
        if not self.constrained:
            # Free: the first word is the choice, whether or not such a tool exists.
            text = (re.findall(r"[A-Za-z_][\w.-]*", text) or [""])[0]
        if not text:
            return None
        chosen = self._tool(labels.get(text, text))
        if chosen is None:
            # An invented name stays a call, so the tools answer that no such tool exists.
            return chatml.ParsedCall(text, {}, text)
        return self._arguments(chosen, ask)

    def _arguments(self, tool: Mapping[str, Any], ask: str | None = None
                   ) -> chatml.ParsedCall | None:
        name = function_of(tool)["name"]
        constraint = Constraint(arguments_grammar(tool, self.held)) if self.constrained \
            else None
        blocks = prompts.arguments_prompt(tool, ask or self.question)
        with closing(self._generate("arguments", blocks,
                                    CALL_TOKENS, constraint)) as pieces:
            text = "".join(pieces).strip()
        if self.steps[-1].stats.finish_reason != "stop" and self.constrained:
            return None  # cut off before the object closed: no half call
        try:
            args = json.loads(text)
        except ValueError:
            return chatml.ParsedCall(name, None, text, "its arguments are not valid JSON")
        if not isinstance(args, dict):
            return chatml.ParsedCall(name, None, text, "its arguments are not a JSON object")
        return chatml.ParsedCall(name, args, text)

    def _single(self, tools: Sequence[Mapping[str, Any]],
                must_call: bool) -> Generator[str, None, None]:
        """One reply that is a call or prose, every tool offered at once."""
        first = prompts.call_head(self._head(), tools, chatml.tool_choice_name(self.tool_choice))
        blocks = prompts.call_prompt(first, tools, self.question, self._body([first]))
        constraint = Constraint(call_grammar(tools, prose=not must_call, held=self.held),
                                released=is_prose) if self.constrained else None
        budget = max(self.options.max_tokens, CALL_TOKENS)
        # Free, a reply may open with a call in any spelling the parser reads; held to the
        # grammar, only the call tag opens one.
        gate = _Gate([] if self.constrained else [function_of(t)["name"] for t in tools])
        with closing(self._generate("call", blocks, budget, constraint)) as pieces:
            for piece in pieces:
                shown = gate.feed(piece)
                if gate.prose and self.results:
                    break  # the answer is written from the answer prompt instead
                if shown:
                    yield shown
                if gate.prose and self.steps[-1].stats.output_tokens >= self.options.max_tokens:
                    break
        if gate.prose and self.results:
            yield from self._answer()
        elif self.constrained:
            if gate.prose:
                # Prose is free after its opening; call syntax later in it is not a call.
                yield gate.text[gate.sent:].split(chatml.OPEN, 1)[0]
            else:
                yield from self._call_or_answer(_strict_call(gate.text, tools))
        else:
            prose, calls = chatml.parse_reply(gate.text, tools)
            self.calls = [c for c in calls if not self._repeated(c)]
            if calls and not self.calls:
                yield from self._answer()  # it only repeated a call: its prose is no answer
            elif tail := gate.rest(prose):
                yield tail

    def _answer(self) -> Generator[str, None, None]:
        """Prose: from the tool results when there are any (then in the persona's voice),
        else from the persona's essentials and the conversation."""
        if not self.results:
            with closing(self._generate("answer", self.prose_blocks(),
                                        self.options.max_tokens)) as pieces:
                yield from pieces
            return
        opener, closer = prompts.voice_frame(self.persona, self.results,
                                             self.options.temperature, self._rng())
        if opener:
            yield opener + " "
        if self.options.grounding == "on" and (steps := grounding.chain(self.question,
                                                                        self.results)):
            # A two-step ask's answer is each step's statement in turn, the last one final
            # (quoting, SmolLM2 stopped after the first: "5 + 4 = 9" for "... then square it").
            yield "\n".join(steps) + (_joiner(steps[-1]) + closer if closer else "")
            return
        blocks = prompts.answer_prompt(self.system, self.question, self.results)
        # Held to the grammar, the answer quotes the results' own sentences and nothing else.
        lines = prompts.result_lines(self.results)
        constraint = Constraint(quote_grammar(lines)) if self.constrained and lines else None
        budget = self.options.max_tokens if constraint is None else \
            max(self.options.max_tokens, QUOTE_TOKENS)
        with closing(self._generate("answer", blocks, budget, constraint)) as pieces:
            text = ""
            for piece in _new_lines(pieces) if constraint else pieces:
                text += piece
                yield piece
        if closer:
            yield _joiner(text) + closer

    def prose_blocks(self) -> list[str]:
        """The prompt of an answer without tool results: the persona's essentials and the
        latest turns that fit."""
        head = [chatml.system_block(self._head())]
        return [*head, *self._body(head)]

    def _rng(self) -> random.Random:
        if self.options.seed is None:
            return random.Random()
        digest = hashlib.sha256(f"{self.options.seed}|{self.question}".encode()).hexdigest()
        return random.Random(int(digest[:16], 16))


def _strict_call(text: str, tools: Sequence[Mapping[str, Any]]) -> chatml.ParsedCall | None:
    """The call a grammar-held reply wrote, or None when it was cut off before it closed."""
    body = text.strip()
    if not (body.startswith(chatml.OPEN) and body.endswith(chatml.CLOSE)):
        return None
    try:
        data = json.loads(body[len(chatml.OPEN):-len(chatml.CLOSE)])
    except ValueError:
        return None
    names = {function_of(t)["name"] for t in tools}
    if not isinstance(data, dict) or data.get("name") not in names \
            or not isinstance(data.get("arguments"), dict):
        return None
    return chatml.ParsedCall(data["name"], data["arguments"], body)


def _joiner(text: str) -> str:
    """What goes between an answer and the persona's closing line."""
    text = text.rstrip()
    return " " if not text or text.endswith((".", "!", "?", ":")) else ". "


def _new_lines(pieces: Iterable[str]) -> Iterator[str]:
    """Quoted lines as they complete, each once: the grammar lets a line be quoted twice."""
    seen: set[str] = set()
    line = ""
    for piece in pieces:
        line += piece
        *done, line = line.split("\n")
        for text in done:
            if text not in seen:
                yield ("\n" if seen else "") + text
                seen.add(text)
    if line and line not in seen:
        yield ("\n" if seen else "") + line


class _Gate:
    """Lets prose through as it is generated and holds back whatever may be a tool call, so the
    user never watches raw call syntax stream by."""

    def __init__(self, names: Sequence[str]):
        self.calls = [chatml.OPEN, *(f"{n}(" for n in names)]
        self.text = ""
        self.sent = -1  # where unsent text starts; -1 until the reply is known to be prose
        self.holding = False

    @property
    def prose(self) -> bool:
        return self.sent >= 0

    def _opening(self, head: str) -> str:
        if head[:1] in ("{", "[", "`") or head.startswith(tuple(self.calls)):
            return "call"
        return "wait" if any(c.startswith(head) for c in self.calls) else "prose"

    def feed(self, piece: str) -> str:
        self.text += piece
        if self.holding:
            return ""
        if self.sent < 0:
            head = self.text.lstrip()
            opening = self._opening(head) if head else "wait"
            self.holding = opening == "call"
            if opening != "prose":
                return ""
            self.sent = len(self.text) - len(head)
        cut = self.text.find(chatml.OPEN, self.sent)
        if cut >= 0:
            self.holding = True
        else:
            # Keep back a tail that may be the start of a call tag.
            start = max(self.sent, len(self.text) - len(chatml.OPEN) + 1)
            cut = next((i for i in range(start, len(self.text))
                        if chatml.OPEN.startswith(self.text[i:])), len(self.text))
        out, self.sent = self.text[self.sent:cut], cut
        return out

    def rest(self, prose: str) -> str:
        """What is still to send once the reply is complete and ``prose`` is its text."""
        sent = self.text[:max(self.sent, 0)].lstrip()
        return prose[len(sent):] if prose.startswith(sent) else ""
