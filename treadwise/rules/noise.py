"""Input the rules cannot read as a request: pasted markup, and sentences that only mention a
topic word ("colorless green ideas sleep furiously" is not about recycling)."""

from __future__ import annotations

import re
from functools import lru_cache

from treadwise import profile
from treadwise.rules.mathwords import strip_padding
from treadwise.rules.understanding import ENGLISH, PRODUCT_RE, QUESTION_RE, Reading

# A tag of HTML or XML: "<p>", "</div>", "<br/>", "<img src=...>", a comment or a doctype;
# "x<y and z>w", "a <= b" and "Ana <ana@example.com>" are not.
MARKUP_RE = re.compile(r"<!--|<!doctype\b|</?[a-z][a-z0-9]*(?:-[a-z0-9]+)*\s*/?>"
                       r"|<[a-z][a-z0-9-]*\s[^<>]*=[^<>]*>", re.I)
# Tags, comments and what scripts and styles hold: what is left is the words people read.
TAGS_RE = re.compile(r"<(script|style)\b.*?(?:</\1\s*>|$)|<!--.*?(?:-->|$)|<[^<>]*>",
                     re.I | re.S)
# Words that show a message speaks to us or about the customer, not about anything at all.
PERSONAL_RE = re.compile(r"\b(?:i|i'm|i've|i'd|my|me|mine|we|we're|our|us|you|your|you're"
                         r"|yours)\b", re.I)
# More words than this, none personal and no question: a sentence that only mentions a topic.
KEYWORD_QUERY_WORDS = 3


def markup_only(reading: Reading) -> bool:
    """Tags with no question in the words around them ("Do you sell <b>alloy</b> rims?" asks
    one; "<p>Open the app</p>" asks nothing about opening hours)."""
    return bool(MARKUP_RE.search(reading.said)) and not _asks(TAGS_RE.sub(" ", reading.said))


def addressed(reading: Reading) -> bool:
    """The message asks us something, tells us about the customer, or is a few words or
    mostly words of the business ("tire pressure for winter driving")."""
    return reading.question or reading.product_question or reading.availability \
        or bool(PERSONAL_RE.search(reading.core)) or _business_talk(reading.core)


def _asks(text: str) -> bool:
    core = strip_padding(text)
    return bool(PRODUCT_RE.search(core)) or (bool(QUESTION_RE.search(core))
                                              and len(core.split()) >= 2)


def _business_talk(text: str) -> bool:
    words = [w for w in profile.clean_text(text).split() if w not in ENGLISH]
    if len(words) <= KEYWORD_QUERY_WORDS:
        return True
    known = _business_words()
    ours = sum(w in known or w.rstrip("s") in known for w in words)
    return ours * 2 >= len(words)


@lru_cache(maxsize=1)
def _business_words() -> frozenset[str]:
    return frozenset(w for phrase in profile.business_phrases() for w in phrase.split())
