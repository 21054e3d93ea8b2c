"""Grounding: web addresses, phone numbers and prices an answer states that no source holds.

A tool's part of the sources is what it found (its artifact's data and own words), never the
text it gave the model; only text-only tools (web search, MCP) count by their text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from treadwise.evidence.conversation import leaf_values
from treadwise.tools.artifacts import ToolArtifact

Kind = Literal["web address", "phone number", "price"]

_URL = re.compile(
    r"\b(?:https?://|www\.)[^\s<>\"')\]]+|\b(?:[a-z0-9-]+\.)+(?:com|net|org|io|co|us|biz|info|"
    r"app|shop|store|ai|dev)\b(?:/[^\s<>\"')\]]*)?", re.I)
# 7 to 15 digits written as a phone number: +1 (512) 555-0142, 512-555-0142, 555 0142.
_PHONE = re.compile(r"(?<![\w.$€£])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?)?\d{1,4}"
                    r"(?:[\s.-]\d{2,4}){1,3}(?![\w.,]?\d)")
_DATE = re.compile(r"\d{4}[-.]\d{1,2}[-.]\d{1,2}|\d{1,2}[-.]\d{1,2}[-.]\d{4}")
_PRICE = re.compile(
    r"(?:(?P<sym>[$€£])\s?(?P<a>\d[\d,]*(?:\.\d+)?))"
    r"|(?:(?P<b>\d[\d,]*(?:\.\d+)?)\s?(?P<word>dollars?|usd|eur|euros?|gbp|pounds?)\b)", re.I)
_CURRENCY = {"$": "USD", "dollar": "USD", "dollars": "USD", "usd": "USD", "€": "EUR",
             "eur": "EUR", "euro": "EUR", "euros": "EUR", "£": "GBP", "gbp": "GBP",
             "pound": "GBP", "pounds": "GBP"}


@dataclass(frozen=True)
class Invented:
    """One claim in an answer that none of the sources holds."""

    kind: Kind
    text: str

    def __str__(self) -> str:
        return f"{self.kind} {self.text!r}"


def _url_key(text: str) -> str:
    key = re.sub(r"^(?:https?://)?(?:www\.)?", "", text.lower())
    return key.rstrip("/.,;:!?")


def _phone_key(text: str) -> str | None:
    digits = re.sub(r"\D", "", text)
    # Fewer than 7 digits is a number, a year or a range, not a phone number.
    return digits[-10:] if len(digits) >= 7 else None


def _price_key(match: re.Match[str]) -> tuple[str, Decimal] | None:
    amount = (match.group("a") or match.group("b") or "").replace(",", "")
    unit = (match.group("sym") or match.group("word") or "").lower()
    try:
        return _CURRENCY.get(unit, unit), Decimal(amount)
    except InvalidOperation:
        return None


def _urls(text: str) -> dict[str, str]:
    return {_url_key(m.group()): m.group().rstrip(".,;:!?") for m in _URL.finditer(text)}


def _phones(text: str) -> dict[str, str]:
    found = {}
    for match in _PHONE.finditer(text):
        if _DATE.fullmatch(match.group().strip()):
            continue
        if (key := _phone_key(match.group())) is not None:
            found[key] = match.group().strip()
    return found


def _prices(text: str) -> dict[tuple[str, Decimal], str]:
    return {key: m.group() for m in _PRICE.finditer(text) if (key := _price_key(m))}


def invented_facts(answer: str, sources: Iterable[str]) -> list[Invented]:
    """The web addresses, phone numbers and prices ``answer`` states that appear in none of
    ``sources`` (the turn's tool results, and the customer's own message if it may be
    repeated), compared by meaning: www.x.com is x.com, (512) 555-0142 is 512-555-0142, $1,200
    is 1200 dollars. An empty list means the answer invented none of these."""
    known = "\n".join(sources)
    urls, phones, prices = _urls(known), _phones(known), _prices(known)
    claims: list[Invented] = []
    said_urls = _urls(answer)
    claims += [Invented("web address", text) for key, text in said_urls.items()
               if key not in urls and not any(key.startswith(u) for u in urls)]
    # A web address's digits are not a phone number.
    bare = _URL.sub(" ", answer)
    claims += [Invented("phone number", text) for key, text in _phones(bare).items()
               if key not in phones]
    claims += [Invented("price", text) for key, text in _prices(bare).items()
               if key not in prices]
    return claims


def tool_sources(steps: Iterable[Any]) -> list[str]:
    """What tool steps (agent.ToolStep) found, as sources: each artifact's values and words;
    a text-only step's result text."""
    found: list[str] = []
    for step in steps:
        artifact = getattr(step, "artifact", None)
        if isinstance(artifact, ToolArtifact):
            found += [*map(str, leaf_values(artifact.model_dump(mode="json"))), artifact.words()]
        elif getattr(step, "error", None) is None:
            found.append(getattr(step, "result", None) or "")
    return found
