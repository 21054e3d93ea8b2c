"""A turn's privacy outcomes, whatever the model said: erasure, access, others' data, claims.

The model (rule-based or an LLM) words the answer; these checks make it true. An erasure the
customer asked for runs even when the model did not call the tool; "What do you have about
me?" is answered from what this conversation holds; a question about other customers gets a
refusal in the persona's voice; and an answer that claims a privacy action which did not
happen ("I've removed that number", "I've deleted your data") is replaced.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage

from treadwise.agent.policy import (
    ERASE_TOOL,
    company_addresses,
    customer_messages,
    erase_refusal,
    erasure_confirmed,
)
from treadwise.conversation import current_turn
from treadwise.privacy import consent
from treadwise.privacy.emails import find_emails
from treadwise.privacy.redaction import findings
from treadwise.rules.privacy_replies import fallback
from treadwise.tools.artifacts import artifact_of
from treadwise.tools.business_results import ErasureResult

REMOVAL_CLAIM = re.compile(r"\b(?:i'?ve|i have|was|were|been)\s+(?:removed|redacted)\b"
                           r"|\bremoved (?:that|the|your|it)\b", re.I)
DELETION_CLAIM = re.compile(r"\b(?:i'?ve|i have|has been|have been|was|were|been)\s+"
                            r"(?:deleted|erased|wiped|forgotten)\b|\berasure complete\b"
                            r"|\bdeleted (?:your|all|everything)\b", re.I)


GENERAL_BOXES = ("privacy", "hello", "info", "contact", "support")


@dataclass(frozen=True)
class Outcome:
    """The answer people read, and whether this turn erased the conversation."""

    answer: str
    erased: bool = False  # the conversation's memory is to go with this turn
    settled: bool = False  # an erasure ran this turn: the answer says what it did


def say(part: str, persona: Any, **values: str) -> str:
    """The persona's phrase for a privacy reply (its own, else the built-in one)."""
    key = getattr(persona, "key", "friendly")
    phrases = (persona.phrases(part) if persona is not None else []) or fallback(part, key)
    return phrases[0].format(**values) if phrases else ""


def _erasures(turn: Sequence[AnyMessage]) -> list[ErasureResult | None]:
    """What each erasure of the turn did, read from its artifact."""
    return [_erasure(m) for m in turn
            if isinstance(m, ToolMessage) and m.name == ERASE_TOOL and m.status != "error"]


def _erasure(message: Any) -> ErasureResult | None:
    found = artifact_of(message)
    return found if isinstance(found, ErasureResult) else None


def _deleted(done: ErasureResult | None) -> bool:
    return done is not None and done.outcome == "deleted"


def erase_on_request(answer: str, messages: Sequence[AnyMessage], tools: Sequence[Any],
                     thread_id: str, persona: Any = None) -> Outcome:
    """The backstop for erasure: when the customer's latest message withdraws consent, asks
    for their data to go or refuses contact, and no erasure ran this turn, run it now; the
    answer then says truthfully what went. The conversation's memory goes too (`erased`) when
    the customer withdrew consent or asked for their data to go; a refusal of contact alone
    deletes what was recorded for contacting them."""
    latest = customer_messages(messages)[-1:]
    if not latest or erase_refusal(messages) is not None:
        return Outcome(answer)
    done = _erasures(current_turn(messages))
    if not done:
        tool = next((t for t in tools if getattr(t, "name", "") == ERASE_TOOL), None)
        if tool is None:
            return Outcome(answer)
        call = {"type": "tool_call", "id": f"erase-{thread_id}", "name": ERASE_TOOL, "args": {}}
        try:
            done = [_erasure(tool.invoke(call, config={"configurable": {"thread_id": thread_id}}))]
        except Exception as exc:  # noqa: BLE001 - a failed erasure is reported, never raised
            return Outcome(f"I couldn't delete your data right now ({type(exc).__name__}). "
                           "Please try again.")
        answer = "" if _deleted(done[-1]) else answer
    forget = consent.withdraws(consent.own_words(latest[0].text)) or erasure_confirmed(messages)
    if not forget and not _deleted(done[-1]):
        return Outcome(answer)
    said = _confirmed(answer, done[-1])
    return Outcome(f"{said} {_elsewhere(latest[0].text, done[-1], messages, persona)}".strip(),
                   erased=forget, settled=True)


def _confirmed(answer: str, done: ErasureResult | None) -> str:
    """The model's answer when it says what the erasure deleted (every address it named, and
    that it was deleted); else the erasure's own account, so the customer always reads what
    went (a small model may drop it for a sentence of its own)."""
    if done is not None and _deleted(done):
        # "deleted" in a sentence of the answer's own, not only a copied "Deleted:" label.
        if answer and "deleted" in answer and all(email in answer for email in done.emails):
            return answer
        return f"I've deleted {done.deleted.rstrip('.')}. Nobody will contact you."
    if answer and "nothing" in answer.casefold() and not DELETION_CLAIM.search(answer):
        return answer
    return ("Nothing was stored from this conversation, so there is nothing to delete; "
            "nobody will contact you.")


def _elsewhere(request: str, done: ErasureResult | None, messages: Sequence[AnyMessage],
               persona: Any) -> str:
    """For an address named in the request but never given in this conversation: how to ask
    the business (it is not erased on a visitor's word)."""
    from treadwise.privacy.erasure import given_addresses

    given = set(given_addresses(messages[:-1]))
    erased = {email.lower() for email in done.emails} if done is not None else set()
    named = [a.lower() for a in find_emails(request) if a.lower() not in given
             and a.lower() not in erased]
    if not named:
        return ""
    ours = sorted(company_addresses()[0])
    # The business's general address, not a sales desk's.
    general = [a for a in ours if a.partition("@")[0] in GENERAL_BOXES] + ours
    return say("erasure_elsewhere", persona, address=", ".join(named),
               contact=general[0] if general else "our team")


def privacy_answer(answer: str, messages: Sequence[AnyMessage], *, thread_id: str,
                   tools: Sequence[Any], persona: Any, store: Callable[[], Any], memory: Any,
                   raw: str | None = None) -> Outcome:
    """The answer after every privacy check of the turn; `store` opens the lead store (only
    an access request needs it, and a store that cannot be reached must not end the turn)."""
    latest = customer_messages(messages)[-1:]
    text = latest[0].text if latest else ""
    outcome = erase_on_request(answer, messages, tools, thread_id, persona)
    if outcome.settled:
        return outcome
    if text and consent.about_others(text):
        return Outcome(say("others_refused", persona))
    if text and consent.asks_access(text):
        from treadwise.privacy.erasure import holdings

        try:
            held = holdings(thread_id, store=store(), memory=memory).describe()
        except Exception as exc:  # noqa: BLE001 - said plainly, never guessed
            return Outcome(f"I couldn't read what this conversation holds right now "
                           f"({type(exc).__name__}). Please try again in a moment.")
        return Outcome(say("data_held", persona, held=held))
    return Outcome(honest(outcome.answer, raw if raw is not None else text, text, persona))


def honest(answer: str, typed: str, stored: str, persona: Any) -> str:
    """The answer, unless it claims a removal or a deletion that did not happen: "removed"
    only when the message held a secret and what memory keeps of it holds none; "deleted"
    never without an erasure (this function is reached only when none ran)."""
    if DELETION_CLAIM.search(answer):
        return say("nothing_deleted", persona)
    if REMOVAL_CLAIM.search(answer) and not (findings(typed) and not findings(stored)):
        return say("nothing_removed", persona)
    return answer
