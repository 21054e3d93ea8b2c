"""What a conversation holds that a tool argument may use: the customer's words, what earlier
tool results found, and the business profile's names for what the customer named.

Only the customer's own messages count as said (a strategy's stage material does not, nor the
assistant's answers: a model may have invented those); tool results count by what they found
(their artifacts' values and words), a text-only result by its text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from treadwise import profile
from treadwise.conversation import stage_of
from treadwise.evidence import numbers
from treadwise.privacy.emails import IN_TEXT_RE, find_emails
from treadwise.tools.artifacts import ToolArtifact, artifact_of
from treadwise.tools.math_results import Calculation

# A place named after a preposition ("in Tulsa", "near Boise"), known to the profile or not.
NAMED_PLACE = re.compile(r"\b(?:in|near|around|to|at|from|for)\s+([A-Z][a-zA-Z.'-]+"
                         r"(?:\s+[A-Z][a-zA-Z.'-]+){0,2})")
NOT_PLACES = frozenset("I Monday Tuesday Wednesday Thursday Friday Saturday Sunday Smart "
                       "TreadWise English The My Our A An".split())
# Words a usage or service argument may say when the customer named none: the catalogue's
# all-round usage and the tool's "everything offered there".
DEFAULT_USAGE = "mixed"
ANY_SERVICE = frozenset({"", "any", "all", "all services", "any service", "services"})
NAME_CUE = re.compile(r"\b(?i:my name is|name's|i am|i'm|this is|call me|name:)\s+"
                      r"([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)")


def leaf_values(data: Any) -> Iterable[Any]:
    """Every value inside nested mappings and lists (an artifact's JSON), None and bools
    left out."""
    if isinstance(data, dict):
        for item in data.values():
            yield from leaf_values(item)
    elif isinstance(data, list | tuple):
        for item in data:
            yield from leaf_values(item)
    elif data is not None and not isinstance(data, bool):
        yield data


def _result_parts(message: ToolMessage) -> tuple[list[str], list[float]]:
    """A tool result's texts and exact numbers: every value of its artifact and its words."""
    found = artifact_of(message)
    if not isinstance(found, ToolArtifact):
        return [message.text], []
    texts = [str(v) for v in leaf_values(found.model_dump(mode="json"))] + [found.words()]
    values: list[float] = []
    if isinstance(found, Calculation):
        for item in (found.exact, found.approx, *found.values):
            if (value := numbers.number_of(item)) is not None:
                values.append(value)
    return texts, values


@dataclass(frozen=True)
class Evidence:
    """The customer's messages (oldest first) and what the conversation's tool results found."""

    said: tuple[str, ...] = ()
    found: tuple[str, ...] = ()
    results: tuple[float, ...] = ()  # math results' own values (9 after 5 + 4)

    @classmethod
    def of(cls, messages: Sequence[BaseMessage]) -> Evidence:
        said = [m.text for m in messages if isinstance(m, HumanMessage) and not stage_of(m)]
        found: list[str] = []
        results: list[float] = []
        for message in messages:
            if isinstance(message, ToolMessage) and message.status != "error":
                texts, values = _result_parts(message)
                found += texts
                results += values
        return cls(tuple(said), tuple(found), tuple(results))

    @cached_property
    def text(self) -> str:
        """Everything the customer said, one message a line."""
        return "\n".join(self.said)

    @property
    def latest(self) -> str:
        return self.said[-1] if self.said else ""

    @cached_property
    def numbers(self) -> tuple[float, ...]:
        """Every number the conversation grounds, as written or by a declared rule."""
        values = numbers.derived(self.text)
        for text in self.found:
            values.update(numbers.numerals(text))
        values.update(self.results)
        return tuple(sorted(values, key=lambda v: (abs(v), v)))

    def holds_number(self, value: float) -> bool:
        return numbers.matches(value, self.numbers)

    @cached_property
    def operands(self) -> tuple[float, ...]:
        """The numbers an operation may take: as `numbers`, but not a power named in words
        nor a percentage's whole number (numbers.operands); results always."""
        values = numbers.operands(self.text)
        for text in self.found:
            values.update(numbers.numerals(text))
        values.update(self.results)
        return tuple(sorted(values, key=lambda v: (abs(v), v)))

    def holds_operand(self, value: float) -> bool:
        return numbers.matches(value, self.operands)

    @cached_property
    def found_text(self) -> str:
        return "\n".join(self.found)

    @cached_property
    def _words(self) -> frozenset[str]:
        return frozenset(_word_list(self.text))

    def says(self, phrase: str) -> bool:
        """Every word of ``phrase`` is one the customer used."""
        words = _word_list(phrase)
        return bool(words) and all(w in self._words for w in words)

    @cached_property
    def places(self) -> tuple[str, ...]:
        """The places the customer named: served cities and known places by their profile
        names, and any other place named after "in", "near", ..."""
        coverage = profile.load_coverage()
        text = IN_TEXT_RE.sub(" ", self.text)
        found = [name for vocabulary in (coverage.places, coverage.other_places)
                 for name, *_ in vocabulary.find_spans(text)]
        found += [m.group(1).rstrip(".") for m in NAMED_PLACE.finditer(text)
                  if m.group(1).split()[0] not in NOT_PLACES]
        return tuple(dict.fromkeys(found))

    def holds_place(self, value: str) -> bool:
        coverage = profile.load_coverage()
        name = coverage.places.normalise(value) or coverage.other_places.normalise(value)
        if name is not None and name in self.places:
            return True
        # A town the profile does not know counts when the customer typed it ("Smallville"
        # as the answer to "Which city?").
        cleaned = profile.clean_text(value)
        return bool(cleaned) and (any(profile.clean_text(p) == cleaned for p in self.places)
                                  or self.says(value))

    @cached_property
    def services(self) -> tuple[str, ...]:
        """The services the customer named, by their profile keys."""
        return _named(profile.load_coverage().services, self.text)

    def holds_service(self, value: str) -> bool:
        if " ".join(value.casefold().split()) in ANY_SERVICE:
            return True
        coverage = profile.load_coverage()
        key = coverage.services.normalise(value) or _label_key(value) \
            or coverage.services.find(value)
        return key is not None and key in self.services

    def service_labels(self) -> list[str]:
        labels = profile.load_coverage().labels
        return [labels[key] for key in self.services if key in labels]

    @cached_property
    def vehicles(self) -> tuple[str, ...]:
        return _named(profile.load_tire_catalogue().vehicles, self.text)

    def holds_vehicle(self, value: str) -> bool:
        vehicles = profile.load_tire_catalogue().vehicles
        name = vehicles.normalise(value) or vehicles.find(value)
        return name is not None and name in self.vehicles

    @cached_property
    def usages(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u for m in self.said if (u := profile.find_usage(m))))

    def holds_usage(self, value: str) -> bool:
        usages = profile.load_tire_catalogue().usages
        name = usages.normalise(value) or usages.find(value)
        return name == DEFAULT_USAGE or (name is not None and name in self.usages)

    @cached_property
    def emails(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(find_emails(self.text)))

    def holds_email(self, value: str) -> bool:
        return value.strip().casefold() in {e.casefold() for e in self.emails}

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Names the customer gave ("my name is Ana Silva", "I'm Bob")."""
        return tuple(dict.fromkeys(m.group(1) for m in NAME_CUE.finditer(self.text)))

    def words(self, limit: int = 400) -> list[str]:
        """The customer's words as typed, each once, for a grammar that lets a model say only
        them (latest message first)."""
        seen: dict[str, None] = {}
        for message in reversed(self.said):
            for word in re.findall(r"[\w$%@.'+-]+", IN_TEXT_RE.sub(" ", message)):
                word = word.strip(".'")
                if word and len(word) <= 40:
                    seen.setdefault(word, None)
        return list(seen)[:limit]


def _word_list(text: str) -> list[str]:
    return re.findall(r"[0-9a-z]+", text.casefold())


def _named(vocabulary: profile.Vocabulary, text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name, *_ in vocabulary.find_spans(text)))


def _label_key(value: str) -> str | None:
    """The service key whose label is this text ("tire rotation" -> "rotation")."""
    cleaned = profile.clean_text(value)
    labels = profile.load_coverage().labels
    return next((key for key, label in labels.items() if profile.clean_text(label) == cleaned),
                None)
