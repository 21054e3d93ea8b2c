"""Questions about the conversation itself: what was asked, the last answer again, a recap."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from treadwise.conversation import EMPTY_REPLY_NUDGE, stage_of
from treadwise.personas import load_personas
from treadwise.rules.dialogue import MATH_TOOLS, DialogueState
from treadwise.rules.mathwords import strip_padding
from treadwise.rules.plan import Plan, ask
from treadwise.tools.artifacts import words_of

# Whole messages (padding and punctuation removed) that ask about the conversation, by the
# reply part that answers them.
_ASKED = (r"what (?:did|was it) i (?:just |last |first )?(?:ask|asked|say|type|write|want)"
          r"(?: (?:you|for|about|earlier|before|last|again|just now|a minute ago))*"
          r"|what (?:was|is|were) my (?:last |previous |first |earlier )?(?:question|message"
          r"|request)s?(?: again)?|remind me what i (?:just )?(?:asked|said)(?: you)?"
          r"|do you (?:remember|know) what i (?:just )?(?:asked|said)(?: you)?")
_ANSWER = (r"what(?: was| is|'s) (?:the|your|that) (?:last |previous |final )?(?:answer|result"
           r"|reply|response)(?: again| you gave(?: me)?)*"
           r"|what did you (?:just )?(?:say|answer|tell me|reply|find|get)(?: again| before)*"
           r"|remind me (?:of )?(?:the|your) (?:last )?(?:answer|result|reply)")
_REPEAT = (r"(?:repeat|say) (?:that|it|this|your (?:last )?(?:answer|reply|message)"
           r"|the (?:last )?(?:answer|reply))(?: again| one more time)*|repeat(?: yourself)?"
           r"|(?:say|show) (?:that|it) (?:again|once more)|come again|one more time|again")
_RECAP = (r"(?:summari[sz]e|recap|sum up|go over)(?: (?:our|the|this|what we|my) (?:whole )?"
          r"(?:chat|conversation|discussion|talk|session|exchange|said|discussed|talked"
          r" about)(?: so far)?)?|(?:a |the )?(?:summary|recap)(?: of (?:our|the|this) "
          r"(?:chat|conversation|discussion|session))?(?: so far)?"
          r"|what (?:have|did) we (?:talk(?:ed)?|discuss(?:ed)?|cover(?:ed)?|say|said)"
          r"(?: about)?(?: so far)?")
KINDS = {"recall_question": _ASKED, "recall_answer": _ANSWER, "repeat": _REPEAT,
         "summary": _RECAP}
_PATTERNS = {part: re.compile(pattern) for part, pattern in KINDS.items()}
_PADDING = re.compile(r"^(?:(?:sorry|um+|hm+|ok(?:ay)?|so|and|but|wait|hey)\s+)+"
                      r"|\s+(?:again|please|for me)$")
# Voice parts that frame a reply rather than say anything: left out when it is recalled.
FRAME_PARTS = ("opener", "closer", "math_opener", "math_closer", "info_opener", "info_closer",
               "recommendation_opener", "recommendation_closer", "availability_opener",
               "availability_closer", "safety_note", "lead_note", "math_caveat")
SUMMARY_TURNS = 8
QUOTE_CHARS, GIST_CHARS = 300, 240


@dataclass(frozen=True)
class Exchange:
    """One message the customer typed and what came of it."""

    question: str
    reply: str
    results: tuple[ToolMessage, ...]


def kind_of(core: str) -> str | None:
    """The reply part for a question about the conversation ("repeat that" -> repeat)."""
    flat = " ".join(re.sub(r"[^\w\s']+", " ", core.casefold().replace("\u2019", "'")).split())
    flat = _PADDING.sub("", flat)
    return next((part for part, pattern in _PATTERNS.items() if pattern.fullmatch(flat)), None)


def exchanges(history: Sequence[BaseMessage]) -> list[Exchange]:
    """The customer's messages and the replies they got, oldest first; stage material, our
    own nudges and earlier questions about the conversation are left out."""
    found: list[Exchange] = []
    question: str | None = None
    reply, results = "", list[ToolMessage]()
    for message in [*history, HumanMessage("")]:
        if isinstance(message, HumanMessage) and not stage_of(message) \
                and message.text != EMPTY_REPLY_NUDGE:
            if question and kind_of(strip_padding(question) or question) is None:
                found.append(Exchange(question, reply, tuple(results)))
            question, reply, results = message.text.strip(), "", []
        elif isinstance(message, ToolMessage):
            results.append(message)
        elif isinstance(message, AIMessage) and not message.tool_calls and message.text.strip():
            reply = message.text.strip()
    return found


def plan_recall(core: str, history: Sequence[BaseMessage], state: DialogueState) -> Plan | None:
    """The reply to a question about the conversation, from the conversation; None when the
    message asks something else. A question the assistant had asked stays open."""
    part = kind_of(core)
    if part is None:
        return None
    past = exchanges(history)
    answered = [e for e in past if e.reply]
    values: dict[str, str] = {}
    if part == "recall_question" and past:
        values["question"] = _clip(past[-1].question, QUOTE_CHARS)
    elif part in ("recall_answer", "repeat") and answered:
        values["answer"] = gist(answered[-1])
    elif part == "summary" and past:
        values["summary"] = _recap(past)
    else:
        part = "recall_nothing"
    return ask("recall", part, state.pending, options=state.options, values=values)


def gist(exchange: Exchange) -> str:
    """What a reply said: the math results it stated, else its words without the persona's
    opener and closer."""
    worked = [words_of(m) for m in exchange.results
              if m.name in MATH_TOOLS and m.status != "error"]
    if worked:
        return "; then ".join(_sentence(w).rstrip(".") for w in worked) + "."
    return _unframed(exchange.reply) or exchange.reply


def _recap(past: list[Exchange]) -> str:
    shown = past[-SUMMARY_TURNS:]
    lines = [f"{i}. You asked \"{_clip(e.question, 120)}\" and "
             + (f"I answered: {_clip(gist(e), GIST_CHARS)}" if e.reply else "it got no answer.")
             for i, e in enumerate(shown, 1)]
    if len(past) > len(shown):
        lines.insert(0, f"({len(past) - len(shown)} earlier messages not shown.)")
    return "\n".join(lines)


def _unframed(reply: str) -> str:
    """The reply without the framing phrases any persona puts around a body."""
    text = reply.strip()
    for _ in range(4):
        before = text
        for phrase in _frames():
            if text.startswith(phrase):
                text = text[len(phrase):].strip()
            if text.endswith(phrase):
                text = text[:-len(phrase)].strip()
        if text == before:
            break
    return text


@lru_cache(maxsize=1)
def _frames() -> tuple[str, ...]:
    found = {phrase.strip() for persona in load_personas().values() for part in FRAME_PARTS
             for phrase in persona.phrases(part) if "{" not in phrase}
    return tuple(sorted(found, key=len, reverse=True))


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "\u2026"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if not text or text[-1] in ".!?:" else text + "."
