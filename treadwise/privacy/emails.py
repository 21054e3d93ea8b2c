"""E-mail addresses: the one reader of addresses in text, exactly as typed or not at all."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

# Loose, for finding what someone typed in a sentence ("it's ana@fleetco.com, thanks").
IN_TEXT_RE = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")
# Strict, for storing: one plain address, no display name, no quoting, a dotted domain, a real TLD.
ADDRESS_RE = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
)
# Everything glued to an @ up to a space or a bracket: the whole token someone typed, so that
# a letter the ASCII pattern cannot read (Cyrillic а in "аna@") makes the address unreadable
# instead of being dropped ("na@").
TOKEN_RE = re.compile(r"[^\s<>()\[\]{},;:\"'`@]+@[^\s<>()\[\]{},;:\"'`@]+")
TRAILING = ".!?"


@dataclass(frozen=True)
class Lookalike:
    """An address typed with characters that are not plain letters, digits or . _ % + -."""

    typed: str
    odd: str  # the first odd character, as typed

    def describe(self) -> str:
        """'а', Cyrillic Small Letter A: what a person should retype."""
        name = unicodedata.name(self.odd, f"U+{ord(self.odd):04X}")
        return f"'{self.odd}', {name.title()}"


@dataclass
class Found:
    """The addresses in a text: readable ones as typed, and the ones to ask to retype."""

    addresses: list[str] = field(default_factory=list)
    lookalikes: list[Lookalike] = field(default_factory=list)


def scan(text: str) -> Found:
    """Every address typed in `text`, in order, each exactly as typed or set apart as a
    look-alike (mixed scripts, confusable or invisible characters, fullwidth forms), in the
    spirit of Unicode's UTS #39: such an address is never shortened into a readable one."""
    found = Found()
    for match in TOKEN_RE.finditer(text):
        token = _unwrapped(match.group(0))
        odd = next((c for c in token if not (c.isascii() and (c.isalnum() or c in "._%+-@"))),
                   None)
        if odd is not None and not odd.isascii():
            found.lookalikes.append(Lookalike(token, odd))
            continue
        if IN_TEXT_RE.fullmatch(token):
            found.addresses.append(token)
    return found


def _unwrapped(token: str) -> str:
    """The token without the quotation marks or brackets of any script around it ("“x@y.z”")
    and without a closing full stop; nothing inside it is touched."""
    def wrapping(char: str) -> bool:
        return not char.isascii() and unicodedata.category(char)[0] in "PZ"

    start, end = 0, len(token)
    while start < end and wrapping(token[start]):
        start += 1
    while end > start and (wrapping(token[end - 1]) or token[end - 1] in TRAILING):
        end -= 1
    return token[start:end]


def find_emails(text: str) -> list[str]:
    """Every readable address in the text, in order, without a trailing full stop."""
    return scan(text).addresses


def lookalikes(text: str) -> list[Lookalike]:
    """Addresses typed with characters an address cannot hold as typed; ask for them again."""
    return scan(text).lookalikes
