"""Redaction: the one `redact()` every store, export, transcript, log and reply goes through.

A message is folded (treadwise.privacy.normalise), every detector reads the folds
(treadwise.privacy.detectors: cards, IBANs, national IDs; .keys: provider and private keys,
random tokens; .passwords: passwords in words and pairs, PINs, CVVs, labelled IDs), and what
they find is replaced in the original text at the matching place, through the folds' offset
maps. The values of secret environment variables go too. `SHAPES` lists a made-up example of
each kind that the tests redact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from treadwise.privacy import keys, passwords  # noqa: F401 - they register their detectors
from treadwise.privacy.detectors import CARD, DETECTORS, ID, Finding, Texts, is_card_number
from treadwise.settings import process_environment

__all__ = ["CARD_NUMBER", "ID_NUMBER", "REDACTED", "SHAPES", "Redactions", "findings",
           "is_card_number", "redact", "redact_tree"]

REDACTED = "[redacted]"
CARD_NUMBER = "[redacted card number]"
ID_NUMBER = "[redacted ID number]"
PLACEHOLDERS = {CARD: CARD_NUMBER, ID: ID_NUMBER}

SECRET_ENV_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH")
ALWAYS_SECRET = ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY",
                 "TREADWISE_AUTH")
_secret_names: tuple[int, tuple[str, ...]] = (-1, ())


@dataclass(frozen=True)
class Shape:
    """One kind of secret and a made-up example of it."""

    name: str
    example: str


SHAPES: tuple[Shape, ...] = (
    Shape("private key block", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE "
          "KEY-----"),
    Shape("PGP private key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END "
          "PGP PRIVATE KEY BLOCK-----"),
    Shape("password in a URL", "postgresql://tw:Sup3rS3cret@db.internal/tw"),
    Shape("password in words", "my password is Hunter2!Secret99"),
    Shape("password before its label", "hunter2 is my password"),
    Shape("password in another language", "Passwort: geheim123"),
    Shape("credential pair", "creds are ana:hunter2!"),
    Shape("PIN", "pin 4921"),
    Shape("basic authorization", "Authorization: Basic YW5hOmh1bnRlcjI="),
    Shape("bearer token", "Authorization: Bearer abcDEF0123456789ghiJKL"),
    Shape("provider key", "ghp_0123456789abcdefghijABCDEFGHIJ0123456789"),
    Shape("Slack client token", "xoxc-1234567890-abcdefABCDEF123456"),
    Shape("random token", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    Shape("card security code", "cvv 123"),
    Shape("payment card number", "4111 1111 1111 1111"),
    Shape("IBAN", "GB82 WEST 1234 5698 7654 32"),
    Shape("US social security number", "123-45-6789"),
    Shape("UK National Insurance number", "ab123456c"),
    Shape("labelled ID number", "passport number is X12345678"),
)


def _secret_variables() -> tuple[str, ...]:
    """Names of secret-looking variables; rescanned whenever a variable comes or goes (this
    runs on every model reply, and decoding the whole environment each time is not free)."""
    global _secret_names
    environment = process_environment()
    size = len(environment)
    if _secret_names[0] != size:
        found = {name for name in environment
                 if any(word in name.upper() for word in SECRET_ENV_WORDS)}
        _secret_names = (size, tuple(sorted(found | set(ALWAYS_SECRET))))
    return _secret_names[1]


def _secret_values() -> tuple[str, ...]:
    """The values of the secret variables set now, long enough to be worth looking for."""
    environment = process_environment()
    found = (environment.get(name) for name in _secret_variables())
    return tuple(value for value in found if value and len(value) >= 6)


def findings(text: str, *, follows: str | None = None) -> list[Finding]:
    """Every secret in `text`, merged where they overlap, in order. `follows` is the
    customer's previous message, when known (a password sent right after a login)."""
    texts = Texts(text, follows)
    found = sorted({f for detect in DETECTORS for f in detect(texts) if f.end > f.start},
                   key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for finding in found:
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            kind = last.kind if last.kind != "secret" else finding.kind
            merged[-1] = Finding(last.start, max(last.end, finding.end), kind)
        else:
            merged.append(finding)
    return merged


def _remove(text: str, found: list[Finding]) -> str:
    parts, last = [], 0
    for finding in found:
        parts += [text[last:finding.start], PLACEHOLDERS.get(finding.kind, REDACTED)]
        last = finding.end
    return "".join([*parts, text[last:]])


# Detection depends on the text alone (and the message before it), and a sweep's records
# repeat most of their texts: short texts found clean are remembered, so the next sight of one
# is a set lookup. Only clean texts are kept; a text with a secret never is.
_CLEAN: set[str] = set()
CLEAN_TEXT_CHARS, CLEAN_TEXTS = 2000, 8192


def _redact(text: str, secrets: tuple[str, ...], follows: str | None) -> str:
    for value in secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    if follows is None and text in _CLEAN:
        return text
    found = findings(text, follows=follows)
    if not found:
        if follows is None and len(text) <= CLEAN_TEXT_CHARS:
            if len(_CLEAN) >= CLEAN_TEXTS:
                _CLEAN.clear()
            _CLEAN.add(text)
        return text
    return _remove(text, found)


def redact(text: str, *, follows: str | None = None) -> str:
    """The text without any secret the environment holds or any detector finds. `follows` is
    the customer's previous message in the conversation, when the caller knows it."""
    return _redact(text, _secret_values(), follows)


class Redactions:
    """One conversation's texts and their redactions, kept with the conversation.

    An export is redacted again each time it is written, after every turn; with the parts that
    did not change remembered, only the new turn is read, not the whole conversation (about
    2.5 ms a turn of history here, measured). `redact_all` keeps only the texts it was given
    last (what an undone turn said is dropped at the next export); `clear` forgets everything,
    as erasing the conversation must. Kept per conversation, never process-wide, because these
    texts may hold the secrets they were redacted of.
    """

    def __init__(self) -> None:
        # The secret environment values the redactions were made under (the same strings the
        # environment holds).
        self._secrets: tuple[str, ...] = ()
        self._done: dict[str, str] = {}

    def redact_all(self, texts: list[str]) -> list[str]:
        """Each text redacted as redact(text) would."""
        secrets = _secret_values()
        known = self._done if secrets == self._secrets else {}
        done = {text: known[text] if text in known else _redact(text, secrets, None)
                for text in texts}
        self._secrets, self._done = secrets, done
        return [done[text] for text in texts]

    def clear(self) -> None:
        self._done = {}

    def __len__(self) -> int:
        """How many texts are kept."""
        return len(self._done)


def redact_tree(value: Any, *, with_keys: bool = False) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string redacted, and with
    `with_keys` the dicts' keys too. The environment's secrets are read once for the whole tree:
    read per string, they were a tenth of a chat turn's CPU in a long conversation's export."""
    return _redact_tree(value, _secret_values(), with_keys)


def _redact_tree(value: Any, secrets: tuple[str, ...], with_keys: bool = False) -> Any:
    if isinstance(value, str):
        return _redact(value, secrets, None)
    if isinstance(value, dict):
        return {_redact(key, secrets, None) if with_keys and isinstance(key, str) else key:
                _redact_tree(item, secrets, with_keys) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_tree(item, secrets, with_keys) for item in value]
    return value
