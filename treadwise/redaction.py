"""Redaction: every secret shape TreadWise knows, removed before anything is stored or shown.

`redact(text)` is the one function memory, leads, feedback, exports, transcripts, logs and
replies go through. What it removes, in this order (`SHAPES` holds each with an example that
the tests redact):

- the value of every secret-looking environment variable (`*KEY*`, `*TOKEN*`, `*SECRET*`,
  `*PASSWORD*`, `*AUTH*`) and of the providers' key variables;
- private key blocks (`-----BEGIN ... PRIVATE KEY-----`);
- the password in a URL (`scheme://user:password@host`);
- passwords and secrets in any phrasing: "my password is X", "password=X", "pwd: X",
  `"password": "X"`, "the PIN is X", "api key: X", "client_secret=X", "Bearer X";
- keys and tokens of the major providers, clouds and services: OpenAI / Anthropic / DeepSeek
  `sk-...`, Google `AIza...`, `ya29.` and `GOCSPX-`, AWS key ids (`AKIA...`, `ASIA...`) and
  40-character secret keys, Azure `AccountKey=` / `sig=`, GitHub `ghp_` `gho_` `ghu_` `ghs_`
  `ghr_` `github_pat_`, GitLab `glpat-`, Slack `xoxb-` `xoxp-` `xapp-` and webhooks, Stripe
  `sk_live_` `rk_` `pk_` `whsec_`, Hugging Face `hf_`, Groq `gsk_`, Tavily `tvly-`, xAI `xai-`,
  Replicate `r8_`, npm `npm_`, PyPI `pypi-`, SendGrid `SG.`, Mailgun `key-`, Twilio `SK...`,
  Shopify `shpat_`, Square `sq0atp-`, Telegram bot tokens, JSON web tokens;
- payment card numbers: Luhn-valid 13-19 digits of a known card range, written in groups
  (`4111 1111 1111 1111`, `4111-1111-1111-1111`) or, next to a word such as "card" or "visa",
  in any spacing; and card security codes ("cvv 123");
- national ID numbers: US social security numbers (`123-45-6789`), UK National Insurance
  numbers (`QQ 12 34 56 C`), and numbers labelled as a passport, driving licence, SSN, SIN or
  national or tax ID.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"
CARD = "[redacted card number]"
ID_NUMBER = "[redacted ID number]"

SECRET_ENV_RE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|AUTH)", re.IGNORECASE)
ALWAYS_SECRET = ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY",
                 "TREADWISE_AUTH")
_secret_names: tuple[int, tuple[str, ...]] = (-1, ())

# Words that follow "password is" without being a password ("my password is not working").
NOT_A_VALUE = frozenset(
    "the a an not no too wrong correct incorrect right same different what my your our this "
    "that it expired invalid lost forgotten reset locked blocked changed still also and or but "
    "in on at for of to be being been required needed missing empty weak strong new old long "
    "short case sensitive stored saved here there please used valid sent shown needed "
    "working".split())

_VALUE = r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|(?!\[redacted)[^\s\"',;]{1,200})"
_SECRET_WORDS = (r"pass(?:word|phrase|code|wd)|pwd|pw|pin(?:\s+(?:code|number))?"
                 r"|api[ _-]?key|secret(?:[ _-]?(?:access[ _-]?)?key)?|client[ _-]?secret"
                 r"|access[ _-]?(?:key|token)|auth(?:entication|orization)?[ _-]?token"
                 r"|refresh[ _-]?token|bearer[ _-]?token|private[ _-]?key|token")
LABELLED_RE = re.compile(
    rf"(?P<label>(?<![A-Za-z0-9])(?:{_SECRET_WORDS})\b[\"']?(?:\s+(?:for|to|of|on|at)\s+(?:my\s+|the\s+|our\s+)?"
    rf"[\w.@'-]{{1,40}}){{0,2}}\s*(?:\b(?:is|was|would\s+be|set\s+to|equals)\b\s*[:=]?|[:=]|->)"
    rf"\s*){_VALUE}", re.IGNORECASE)
BEARER_RE = re.compile(r"(?P<label>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{16,})")
URL_PASSWORD_RE = re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^:/@\s]*:)[^@\s/]+(@)", re.IGNORECASE)
PRIVATE_KEY_RE = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?"
                            r"(?:-----END [A-Z ]*PRIVATE KEY-----|$)")
# Each key shape with the literal text it always holds, so the pattern only runs on text that
# may contain it (this runs on every reply and stored row; one big alternation was 7x slower).
KEY_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern], ...] = tuple(
    (hints, re.compile(pattern)) for hints, pattern in (
        (("sk-",), r"\bsk-[A-Za-z0-9_\-]{8,}"), (("AIza",), r"\bAIza[0-9A-Za-z_\-]{20,}"),
        (("ya29.",), r"\bya29\.[0-9A-Za-z_\-]{20,}"),
        (("GOCSPX-",), r"\bGOCSPX-[A-Za-z0-9_\-]{16,}"),
        (("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"),
         r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"),
        (("Key=", "sig="), r"\b(?:AccountKey|SharedAccessKey|sig)=[A-Za-z0-9%+/=]{20,}"),
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         r"\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}"),
        (("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{20,}"),
        (("xox", "xapp-", "hooks.slack.com"), r"\bxox[abposr]-[A-Za-z0-9-]{10,}"
         r"|\bxapp-\d-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/]+"),
        (("_live_", "_test_", "whsec_"),
         r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}"),
        (("hf_",), r"\bhf_[A-Za-z0-9]{30,}"), (("gsk_",), r"\bgsk_[A-Za-z0-9]{40,}"),
        (("tvly-",), r"\btvly-[A-Za-z0-9-]{16,}"), (("xai-",), r"\bxai-[A-Za-z0-9]{40,}"),
        (("r8_",), r"\br8_[A-Za-z0-9]{30,}"), (("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
        (("pypi-",), r"\bpypi-[A-Za-z0-9_\-]{50,}"),
        (("SG.",), r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
        (("key-",), r"\bkey-[0-9a-zA-Z]{32}\b"), (("SK",), r"\bSK[0-9a-fA-F]{32}\b"),
        (("shp",), r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
        (("sq0",), r"\bsq0(?:atp|csp)-[0-9A-Za-z\-_]{22,}"),
        ((":AA",), r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b"),
        (("eyJ",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ))
# A cloud secret key (AWS's are 40 characters of base64) anywhere: mixed case and digits.
CLOUD_SECRET_RE = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

CARD_WORDS_RE = re.compile(
    r"\b(?:card|credit|debit|visa|master\s?card|amex|american\s+express|discover|maestro"
    r"|diners|jcb|unionpay|cc|ccn|pan|charge|pay(?:ment)?|billing)\b", re.IGNORECASE)
# 13-19 digits with single spaces or hyphens anywhere between them.
CARD_RE = re.compile(r"(?<![\d.,])\d(?:[ -]?\d){12,18}(?![\d])(?!\.\d)")
GROUPED_CARD_RE = re.compile(r"\d{4}([ -])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?"
                             r"|\d{4}([ -])\d{6}\2\d{4,5}")
CVV_RE = re.compile(
    r"(?P<label>\b(?:cvv2?|cvc2?|csc|cid|security\s+code|card\s+verification(?:\s+(?:code"
    r"|value|number))?)\b\s*(?:(?:is|:|=|#|no\.?|number)\s*)*)(?P<value>\d{3,4})\b",
    re.IGNORECASE)
SSN_RE = re.compile(r"(?<![\d+*/^=.-])(?<!\d[ ])\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}"
                    r"\b(?!-?\d|\s*[-+*/^=]\s*\d)")
NINO_RE = re.compile(r"\b(?![DFIQUV])[A-CEGHJ-PR-TW-Z](?![DFIQUVO])[A-CEGHJ-NPR-TW-Z]"
                     r" ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
ID_LABEL_RE = re.compile(
    r"(?P<label>\b(?:passport|driv(?:er'?s?|ing)\s+licen[cs]e|national\s+(?:id(?:entity)?"
    r"|insurance)|tax\s+id|ssn|social\s+security|social\s+insurance|sin|nino|ni)"
    r"(?:\s+(?:card\s+)?(?:number|no\.?|#))?\s*(?:is|:|=|#)?\s*)"
    r"(?P<value>[A-Z0-9]{2,}(?:[ -]\d[A-Z0-9]*)*(?:[ -][A-Z](?![A-Z]))?)",
    re.IGNORECASE)

# Card ranges (issuer prefixes and lengths) of the networks people type: Visa, Mastercard,
# American Express, Discover, Diners Club, JCB, UnionPay, Maestro.
CARD_RANGES = (
    (re.compile(r"4"), (13, 16, 19)), (re.compile(r"5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)"), (16,)),
    (re.compile(r"3[47]"), (15,)), (re.compile(r"6(?:011|5|4[4-9])"), (16, 17, 18, 19)),
    (re.compile(r"3(?:0[0-5]|[68])"), (14, 15, 16, 17, 18, 19)),
    (re.compile(r"35(?:2[89]|[3-8])"), (16, 17, 18, 19)), (re.compile(r"62"), (16, 17, 18, 19)),
    (re.compile(r"5[06-9]|6\d"), (12, 13, 14, 15, 16, 17, 18, 19)),
)


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum every payment card number carries."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = int(char) * (2 if i % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def is_card_number(digits: str) -> bool:
    """13-19 digits of a known card range that pass the Luhn check."""
    return 13 <= len(digits) <= 19 and luhn_valid(digits) and any(
        prefix.match(digits) and len(digits) in lengths for prefix, lengths in CARD_RANGES)


def _cards(text: str) -> str:
    # A long number is a card when it is written like one (in groups of four) or a word
    # about paying is near it; a bare 16-digit result of a calculation stays as it is.
    def card(match: re.Match) -> str:
        digits = re.sub(r"\D", "", match.group(0))
        if not is_card_number(digits):
            return match.group(0)
        near = text[max(0, match.start() - 60):match.end() + 30]
        if GROUPED_CARD_RE.fullmatch(match.group(0)) or CARD_WORDS_RE.search(near):
            return CARD
        return match.group(0)

    return CARD_RE.sub(card, text)


def _labelled(match: re.Match) -> str:
    value = match.group("value")
    if value.strip("\"'").casefold() in NOT_A_VALUE or value.startswith("["):
        return match.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match.group('label')}{quote}{REDACTED}{quote}"


def _cloud_secret(match: re.Match) -> str:
    value = match.group(0)
    mixed = (re.search(r"[a-z]", value) and re.search(r"[A-Z]", value)
             and re.search(r"\d", value))
    # A path such as a/b/c/d is not a key: keys have few slashes, and none first.
    return REDACTED if mixed and value.count("/") <= 3 and value[0] != "/" else value


def _id_label(match: re.Match) -> str:
    value = match.group("value")
    if sum(char.isdigit() for char in value) < 5:
        return match.group(0)
    return match.group("label") + ID_NUMBER


@dataclass(frozen=True)
class Shape:
    """One kind of secret: its name, a made-up example of it, and how it is removed."""

    name: str
    example: str
    remove: Callable[[str], str]


def _sub(pattern: re.Pattern, replacement: str | Callable[[re.Match], str],
         hints: tuple[str, ...] = (), *, fold: bool = False) -> Callable[[str], str]:
    """The pattern's substitution, skipped when the text holds none of the `hints` (compared
    case-insensitively with `fold`)."""
    def remove(text: str) -> str:
        seen = text.casefold() if fold else text
        if hints and not any(hint in seen for hint in hints):
            return text
        return pattern.sub(replacement, text)

    return remove


def _keys(text: str) -> str:
    for hints, pattern in KEY_SHAPES:
        if any(hint in text for hint in hints):
            text = pattern.sub(REDACTED, text)
    return text


SHAPES: tuple[Shape, ...] = (
    Shape("private key block", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE "
          "KEY-----", _sub(PRIVATE_KEY_RE, REDACTED)),
    Shape("password in a URL", "postgresql://tw:Sup3rS3cret@db.internal/tw",
          _sub(URL_PASSWORD_RE, r"\1" + REDACTED + r"\2", ("://",))),
    Shape("password or secret in words", "my password is Hunter2!Secret99",
          _sub(LABELLED_RE, _labelled, ("pass", "pw", "pin", "key", "secret", "token"),
               fold=True)),
    Shape("bearer token", "Authorization: Bearer abcDEF0123456789ghiJKL",
          _sub(BEARER_RE, r"\g<label>" + REDACTED, ("Bearer",))),
    Shape("provider or service key", "ghp_0123456789abcdefghijABCDEFGHIJ0123456789",
          _keys),
    Shape("cloud secret key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
          _sub(CLOUD_SECRET_RE, _cloud_secret)),
    Shape("card security code", "cvv 123",
          _sub(CVV_RE, r"\g<label>" + REDACTED, ("cvv", "cvc", "csc", "cid", "security code",
                                                  "verification"), fold=True)),
    Shape("payment card number", "4111 1111 1111 1111", _cards),
    Shape("US social security number", "123-45-6789", _sub(SSN_RE, ID_NUMBER, ("-",))),
    Shape("UK National Insurance number", "AB 12 34 56 C", _sub(NINO_RE, ID_NUMBER)),
    Shape("labelled ID number", "passport number is X12345678",
          _sub(ID_LABEL_RE, _id_label, ("passport", "licen", "national", "tax id", "ssn",
                                        "social", "sin", "ni"), fold=True)),
)


def _secret_variables() -> tuple[str, ...]:
    """Names of secret-looking variables; rescanned whenever a variable comes or goes (this
    runs on every model reply, and decoding the whole environment each time is not free)."""
    global _secret_names
    size = len(os.environ)
    if _secret_names[0] != size:
        found = {name for name in os.environ if SECRET_ENV_RE.search(name)}
        _secret_names = (size, tuple(sorted(found | set(ALWAYS_SECRET))))
    return _secret_names[1]


def redact(text: str) -> str:
    """The text without any secret the environment holds or any shape in `SHAPES`."""
    for name in _secret_variables():
        value = os.environ.get(name)
        if value and len(value) >= 6 and value in text:
            text = text.replace(value, REDACTED)
    for shape in SHAPES:
        text = shape.remove(text)
    return text


def redact_tree(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(item) for item in value]
    return value
