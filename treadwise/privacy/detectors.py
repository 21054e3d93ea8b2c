"""Detectors of numbers that identify or pay: payment cards, IBANs and national ID numbers.

Each detector reads a message's folds (treadwise.privacy.normalise) and returns `Finding`s in
the original text's coordinates; `treadwise.privacy.redaction` removes them. The numbers are
validated by `python-stdnum` (Luhn, IBAN, SSN, DNI/NIE, codice fiscale, CPF), never by shape
alone, so math stays math: a list of numbers, a long operand ("4111111111111111 + 1", "20! =
2432902008176640000") or a phone number is not a card.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

from treadwise.privacy.normalise import Folded, for_detectors, for_words

CARD, ID, SECRET = "card", "id", "secret"


@dataclass(frozen=True)
class Finding:
    """A secret's place in the original text and its kind (card, id or secret)."""

    start: int
    end: int
    kind: str


class Texts:
    """One message and its folds, each computed once when a detector first asks for it."""

    def __init__(self, text: str, follows: str | None = None):
        self.text = text
        self.follows = follows  # the customer's previous message, when known

    @cached_property
    def folded(self) -> Folded:
        return for_detectors(self.text)

    @cached_property
    def cased(self) -> Folded:
        return for_detectors(self.text, case=False)

    @cached_property
    def words(self) -> Folded:
        return for_words(self.text)

    def found(self, fold: Folded, start: int, end: int, kind: str) -> Finding:
        return Finding(*fold.original(start, end), kind)


Detector = Callable[[Texts], Iterator[Finding]]
DETECTORS: list[Detector] = []
detector = DETECTORS.append

CARD_WORDS_RE = re.compile(
    r"\b(?:card|credit|debit|visa|master\s?card|amex|american\s+express|discover|maestro"
    r"|diners|jcb|unionpay|cc|ccn|pan|charge|pay(?:ment)?|billing|tarjeta|carte|karte"
    r"|kreditkarte|cartão|cartao|carta)\b")
OPERATOR_BEFORE = re.compile(r"(?:[-+*/^=\u00d7\u00f7(%]|\b(?:plus|minus|times|by|of|mod|over"
                             r"|add|subtract|multiply|divide|sum|product|root|sqrt)\b)\s*$")
OPERATOR_AFTER = re.compile(r"^\s*(?:[-+*/^=\u00d7\u00f7)!%]|\b(?:plus|minus|times|divided"
                            r"|multiplied|mod|over|squared|cubed|to the power)\b)")
MATH_WORDS = re.compile(r"\b(?:what is|what's|calculate|compute|evaluate|solve|sum|add"
                        r"|subtract|multiply|divide|factorial|square|sqrt|how much is)\b|[=^]")
# Digit groups joined by one separator each: spaces (up to three), a dot, a dash or a slash.
DIGIT_RUN = re.compile(r"(?<![\w.,/-])\d+(?:(?:[ \t]{1,3}|[ ]?[.\-/][ ]?)\d+)*(?![\w])")
GROUP = re.compile(r"\d+")
# Thirteen digits with at most three separators between any two: the least a card can be.
CARD_LIKE = re.compile(r"\d(?:\D{0,3}\d){12}")
# Six digits close together (every national ID detected here holds that many).
ID_LIKE = re.compile(r"\d(?:\D{0,2}\d){5}")

# Issuer ranges (prefixes and lengths) of the networks people type: Visa, Mastercard,
# American Express, Discover, Diners Club, JCB, UnionPay, Maestro.
CARD_RANGES = (
    (re.compile(r"4"), (13, 16, 19)), (re.compile(r"5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)"), (16,)),
    (re.compile(r"3[47]"), (15,)), (re.compile(r"6(?:011|5|4[4-9])"), (16, 17, 18, 19)),
    (re.compile(r"3(?:0[0-5]|[68])"), (14, 15, 16, 17, 18, 19)),
    (re.compile(r"35(?:2[89]|[3-8])"), (16, 17, 18, 19)), (re.compile(r"62"), (16, 17, 18, 19)),
    (re.compile(r"5[06-9]|6\d"), (12, 13, 14, 15, 16, 17, 18, 19)),
)


def is_card_number(digits: str) -> bool:
    """13-19 digits of a known card range that pass the Luhn check (python-stdnum)."""
    from stdnum import luhn

    return 13 <= len(digits) <= 19 and digits.isdigit() and luhn.is_valid(digits) and any(
        prefix.match(digits) and len(digits) in lengths for prefix, lengths in CARD_RANGES)


def _card_shaped(groups: list[str]) -> bool:
    """Written as cards are: one run, groups of four (the last may be shorter), or the
    4-6-5 and 4-6-4 of American Express and Diners Club."""
    sizes = [len(g) for g in groups]
    if len(sizes) == 1:
        return True
    if sizes in ([4, 6, 5], [4, 6, 4]):
        return True
    return all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4


def operand(text: str, start: int, end: int) -> bool:
    """The number at [start, end) stands in a calculation: an operator or a math word right
    before or after it."""
    return bool(OPERATOR_BEFORE.search(text[max(0, start - 16):start])
                or OPERATOR_AFTER.search(text[end:end + 20]))


def _phone(text: str, start: int, digits: str) -> bool:
    """A 13-15 digit number written as an international phone number ("+44 ...")."""
    if len(digits) > 15 or not text[max(0, start - 2):start].strip().endswith("+"):
        return False
    import phonenumbers

    try:
        return phonenumbers.is_possible_number(phonenumbers.parse("+" + digits))
    except phonenumbers.NumberParseException:
        return False


@detector
def cards(texts: Texts) -> Iterator[Finding]:
    """Payment card numbers, with or without a word about paying near them."""
    fold = texts.folded
    text = fold.text
    if not CARD_LIKE.search(text):
        return
    for run in DIGIT_RUN.finditer(text):
        groups = [(m.start() + run.start(), m.end() + run.start(), m.group(0))
                  for m in GROUP.finditer(run.group(0))]
        yield from _cards_in(texts, fold, groups)


def _cards_in(texts: Texts, fold: Folded, groups: list[tuple[int, int, str]]) -> \
        Iterator[Finding]:
    text, i = fold.text, 0
    while i < len(groups):
        for j in range(len(groups), i, -1):
            window = groups[i:j]
            digits = "".join(g[2] for g in window)
            if not 13 <= len(digits) <= 19 or not is_card_number(digits):
                continue
            start, end = window[0][0], window[-1][1]
            labelled = bool(CARD_WORDS_RE.search(text[max(0, start - 60):end + 30]))
            if not labelled and (not _card_shaped([g[2] for g in window])
                                 or operand(text, start, end) or _phone(text, start, digits)):
                continue
            yield texts.found(fold, start, end, CARD)
            i = j - 1
            break
        i += 1


IBAN_START = re.compile(r"(?<![\w])[a-z]{2}\d{2}(?=[ ]?[a-z0-9])")
IBAN_PIECE = re.compile(r"[ ]?([a-z0-9]{1,30})")


@detector
def ibans(texts: Texts) -> Iterator[Finding]:
    """International bank account numbers, compact or in groups, by their checksum."""
    fold = texts.folded
    text = fold.text
    if not re.search(r"[a-z]{2}\d{2}", text):
        return
    from stdnum import iban

    for match in IBAN_START.finditer(text):
        at, compact, best = match.end(), match.group(0), None
        while len(compact) < 34 and (piece := IBAN_PIECE.match(text, at)):
            compact, at = compact + piece.group(1), piece.end()
            if 15 <= len(compact) <= 34 and iban.is_valid(compact.upper()):
                best = at
        if best is not None and not re.match(r"\w", text[best:best + 1]):
            yield texts.found(fold, match.start(), best, ID)


# National ID numbers that carry their own check, found without a label: US social security
# numbers in groups, Spanish DNI and NIE, Italian codice fiscale, Brazilian CPF; and UK
# National Insurance numbers by HMRC's letter rules (no check digit; any case).
NATIONAL_IDS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"(?<![\w.+*/^=-])\d{3}([-. ])\d{2}\1\d{4}(?![\w-]|[.,]\d)"), "us.ssn"),
    (re.compile(r"(?<![\w-])\d{8}-?[a-z](?![\w-])"), "es.dni"),
    (re.compile(r"(?<![\w-])[xyz]-?\d{7}-?[a-z](?![\w-])"), "es.nie"),
    (re.compile(r"(?<!\w)[a-z]{6}\d{2}[a-z]\d{2}[a-z]\d{3}[a-z](?!\w)"), "it.codicefiscale"),
    (re.compile(r"(?<![\w.])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\w-])"), "br.cpf"),
)
NINO_RE = re.compile(r"(?<!\w)(?![dfiquv])[a-ceghj-pr-tw-z](?![dfiquvo])[a-ceghj-npr-tw-z]"
                     r" ?\d{2} ?\d{2} ?\d{2} ?[a-d](?!\w)")
NOT_NINO_PREFIXES = ("bg", "gb", "nk", "kn", "tn", "nt", "zz")


@detector
def national_ids(texts: Texts) -> Iterator[Finding]:
    """National ID numbers that are valid by their own rules."""
    fold = texts.folded
    text = fold.text
    if not ID_LIKE.search(text):
        return
    import importlib

    for pattern, module in NATIONAL_IDS:
        for match in pattern.finditer(text):
            if module == "us.ssn" and operand(text, match.start(), match.end()):
                continue
            checker = importlib.import_module(f"stdnum.{module}")
            number = re.sub(r"[^0-9a-z]", "", match.group(0)).upper()
            if checker.is_valid(number):
                yield texts.found(fold, match.start(), match.end(), ID)
    for match in NINO_RE.finditer(text):
        if match.group(0)[:2] not in NOT_NINO_PREFIXES:
            yield texts.found(fold, match.start(), match.end(), ID)
