"""Contact requests: consent before any lead, the customer's request as the lead's message."""

from __future__ import annotations

import re

from treadwise import profile
from treadwise.privacy.emails import IN_TEXT_RE
from treadwise.rules.dialogue import DialogueState
from treadwise.rules.plan import Call, Plan, ask
from treadwise.rules.understanding import NAME_RE, Reading
from treadwise.rules.voice import your

LEAD_TOOL = "record_customer_interest"
ERASE_TOOL = "delete_customer_data"
# The slots a reply can fill with an address or a yes.
ASKED_FOR_ADDRESS = {"email", "which_email", "contact_consent"}
TOPIC_PATTERNS = [
    r"\b(?:about|regarding|re:|concerning)\s+(?P<t>[^.!?\n]+)",
    r"\binterested in\s+(?P<t>[^.!?\n]+)",
    r"\b(?P<t>(?:a |an )?(?:quote|price|pricing|estimate|offer)\s+(?:for|on)\s+[^.!?\n]+)",
    r"\b(?:i'?d like|i would like|i want|we need|i need|we'?d like|looking for|we want)"
    r"\s+(?P<t>[^.!?\n]+)",
]
CUT_RE = re.compile(
    r"\s*(?:[,;:(]|\s-\s|\b(?:please|pls|and (?:please )?(?:contact|call|e-?mail|reach|have)"
    r"|(?:contact|call|e-?mail|reach) me|my e-?mail|my name|thanks?|thank you|you can"
    r"|at\s*$|via\s*$|on\s*$)\b).*$", re.I | re.S)
CONTACT_TALK_RE = re.compile(
    r"(?i)\b(?:please\s+)?(?:have (?:someone|sales|your team|the team) )?(?:contact|reach|e-?mail"
    r"|call|write to|get in touch with) (?:me|us)(?: back)?(?:\s+(?:at|on|via|by))?\b"
    r"|\b(?:sure|yes|yeah|ok(?:ay)?|it'?s|it is|my e-?mail(?: address)? is|here you go|again"
    r"|thanks?(?: you)?|you can reach me at|reach me at|at)\b")
FILLER = {"a", "an", "the", "me", "us", "it", "to", "you", "please", "and", "of", "for", "some",
          "your", "more", "info", "information", "someone", "team", "sales", "have", "get", "or",
          "at", "on", "via", "by", "in", "is", "here", "ok", "okay", "so", "well", "hi", "hello",
          "hey", "thanks", "thank", "sure", "yes", "yeah", "this", "that", "be", "can", "could"}


def request_topic(text: str) -> str | None:
    """What the customer wants to be contacted about, in their words, or None."""
    own = NAME_RE.sub(" ", IN_TEXT_RE.sub(" ", text))
    for pattern in TOPIC_PATTERNS:
        if (match := re.search(pattern, own, re.I)) and (topic := _trim(match.group("t"))):
            return topic
    rest = CONTACT_TALK_RE.sub(" ", own)
    sentences = [_trim(s) or "" for s in re.split(r"(?<=[.!?])\s+|\n", rest)]
    kept = " ".join(s for s in sentences if s)
    return kept[:300] if kept else None


def _trim(text: str) -> str | None:
    topic = CUT_RE.sub("", " ".join(text.split())).strip(" .,!?;:-")
    words = re.findall(r"[\w'$]+", topic.lower())
    if not any(w not in FILLER and len(w) > 2 for w in words) or len(words) > 40:
        return None
    return topic[0].upper() + topic[1:] if re.match(r"i\b", topic) else topic


def state_topic(state: DialogueState) -> str:
    """A plain topic from what the conversation was about, when the customer named none."""
    if state.topic:
        section = profile.load_business_profile().sections.get(state.topic)
        if section:
            return section.title.replace("\u2122", "").lower().strip()
    if state.intent == "tires" and state.vehicle:
        return f"tires for a {state.vehicle} ({state.usage or 'mixed'} use)"
    if state.intent == "service" and state.service:
        label = profile.load_coverage().labels.get(state.service, state.service)
        return f"{label} in {state.city}" if state.city else label
    return "a call back"


def plan_erasure(reading: Reading, state: DialogueState) -> Plan | None:
    """Erase on a withdrawal, an erasure request or a yes to "shall I delete ...?"; ask first
    when the words do not say what to erase ("forget everything")."""
    if reading.withdraws or (reading.no_contact and state.lead_email) or (
            state.pending == "erasure" and reading.answer == "yes"):
        return erase()
    return ask("privacy", "confirm_erasure", "erasure") if reading.may_erase else None


def plan_contact(reading: Reading, state: DialogueState) -> Plan | None:
    """The next step when a message is about being contacted; None when it is not."""
    if (erasing := plan_erasure(reading, state)) is not None:
        return erasing
    waiting = state.pending in ASKED_FOR_ADDRESS or bool(state.lead_topic and not state.lead_email)
    if reading.cancels and waiting and not reading.emails:
        # A withdrawal clears any consent waiting for an address or a yes.
        return ask("no_contact", "lead_cancelled", lead_topic=None, options=[])
    if reading.no_contact and (reading.emails or reading.quoted_emails or reading.lookalikes
                               or state.pending in ASKED_FOR_ADDRESS or state.lead_topic):
        return ask("no_contact", "no_contact", lead_topic=None)
    if reading.lookalikes:
        return _retype(reading, state)
    if reading.emails:
        return _with_address(reading, state)
    if reading.quoted_emails:
        return ask("lead", "untrusted_email")
    if state.pending in ASKED_FOR_ADDRESS and (answered := _answered(reading, state)):
        return answered
    topic = request_topic(reading.text) if reading.wants_contact else None
    if reading.email_attempt and (reading.wants_contact or state.pending in ASKED_FOR_ADDRESS):
        return ask("lead", "invalid_email", "email",
                   lead_topic=topic or state.lead_topic or state_topic(state))
    if reading.wants_contact:
        return ask("lead", "ask_email", "email", lead_topic=topic or state_topic(state))
    return None


def _retype(reading: Reading, state: DialogueState) -> Plan:
    """An address with a look-alike letter is never shortened into one it is not: ask again."""
    wanted = reading.wants_contact or state.pending in ASKED_FOR_ADDRESS
    topic = (request_topic(reading.text) if reading.wants_contact else None) or state.lead_topic
    return ask("lead", "lookalike_email", "email" if wanted else None,
               lead_topic=topic if wanted else state.lead_topic,
               values={"character": reading.lookalikes[0].describe()})


def _with_address(reading: Reading, state: DialogueState) -> Plan:
    if reading.untrusted:
        return ask("lead", "untrusted_email")
    if reading.third_party:
        return ask("lead", "third_party_email")
    topic = request_topic(reading.text) or state.lead_topic or state_topic(state)
    if reading.doubt:
        # The message asks something else too: its words are not the request to store.
        topic = state.lead_topic or state_topic(state)
    if len(reading.emails) > 1:
        return ask("lead", "ask_which_email", "which_email", options=reading.emails,
                   lead_topic=topic, values={"emails": " or ".join(reading.emails)})
    email = reading.emails[0]
    if state.lead_email and email.lower() != state.lead_email.lower() and reading.correction:
        return record(email, reading.name or state.name or "", state.lead_topic or topic,
                      replaces=state.lead_email)
    consented = (reading.wants_contact or state.pending in ASKED_FOR_ADDRESS
                 or (state.lead_topic and not state.lead_email)
                 or (state.lead_email or "").lower() == email.lower())
    if consented and not reading.doubt and not reading.cancels:
        return record(email, reading.name or state.name or "", topic)
    return ask("lead", "confirm_contact", "contact_consent", options=[email], lead_topic=topic,
               name=reading.name or state.name, values={"email": email, "topic": your(topic)})


def _answered(reading: Reading, state: DialogueState) -> Plan | None:
    """A yes, a no or a choice given to the assistant's own question about contacting."""
    if reading.answer == "no":
        return ask("no_contact", "lead_cancelled", lead_topic=None)
    options = state.options
    if state.pending == "which_email" and reading.choice is not None and options:
        # The consent rule wants the address the customer means typed on its own.
        chosen = options[min(reading.choice, len(options) - 1)]
        return ask("lead", "type_address", "email", lead_topic=state.lead_topic,
                   values={"email": chosen})
    if state.pending == "contact_consent" and reading.answer == "yes" and options:
        return record(options[0], reading.name or state.name or "",
                      state.lead_topic or state_topic(state))
    return None


def erase() -> Plan:
    """Withdrawn consent: delete what this conversation stored, then forget the lead."""
    return Plan("erase", [[Call(ERASE_TOOL, {})]], kind="erase",
                remember={"intent": "erase", "lead_topic": None, "lead_email": None,
                          "pending": None, "options": []})


def record(email: str, name: str, topic: str, replaces: str | None = None) -> Plan:
    args = {"email": email, "name": name, "message": topic}
    if replaces:
        args["replaces"] = replaces
    return Plan("lead", [[Call(LEAD_TOOL, args)]], kind="lead",
                values={"email": email, "topic": topic, "replaces": replaces or ""},
                remember={"intent": "lead", "lead_topic": topic, "lead_email": email,
                          "name": name or None, "pending": None})
