"""Detectors of what people type as secrets in words: passwords, PINs, pairs, labelled IDs.

They read the word fold (look-alike letters mapped to Latin, invisible characters gone), so
"pаss\u200bword: x" is a password label. Phrasings, in the languages the product serves
(English, Spanish, French, German, Portuguese, Italian): "my password is X", "the password I use
is X", "password - X", "passwd X", "Passwort: X", "contraseña: X", "mot de passe: X", "X is my
password", "the PIN is 4921" or "pin 4921"; a credential pair ("creds are ana:hunter2!",
"login: ana / hunter2!"); and a lone word sent right after a message that named a login
("login ana", then "hunter2!"). Card security codes and ID numbers after their label too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from treadwise.privacy.detectors import ID, SECRET, Finding, Texts, detector

# Words that follow "password is" without being a password ("my password is not working").
NOT_A_VALUE = frozenset(
    "the a an not no too wrong correct incorrect right same different what my your our this "
    "that it expired invalid lost forgotten reset locked blocked changed still also and or but "
    "in on at for of to be being been required needed missing empty weak strong new old long "
    "short case sensitive stored saved here there please used valid sent shown working "
    "manager managers change changes recovery protected safe secure one mine yours which "
    "where when how why who is was will would should could can cannot can't isn't doesn't "
    "won't didn't don't hint hints field box page link email e-mail reset? expired? "
    "redacted i we you they he she".split())
LABELS = (r"pass(?:word|phrase|code|wd)s?|pwd|passwort|kennwort|contrase[nñ]a|clave|mot de "
          r"passe|mdp|senha|palavra-passe|wachtwoord|parola d'ordine|api[ _-]?key|secret(?:[ _-]?"
          r"(?:access[ _-]?)?key)?|client[ _-]?secret|access[ _-]?(?:key|token)|auth(?:entication"
          r"|orization)?[ _-]?token|refresh[ _-]?token|bearer[ _-]?token|private[ _-]?key|token")
# Labels strong enough to need no "is" or ":" before their value ("passwd hunter2!").
BARE_LABELS = (r"pass(?:word|wd)s?|pwd|passwort|kennwort|contrase[nñ]a|mot de passe|senha"
               r"|wachtwoord")
CONNECTOR = (r"(?:\b(?:is|was|would be|set to|equals|es|est|ist|lautet|è|é|era|sera)\b\s*[:=]?"
             r"|[:=]|->|\u2192|\s[-\u2013\u2014]\s?)")
_VALUE = r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|(?!\[redacted)[^\s\"',;]{1,200})"
FILLER = r"(?:\s+(?!(?:is|was|and|but|or|es|est|ist)\b)[\w'@.-]{1,30}){0,4}?"
# "pass" is a password only after "my", "our", "the" or "your" ("which pass is quickest" is not).
OWNED_PASS = r"(?:(?<=my )|(?<=our )|(?<=the )|(?<=your ))pass"
# "for my gmail", "to the portal": what a key or token is for, before its value.
QUALIFIER = r"(?:\s+(?:for|to|of|on|at)\s+(?:my\s+|the\s+|our\s+)?[\w.@'-]{1,40}){0,2}"
LABELLED_RE = re.compile(
    rf"(?<![\w-])(?P<label>(?:{BARE_LABELS}|pw|{OWNED_PASS})\b[\"']?{FILLER}"
    rf"|(?:{LABELS})\b[\"']?"
    rf"{QUALIFIER})\s*{CONNECTOR}\s*{_VALUE}")
BARE_RE = re.compile(rf"(?<![\w-])(?:{BARE_LABELS})\s+{_VALUE}")
PIN_RE = re.compile(r"(?<![\w-])(?:pin(?:\s+(?:code|number))?|passcode)\b(?:\s*(?:is|was|:|=|"
                    r"#|-))?\s*(?P<value>\d{4,8})(?!\d)")
REVERSED_RE = re.compile(
    rf"(?<![\w-])(?P<value>[^\s\"',;:]{{2,200}})\s+(?:is|was|es|est|ist|è|é)\s+(?:my|our|the"
    rf"|mi|mon|ma|mein|meine|il mio|la mia|o meu|a minha)\s+(?:\w+\s+)?(?:{LABELS})\b")
PAIR_RE = re.compile(
    r"(?<![\w-])(?:creds?|credentials|login|log-?in|sign-?in|user(?:name)?\s*(?:and|&|/)\s*"
    r"pass(?:word)?|u/p)\b\s*(?:are|is|:|=|-)?\s*(?P<user>[^\s:/\"']{1,64})\s*(?::|/)\s*"
    r"(?P<value>(?!/)[^\s\"']{1,200})")
LOGIN_RE = re.compile(r"(?<![\w-])(?:login|log-?in|sign-?in|user(?:name)?|user name|account"
                      r"|usuario|utilisateur|benutzer(?:name)?|identifiant)\b")
CVV_RE = re.compile(
    r"(?<![\w-])(?:cvv2?|cvc2?|csc|cid|security\s+code|card\s+verification(?:\s+(?:code"
    r"|value|number))?)\b\s*(?:(?:is|:|=|#|no\.?|number)\s*)*(?P<value>\d{3,4})\b")
ID_LABEL_RE = re.compile(
    r"(?<![\w-])(?:passport|driv(?:er'?s?|ing)\s+licen[cs]e|national\s+(?:id(?:entity)?"
    r"|insurance)|tax\s+id|ssn|social\s+security|social\s+insurance|sin|nino|ni|dni|nie"
    r"|id(?:entity)?\s+(?:card|number|no\.?)"
    r"|cpf|nif|bsn|codice\s+fiscale|steuer-?id|personalausweis|n[uú]mero\s+de\s+seguridad"
    r"\s+social|num[eé]ro\s+de\s+s[eé]curit[eé]\s+sociale)"
    r"(?:\s+(?:card\s+)?(?:number|no\.?|#))?\s*(?:is|:|=|#|es|est|ist)?\s*"
    r"(?P<value>[a-z0-9]{2,}(?:[ .-]\d[a-z0-9]*)*(?:[ -][a-z](?![a-z]))?)")
SMALL_WORDS = frozenset(
    "ok okay yes no yep nope sure thanks thank you hi hello hey bye cool great fine please "
    "help what why how when where who done good nice right wait sorry stop cancel".split())


def _value(texts: Texts, match: re.Match, kind: str = SECRET) -> Finding | None:
    start, end = match.span("value")
    value = match.group("value")
    if value[:1] in "\"'":
        start, end, value = start + 1, end - 1, value[1:-1]
    bare = value.rstrip(".!?")
    if not re.search(r"\w", bare) or bare.casefold() in NOT_A_VALUE or bare.startswith("["):
        return None
    if value.endswith(".") and kind == SECRET and re.fullmatch(r"[\w-]+\.", value):
        end -= 1  # "my password is hunter2." ends a sentence
    return texts.found(texts.words, start, end, kind)


def _looks_secret(value: str) -> bool:
    """A reversed "X is my password" takes X only when it is not an everyday word."""
    return bool(re.search(r"[^a-z]", value)) or (value not in SMALL_WORDS and len(value) >= 4)


@detector
def passwords(texts: Texts) -> Iterator[Finding]:
    """Passwords, secrets and PINs after their label, before "is my password", in pairs."""
    text = texts.words.text
    if not re.search(r"pass|pw|pin|key|secret|token|kennwort|contrase|clave|mdp|senha|cred|log"
                     r"|sign|user|u/p|wacht|parola", text):
        return
    for pattern in (LABELLED_RE, BARE_RE, PIN_RE, PAIR_RE):
        for match in pattern.finditer(text):
            if pattern is BARE_RE and not re.search(r"[^a-zäöüßñçéèàáíóú]",
                                                    match.group("value")):
                continue  # "password reset": a bare label needs a value that is not a word
            if found := _value(texts, match):
                yield found
    for match in REVERSED_RE.finditer(text):
        if _looks_secret(match.group("value")) and (found := _value(texts, match)):
            yield found


@detector
def after_login(texts: Texts) -> Iterator[Finding]:
    """A lone word sent right after a message that named a login but gave no password."""
    if not texts.follows or not LOGIN_RE.search(texts.follows.casefold()):
        return
    if LABELLED_RE.search(texts.follows.casefold()) or PAIR_RE.search(texts.follows.casefold()):
        return
    fold = texts.words
    token = fold.text.strip()
    if (re.search(r"\s", token) or not 4 <= len(token) <= 64 or "@" in token
            or token.rstrip(".!?") in SMALL_WORDS | NOT_A_VALUE or token.startswith("[")):
        return
    start = fold.text.index(token)
    yield texts.found(fold, start, start + len(token), SECRET)


@detector
def labelled_numbers(texts: Texts) -> Iterator[Finding]:
    """Card security codes and ID numbers after their label ("cvv 123", "passport X1234567")."""
    text = texts.words.text
    for match in CVV_RE.finditer(text):
        if found := _value(texts, match):
            yield found
    for match in ID_LABEL_RE.finditer(text):
        if sum(c.isdigit() for c in match.group("value")) >= 5:
            yield texts.found(texts.words, *match.span("value"), ID)
