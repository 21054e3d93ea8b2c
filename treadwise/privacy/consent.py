"""One consent vocabulary (consent_words.yaml), read on the word fold by the guard and the model.

Every decision here (asks, refuses, withdraws, cancels, erases, asks for access, asks about other
customers, yes, no, someone else's address) is taken on the message's word fold
(treadwise.privacy.normalise: NFKC, invisible characters gone, case folded, look-alike letters
mapped to Latin) against the vocabulary folded the same way: "dо nоt contact me" with Cyrillic
"о" refuses. Which parts of a message are the customer's own words (not pasted, quoted or
reported) is read on the text as typed, where the quotation marks and speakers are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from treadwise.datafiles import read_yaml_mapping
from treadwise.privacy.emails import find_emails
from treadwise.privacy.normalise import fold_pattern, words

VOCABULARY_FILE = Path(__file__).with_name("consent_words.yaml")
FLAGS = re.IGNORECASE

_ROLE = r"(?:system|assistant|developer|tool|function|observation)"
# Where text claiming another speaker begins (a "SYSTEM:" line, "Tool result (x):", <tool_output>,
# a JSON message): from there on the message is pasted material, not the customer's own words.
PASTED = (
    re.compile(rf"^\W*{_ROLE}(?:[ _-]?(?:result|output|response|call|message|prompt)s?)?"
               r"\s*(?:\([^)\n]{0,60}\))?\s*[:：>\]]", re.IGNORECASE | re.MULTILINE),
    re.compile(r"\b(?:SYSTEM|ASSISTANT|DEVELOPER|TOOL|FUNCTION)(?:[ _](?:RESULT|OUTPUT|MESSAGE))?"
               r"\s*[:：]"),
    re.compile(r"\"(?:role|tool_calls?|tool_call_id)\"\s*:", re.IGNORECASE),
)
# Someone else's words in quotation marks; apostrophes inside words ("it's") are not quotes.
QUOTED = re.compile(r"\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d|\u00ab[^\u00bb\n]*\u00bb"
                    r"|\u201e[^\u201c\u201d\n]*[\u201c\u201d]|(?<![\w'])'[^'\n]{3,}?'(?![\w'])")
SENTENCE_END = re.compile(r"[.!?\n](?:\s|$)")
# What the assistant says when it offers contact or asks for the customer's address.
OFFER = re.compile(
    r"\b(?:contact|reach|e-?mail|call|get in touch with|follow up with)\s+you\b[^?]*\?"
    r"|\byour\s+(?:best\s+)?e-?mail(?:\s+address)?\b[^?]*\?"
    r"|\be-?mail\s+address\b[^?]*\?", re.IGNORECASE)


REFUSED = "Refused: "
TELL = "\nTell the customer: "


@dataclass(frozen=True)
class Refusal:
    """Why a tool call may not run (for the model) and what to tell the customer instead."""

    reason: str
    ask: str

    def __str__(self) -> str:
        return f"{REFUSED}{self.reason}{TELL}{self.ask}"


def customer_ask(tool_text: str) -> str | None:
    """The plain ask inside a refusal (see `Refusal`), or None for any other text."""
    if not tool_text.startswith(REFUSED) or TELL not in tool_text:
        return None
    return tool_text.split(TELL, 1)[1].strip()


class VocabularyError(ValueError):
    """The consent vocabulary file is missing, malformed or holds a bad pattern."""


@dataclass(frozen=True)
class Vocabulary:
    """The compiled consent vocabulary."""

    asks: re.Pattern
    refuses: re.Pattern
    withdraws: re.Pattern
    yes: re.Pattern
    no: re.Pattern
    someone_else: re.Pattern
    reported: re.Pattern
    cancels: re.Pattern
    erases: re.Pattern
    erases_unclear: re.Pattern
    access: re.Pattern
    others: re.Pattern


def _fragment(entry: str) -> str:
    # A space matches any run of spaces; "a ?b" keeps the space optional. The entry is folded
    # like the messages it is matched against.
    entry = fold_pattern(entry)
    return re.sub(r" (?!\?)", r"\\s+", entry.replace(" ?", r"\s*"))


def _any(entries: list[str]) -> str:
    return "(?:" + "|".join(_fragment(str(e)) for e in entries) + ")"


def _words(data: dict, key: str) -> list[str]:
    entries = data.get(key)
    if not isinstance(entries, list) or not entries:
        raise VocabularyError(f"{VOCABULARY_FILE}: '{key}' must be a non-empty list")
    return [str(e) for e in entries]


def _compile(pattern: str, key: str, flags: int = FLAGS) -> re.Pattern:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise VocabularyError(f"{VOCABULARY_FILE}: a pattern in '{key}' is invalid ({exc})") \
            from None


def _negated(data: dict) -> str:
    """A negation that reaches a contact verb within six words of the same clause."""
    negations = _words(data, "negations")
    suffixes = [n for n in negations if n.startswith("n'")]
    words = [n for n in negations if not n.startswith("n'")]
    negation = r"(?:(?<![\w'])" + _any(words) + ("|" + _any(suffixes) if suffixes else "") \
        + r")(?![\w'])"
    stop = r"(?:" + "|".join(_words(data, "clause_breaks")) + r")\b"
    gap = rf"(?:[^\S\n]+(?!{stop})[\w'-]+){{0,6}}?"
    return rf"{negation}{gap}[^\S\n]+{_any(_words(data, 'contact_verbs'))}\b"


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """The vocabulary in VOCABULARY_FILE, compiled once (clear the cache after changing it)."""
    data = read_yaml_mapping(VOCABULARY_FILE, VocabularyError, "consent vocabulary")
    people = _any(_words(data, "people"))
    someone_else = (
        rf"\b{people}(?:'s|s'|s)\b|\b(?:my|our)\s+{people}\b"
        rf"|\b(?:his|her|their|someone\s+else'?s|somebody'?s|another\s+person'?s)\s+"
        rf"(?:\w+\s+)?(?:e-?mail|address|contact)\b"
        rf"|\b(?!my\b|your\b|our\b)[a-z]+'s\s+(?:e-?mail|address)\b")
    verbs = _any(_words(data, "reporting_verbs"))
    reported = (rf"(?i:\b{_any(_words(data, 'reporters'))}\s+{verbs})\b"
                rf"|\b[A-Z][a-z]+\s+(?i:{verbs})\b")
    refuses = rf"\b{_any(_words(data, 'refuses'))}\b|{_negated(data)}"
    return Vocabulary(
        asks=_compile(rf"\b{_any(_words(data, 'asks'))}\b", "asks"),
        refuses=_compile(refuses, "refuses"),
        withdraws=_compile(rf"\b{_any(_words(data, 'withdraws'))}\b", "withdraws"),
        yes=_compile(_any(_words(data, "yes_answers")), "yes_answers"),
        no=_compile(_any(_words(data, "no_answers")), "no_answers"),
        someone_else=_compile(someone_else, "people"),
        reported=_compile(reported, "reporters", 0),
        cancels=_compile(rf"\b{_any(_words(data, 'cancels'))}\b", "cancels"),
        erases=_compile(rf"\b{_any(_words(data, 'erases'))}\b", "erases"),
        erases_unclear=_compile(rf"\b{_any(_words(data, 'erases_unclear'))}\b",
                                "erases_unclear"),
        access=_compile(rf"\b{_any(_words(data, 'access'))}\b", "access"),
        others=_compile(rf"\b{_any(_words(data, 'other_customers'))}\b", "other_customers"),
    )


def _flat(text: str) -> str:
    """Lower case, apostrophes kept, other punctuation and emoji dropped."""
    return " ".join(re.sub(r"[^\w\s']+", " ", text.casefold().replace("\u2019", "'")).split())


def _plain(text: str) -> str:
    return text.replace("\u2019", "'")


def pasted_from(text: str) -> int:
    """Where pasted speaker text begins in a message (its length when there is none)."""
    return min((m.start() for p in PASTED if (m := p.search(text))), default=len(text))


def _quoted_speech(segment: str) -> bool:
    # A quoted bare address ("ana@x.com") is the customer's; a quoted sentence is not.
    words = re.findall(r"[\w'-]+", re.sub(r"\S+@\S+", " ", segment))
    return len(words) >= 2


def own_words(text: str) -> str:
    """The part of a message that is the customer's own: pasted speaker text, quoted
    sentences and reported speech ("He said please contact me ...") are left out."""
    text = _plain(text[:pasted_from(text)])
    text = QUOTED.sub(lambda m: " " if _quoted_speech(m.group(0)) else m.group(0), text)
    while match := vocabulary().reported.search(text):
        end = SENTENCE_END.search(text, match.end())
        text = text[:match.start()] + " " + (text[end.end():] if end else "")
    return text


def meaning(text: str) -> str:
    """The text every decision reads: its word fold, curly apostrophes straightened."""
    return words(_plain(text))


def refuses(text: str) -> bool:
    """The message refuses contact anywhere in it ("I do not want anyone to contact me")."""
    return bool(vocabulary().refuses.search(meaning(text)))


NEGATED_ERASURE = re.compile(r"\b(?:don'?t|do not|never|no need to|not)\s+(?:\w+\s+)?$")


def erases(text: str) -> bool:
    """The customer asks for their data to be forgotten, deleted, erased or removed, in any of
    the ways people say it ("forget everything about me", "borra mis datos"); "don't delete
    my data" does not."""
    said = meaning(text)
    return any(not NEGATED_ERASURE.search(said[max(0, m.start() - 24):m.start()])
               for m in vocabulary().erases.finditer(said))


def may_erase(text: str) -> bool:
    """Words that may ask for an erasure without saying of what ("forget everything"): ask."""
    return not erases(text) and bool(vocabulary().erases_unclear.search(meaning(text)))


def withdraws(text: str) -> bool:
    """The message takes consent back or asks for the customer's data to be deleted."""
    return bool(vocabulary().withdraws.search(meaning(text))) or erases(text)


def cancels(text: str) -> bool:
    """The customer takes back a request in passing ("never mind", "no thanks"): any consent
    waiting for an address or a yes is cleared (nothing stored is deleted for it)."""
    return bool(vocabulary().cancels.search(meaning(text))) or is_no(text)


def asks_access(text: str) -> bool:
    """The customer asks what is stored about them ("What do you have about me?")."""
    return bool(vocabulary().access.search(meaning(own_words(text))))


def about_others(text: str) -> bool:
    """The message asks about other customers: who signed up, their addresses, the lead list."""
    return bool(vocabulary().others.search(meaning(text)))


def asks(text: str) -> bool:
    """The customer asks to be contacted in their own words, and refuses nothing."""
    if refuses(text) or withdraws(text):
        return False
    return bool(vocabulary().asks.search(meaning(own_words(text))))


QUESTION_START = re.compile(
    r"^(?:what|how|why|when|where|who|which|is|are|do|does|did|can|could|will|would|should"
    r"|calculate|compute|solve|integrate|differentiate)\b")
MATH_RE = re.compile(r"\d\s*[-+*/^x\u00d7\u00f7]\s*\d|\b(?:integral|derivative|solve|sqrt|"
                     r"square root)\b")


def other_question(text: str) -> bool:
    """The message also asks something that is not about being contacted ("What is 17 * 23?
    You can reach me at ..."): whether it asks to be contacted is then in doubt."""
    own = meaning(own_words(text))
    for sentence in re.split(r"(?<=[.!?\n])\s+", own):
        sentence = sentence.strip()
        asking = sentence.endswith("?") or QUESTION_START.match(sentence) or \
            MATH_RE.search(sentence)
        if asking and not vocabulary().asks.search(sentence) and len(sentence.split()) >= 2:
            return True
    return False


def is_yes(text: str) -> bool:
    return bool(vocabulary().yes.fullmatch(_flat(meaning(text))))


def is_no(text: str) -> bool:
    return bool(vocabulary().no.fullmatch(_flat(meaning(text))))


def sentence_with(text: str, address: str) -> str:
    """The sentence of `text` that holds `address` (the whole text when it is not there)."""
    at = text.lower().find(address.lower())
    if at < 0:
        return text
    starts = [m.end() for m in SENTENCE_END.finditer(text, 0, at)]
    end = SENTENCE_END.search(text, at + len(address))
    return text[starts[-1] if starts else 0:end.start() if end else len(text)]


def someone_else(text: str, address: str | None = None) -> bool:
    """The address (or the message) is said to be someone else's: "my ex's email is ..."."""
    where = sentence_with(_plain(text), address) if address else _plain(text)
    return bool(vocabulary().someone_else.search(meaning(where)))


def offered_contact(assistant_text: str) -> bool:
    """The assistant offered to contact the customer or asked for their address."""
    return bool(OFFER.search(assistant_text))


def own_addresses(text: str) -> list[str]:
    """The readable addresses in the customer's own words, lower-cased, each once."""
    return list(dict.fromkeys(a.lower() for a in find_emails(own_words(text))))
