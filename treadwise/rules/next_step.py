"""The offline model's policy: from a reading and the dialogue state to the next step."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage

from treadwise import profile
from treadwise.conversation import turn_start
from treadwise.rules import dialogue
from treadwise.rules.calculus_words import BOUNDS_RE, Earlier, read_calculus
from treadwise.rules.dialogue import DialogueState
from treadwise.rules.lead_collection import plan_contact
from treadwise.rules.mathwords import (
    Arithmetic,
    Unclear,
    arithmetic_call,
    read_arithmetic,
    substitute,
)
from treadwise.rules.noise import addressed, markup_only
from treadwise.rules.plan import PREVIOUS, Call, Plan, ask, single
from treadwise.rules.recall import plan_recall
from treadwise.rules.understanding import Reading, bare_place, understand

ARITHMETIC_METHOD = "exact arithmetic (fractions stay fractions), in the usual order of operations"
# Words that may stand before "tires" in "do you sell ... tires?" without naming a product
# we might not carry ("motorcycle tires" is such a product).
TIRE_QUALIFIERS = {"new", "good", "some", "the", "any", "cheap", "used", "all", "season",
                   "all-season", "summer", "your", "best", "quality", "premium", "budget",
                   "run-flat", "runflat", "replacement", "spare", "a", "set", "of", "four", "4"}
MATHY_RE = re.compile(r"\d\s*[-+*/^x\u00d7\u00f7%]|\b(?:plus|minus|times|divided|squared"
                      r"|factorial|sqrt|root|percent|power)\b", re.I)
# Math the rules do not do at all, asked about in a question: a question for the team.
BEYOND_RE = re.compile(r"\b(?:series|converg\w*|diverg\w*|sequences?|probabilit\w*|matri(?:x|ces)"
                       r"|determinants?|eigen\w*|primes?|proofs?|prove)\b", re.I)

Handler = Callable[[Reading, DialogueState], Plan | None]


def decide(reading: Reading, state: DialogueState) -> Plan:
    """The first handler that knows what to do with the message decides the turn."""
    for handler in HANDLERS:
        if (plan := handler(reading, state)) is not None:
            if reading.name:
                plan.remember.setdefault("name", reading.name)
            return plan
    raise AssertionError("the last handler always decides")  # pragma: no cover


def _empty(reading: Reading, state: DialogueState) -> Plan | None:
    return ask("empty", "greeting") if not reading.text else None


def _secret(reading: Reading, state: DialogueState) -> Plan | None:
    if reading.others:
        return ask("privacy", "others_refused")
    if reading.access:
        # The agent answers it from what this conversation holds (agent/privacy_turn.py).
        return ask("privacy", "data_held", values={"held": ""})
    return ask("secret", "refuse_secret") if reading.secret else None


def _private(reading: Reading, state: DialogueState) -> Plan | None:
    """Card details, passwords and ID numbers are removed before anyone reads them; say so."""
    if reading.card:
        return ask("privacy", "card_refused")
    return ask("privacy", "private_refused") if reading.private else None


def _markup(reading: Reading, state: DialogueState) -> Plan | None:
    """Pasted HTML is not read for topics: "<p>Open the app</p>" asks nothing about hours."""
    return ask("unknown", "not_understood") if markup_only(reading) else None


def _language(reading: Reading, state: DialogueState) -> Plan | None:
    if reading.language is None:
        return None
    return ask("language", "other_language", values={"language": reading.language})


def _pending(reading: Reading, state: DialogueState) -> Plan | None:
    """A reply to the assistant's own question fills the slot it asked for."""
    if state.pending == "city":
        place = reading.city or reading.place
        if place is None and not (reading.smalltalk or reading.answer or reading.topic
                                  or reading.vehicle or reading.usage or reading.question):
            place = bare_place(reading.text)
        if place:
            return _availability(place, reading.service or state.service)
    if state.pending == "vehicle" and reading.vehicle:
        return _recommend(reading.vehicle, reading.usage or state.usage)
    if state.pending == "math_choice" and reading.choice is not None and state.options:
        return _arithmetic(Arithmetic([state.options[min(reading.choice, 1)]]), state)
    return None


def _smalltalk(reading: Reading, state: DialogueState) -> Plan | None:
    if reading.introduction:
        return ask("smalltalk", "introduction", values={"name": reading.name})
    if reading.smalltalk is None:
        return None
    return ask("smalltalk", reading.smalltalk)


def _math(reading: Reading, state: DialogueState) -> Plan | None:
    text = reading.text
    bounds = BOUNDS_RE.search(" " + reading.core)
    if state.intent == "integral" and state.expression and reading.follow_up and bounds \
            and not re.search(r"integra", text, re.I):
        # "what about from 0 to 6?": the same integral with new bounds.
        text = f"integral of {state.expression}{bounds.group(0)}"
    if (calculus := read_calculus(text, Earlier(state.expression, state.formula))) is not None:
        return calculus
    found = read_arithmetic(text)
    if isinstance(found, Arithmetic):
        return _arithmetic(found, state)
    if isinstance(found, Unclear) and found.options:
        first, second = found.options[:2]
        return ask("arithmetic", "math_choice", "math_choice", options=[first, second],
                   values={"first": first, "second": second})
    if isinstance(found, Unclear):
        return ask("arithmetic", "math_unclear")
    return None


def _arithmetic(found: Arithmetic, state: DialogueState) -> Plan:
    steps: list[list[Call]] = []
    for i, clause in enumerate(found.clauses):
        if PREVIOUS in clause and i == 0:
            # "now multiply that by 3": the result of an earlier turn.
            if state.result is None:
                return ask("arithmetic", "need_result")
            clause = substitute(clause, state.result)
        steps.append([arithmetic_call(clause)])
    return Plan("arithmetic", steps, kind="math", method=ARITHMETIC_METHOD,
                remember={"intent": "arithmetic"})


def _tires(reading: Reading, state: DialogueState) -> Plan | None:
    if reading.topic == "pricing":
        return None
    follows = state.intent == "tires"
    if reading.vehicle and (reading.tires or reading.recommend or reading.usage or follows):
        usage = reading.usage or (state.usage if follows else None)
        return _recommend(reading.vehicle, usage)
    if follows and reading.usage and state.vehicle and not reading.city:
        return _recommend(state.vehicle, reading.usage)
    if reading.tires and reading.topic is None and (reading.recommend
                                                    or reading.product_question):
        if reading.product_question and _unknown_product(reading.core):
            return None
        return ask("tires", "ask_vehicle", "vehicle", usage=reading.usage, intent="tires")
    return None


def _unknown_product(text: str) -> bool:
    """"Do you sell motorcycle tires?": a kind of tire the catalogue does not name."""
    match = re.search(r"([\w-]+)\s+(?:tires?|tyres?)\b", text.lower())
    return match is not None and match.group(1) not in TIRE_QUALIFIERS \
        and profile.find_usage(match.group(1)) is None


def _recommend(vehicle: str, usage: str | None) -> Plan:
    call = Call("get_tire_recommendation", {"vehicle_type": vehicle, "usage": usage or "mixed"})
    return single("tires", call, "recommendation", vehicle=vehicle, usage=usage or "mixed")


def _service(reading: Reading, state: DialogueState) -> Plan | None:
    place = reading.city or reading.place
    service = reading.service
    if state.intent == "service" and (reading.follow_up or not reading.question):
        # "what about Denver?" after an availability check: the same check, one thing changed.
        if place and not service:
            return _availability(place, state.service)
        if service and not place and state.city:
            return _availability(state.city, service)
    if place and (reading.availability or service):
        return _availability(place, service)
    return None


def _availability(place: str, service: str | None) -> Plan:
    label = profile.load_coverage().labels.get(service or "", "any")
    call = Call("check_service_availability", {"location": place, "service_type": label})
    return single("service", call, "availability", city=place, service=service)


def _business(reading: Reading, state: DialogueState) -> Plan | None:
    topic = reading.topic
    if topic is None and reading.service and reading.availability:
        topic = "services"
    if topic is None or not addressed(reading):
        # "colorless green ideas sleep furiously" names no question, only the word "green".
        return None
    section = profile.load_business_profile().sections[topic]
    plan = single("business", Call("get_business_info", {"topic": section.title}), "info",
                  topic=topic)
    if reading.service and not (reading.city or reading.place):
        # "Do you fix flats?" / "I have a nail in my tire": the answer, then where they are.
        plan.note = "offer_city"
        plan.remember.update(pending="city", service=reading.service)
    return plan


def _math_unclear(reading: Reading, state: DialogueState) -> Plan | None:
    if reading.question and BEYOND_RE.search(reading.core):
        # "Does the series sum of 1/n converge?": retyping it would not help; it is recorded.
        return None
    return ask("arithmetic", "math_unclear") if MATHY_RE.search(reading.core) else None


def _unknown(reading: Reading, state: DialogueState) -> Plan:
    if reading.question or reading.product_question:
        question = reading.said[:2000]
        return single("feedback", Call("record_feedback", {"question": question}), "feedback")
    return ask("unknown", "not_understood")


HANDLERS: list[Handler] = [_empty, _secret, _private, _markup, _language, plan_contact, _pending,
                           _smalltalk, _math, _tires, _service, _business, _math_unclear,
                           _unknown]


def read_turn(messages: Sequence[BaseMessage]) -> tuple[str, DialogueState, Plan]:
    """The latest user message, the dialogue state before it, and the plan for it."""
    start = turn_start(messages)
    human = messages[start].text if start >= 0 else ""
    history = messages[:max(start, 0)]
    state = dialogue.latest(history)
    reading = understand(human)
    # "What did I just ask?" is answered from the conversation, before any topic is read.
    plan = plan_recall(reading.core, history, state) if reading.text else None
    return human, state, plan or decide(reading, state)
